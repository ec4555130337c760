/**
 * The shapes the dashboard reads from the API. Where the service exports its response schema,
 * the type is derived from it (type-only imports: nothing of the server enters the bundle), so a
 * change of the API shows up here as a type error. The others mirror the route that answers them.
 */
import type { Static } from 'typebox';
import type {
  Connection as ConnectionSchema,
  ConnectionTestResult as ConnectionTestResultSchema,
  SourceTableView as SourceTableSchema,
} from '../../../src/http/schemas/connections.js';
import type { Health as HealthSchema } from '../../../src/http/schemas/health.js';
import type {
  PipelineMetrics as PipelineMetricsSchema,
  RunHistory as RunHistorySchema,
  SnapshotProgress as SnapshotProgressSchema,
} from '../../../src/http/schemas/pipeline-status.js';
import type {
  PipelineReplaceBody as PipelineReplaceBodySchema,
  Pipeline as PipelineSchema,
  PipelineSummary as PipelineSummarySchema,
} from '../../../src/http/schemas/pipelines.js';
import type { SchemaProposalView as SchemaProposalSchema } from '../../../src/http/schemas/schema-review.js';
import type { Verification as VerificationSchema } from '../../../src/http/schemas/verifications.js';

export type PipelineSummary = Static<typeof PipelineSummarySchema>;
export type Pipeline = Static<typeof PipelineSchema>;
export type PipelineMetrics = Static<typeof PipelineMetricsSchema>;
export type SnapshotProgress = Static<typeof SnapshotProgressSchema>;
export type TableProgress = SnapshotProgress['tables'][number];
export type RunHistory = Static<typeof RunHistorySchema>;
export type Run = RunHistory['runs'][number];
export type SchemaProposal = Static<typeof SchemaProposalSchema>;
export type ProposalColumn = SchemaProposal['current_columns'][number];
export type Connection = Static<typeof ConnectionSchema>;
/** POST /v1/connections/test and /v1/connections/{name}/test. */
export type ConnectionTestResult = Static<typeof ConnectionTestResultSchema>;
export type Verification = Static<typeof VerificationSchema>;
export type TableVerdict = Verification['tables'][number];
export type Health = Static<typeof HealthSchema>;
/** GET /v1/connections/{name}/tables: one table of a source connection. */
export type SourceTable = Static<typeof SourceTableSchema>;

/** GET /v1/workers (src/http/routes/workers.ts). */
export interface Worker {
  id: string;
  hostname: string;
  pid: number;
  version: string;
  started_at: string;
  last_heartbeat_at: string;
  status: string;
  pipelines: string[];
}

/** GET /v1/auth/session (SessionInfo in src/http/schemas/auth.ts). */
export interface SessionInfo {
  user: { id: string; email: string; display_name: string };
  via: 'session' | 'token';
  project: { id: string; name: string };
  role: string | null;
  organization_admin: boolean;
  projects: { id: string; name: string; role: string }[];
}

/** POST /v1/pipelines. */
export interface PipelineCreateBody {
  name: string;
  source: { connection: string; tables: string[]; publication?: string };
  sink: { connection: string; properties?: Record<string, string> };
  snapshot?: { parallelism?: number; partition_rows?: number };
  schema_policy?: 'review' | 'auto' | 'ignore';
}

/** PUT /v1/pipelines/{name}: the whole definition, which replaces the stored one. */
export type PipelineReplaceBody = Static<typeof PipelineReplaceBodySchema>;

/** POST /v1/connections and PUT /v1/connections/{name}. */
export interface ConnectionBody {
  name?: string;
  type: string;
  dsn: string;
  tls?: { ca_cert?: string; client_cert?: string; client_key?: string };
}
