import { pipelineMachine } from '../../machines/pipeline.js';
import { PipelineHandle } from '../../src/runtime/pipeline-handle.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';

/** A pipeline handle never started, in project `proj`: for what only keeps or reads handles. */
export const idleHandle = (id: string, name = `pipeline ${id}`, stats = new PipelineStats()) =>
  new PipelineHandle({
    id,
    name,
    projectId: 'proj',
    stats,
    resumeAs: 'stopped',
    error: null,
    generation: 1,
    epoch: 1,
    machine: () => pipelineMachine,
    changed: () => undefined,
  });
