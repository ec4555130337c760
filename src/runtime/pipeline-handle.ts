import type { Actor } from 'xstate';
import type { PipelineState, pipelineMachine } from '../../machines/pipeline.js';
import type { PipelineStats } from './pipeline-stats.js';
import type { RunControl } from './replication-runner.js';

/** One pipeline this process runs: its actor, its data-plane loop and its live figures. */
export interface PipelineHandle {
  id: string;
  name: string;
  projectId: string;
  actor: Actor<typeof pipelineMachine>;
  stats: PipelineStats;
  /** The current (or last) data-plane loop; a new one starts only after it settled. */
  loop: Promise<void>;
  runId: string | null;
  state: PipelineState;
  error: string | null;
  /** Reaches into the running data plane (and carries the lease's fencing epoch). */
  control: RunControl;
  /** The definition generation the data plane runs with. */
  generation: number;
  /** Store writes of this pipeline, in order. */
  writes: Promise<unknown>;
}

/**
 * The pipelines this process runs, by id. A pipeline is in it from the moment its actor is
 * spawned until it stops, is dropped or forgotten; whatever acts on a pipeline looks it up here.
 */
export type PipelineHandles = Map<string, PipelineHandle>;
