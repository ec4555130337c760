import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import { isRecordId } from '../store/record-id.js';
import { projectsStore } from './projects-store.js';

const Holder = z.object({ id: z.string(), name: z.string() });

/** The projects holding a pipeline or connection of this name, by project name. */
export function projectsHolding(db: CommonQueryMethods, kind: 'pipeline' | 'connection', name: string) {
  const table = sql.identifier([kind === 'pipeline' ? 'pipelines' : 'connections']);
  return db.any(sql.type(Holder)`SELECT p.id, p.name FROM ${table} r JOIN projects p ON p.id = r.project_id
    WHERE r.name = ${name} ORDER BY p.name`);
}

/** A project named by its name or its id; undefined when none is. */
export async function projectNamed(db: CommonQueryMethods, nameOrId: string): Promise<string | undefined> {
  const row = isRecordId(nameOrId)
    ? await projectsStore.find(db, nameOrId.toLowerCase())
    : await projectsStore.findByName(db, nameOrId);
  return row?.id;
}
