import { join, relative, sep } from 'node:path';
import { DEFAULT_PROJECT_ID } from '../../store/pool.js';

/**
 * Where each project's DuckDB files live, so that one project cannot reach another's: a project
 * has its own subdirectory, named by its id, of `<data dir>/duckdb/` and of each directory of
 * `connections.duckdb_dirs`. The default project keeps the directories themselves, where its
 * files were before projects had their own, less the subdirectories named like a project id.
 */

const PROJECT_ID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The project's directory under a base directory (`<base>/<project id>`, the base itself for the default project). */
export function projectDir(base: string, projectId: string | undefined): string {
  return projectId === undefined || projectId === DEFAULT_PROJECT_ID ? base : join(base, projectId);
}

/**
 * Whether a path inside a project's directory lies in another project's: only the default
 * project's directory holds others' (its subdirectories named like a project id).
 */
export function inAnotherProject(
  projectDirectory: string,
  path: string,
  projectId: string | undefined,
): boolean {
  if (projectId !== undefined && projectId !== DEFAULT_PROJECT_ID) return false;
  const first = relative(projectDirectory, path).split(sep)[0] ?? '';
  return PROJECT_ID_SHAPE.test(first);
}
