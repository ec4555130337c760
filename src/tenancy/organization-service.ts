import { type DatabasePool, sql, UniqueIntegrityConstraintViolationError } from 'slonik';
import { z } from 'zod';
import { AppError } from '../errors/app-error.js';
import { DEFAULT_ORGANIZATION_ID } from '../store/pool.js';

const OrganizationRow = z.object({ id: z.string(), name: z.string(), created_at: z.string() });

/** The one organization the service holds: everything else lives inside it. */
export class OrganizationService {
  constructor(private readonly pool: DatabasePool) {}

  get() {
    return this.pool.one(sql.type(OrganizationRow)`
      SELECT id, name, created_at FROM organizations WHERE id = ${DEFAULT_ORGANIZATION_ID}`);
  }

  async rename(name: string) {
    try {
      return await this.pool.one(sql.type(OrganizationRow)`
        UPDATE organizations SET name = ${name} WHERE id = ${DEFAULT_ORGANIZATION_ID}
        RETURNING id, name, created_at`);
    } catch (error) {
      if (error instanceof UniqueIntegrityConstraintViolationError) {
        throw new AppError('ALREADY_EXISTS', `organization '${name}' already exists`);
      }
      throw error;
    }
  }
}
