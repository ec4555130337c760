import type { CommonQueryMethods } from 'slonik';
import type { RequestContext } from '../context.js';
import { notFound } from '../errors/app-error.js';
import { type PipelineRow, pipelinesStore } from '../store/pipelines-store.js';

/** The pipeline of that name in the request's project; 404 NOT_FOUND when there is none. */
export async function requirePipeline(
  db: CommonQueryMethods,
  ctx: RequestContext,
  name: string,
): Promise<PipelineRow> {
  const row = await pipelinesStore.find(db, ctx.projectId, name);
  if (!row) throw notFound('pipeline', name);
  return row;
}
