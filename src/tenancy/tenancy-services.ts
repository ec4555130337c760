import type { DatabasePool } from 'slonik';
import { OrganizationService } from './organization-service.js';
import { ProjectsService } from './projects-service.js';
import { RoleBindingsService } from './role-bindings-service.js';
import { type SessionEnder, UsersService } from './users-service.js';
import { WorkspacesService } from './workspaces-service.js';

/** The services behind the tenancy management API (organization admins). */
export interface TenancyServices {
  organization: OrganizationService;
  users: UsersService;
  workspaces: WorkspacesService;
  projects: ProjectsService;
  roleBindings: RoleBindingsService;
}

/** `sessions` ends a user's sessions when it is disabled or deleted or its password changes. */
export function createTenancyServices(pool: DatabasePool, sessions: SessionEnder): TenancyServices {
  return {
    organization: new OrganizationService(pool),
    users: new UsersService(pool, sessions),
    workspaces: new WorkspacesService(pool),
    projects: new ProjectsService(pool),
    roleBindings: new RoleBindingsService(pool),
  };
}
