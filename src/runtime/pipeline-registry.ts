import type { PipelineHandle, PipelineReading } from './pipeline-handle.js';

/** The pipelines this process runs, for those that look them up but neither add nor remove one. */
export interface PipelinesView<T extends PipelineReading = PipelineReading> {
  get(pipelineId: string): T | undefined;
  has(pipelineId: string): boolean;
  /** Whether `handle` is still the one this process runs its pipeline with. */
  holds(handle: PipelineReading): boolean;
  values(): IterableIterator<T>;
  /** The ids of the pipelines, in the order they were taken on. */
  ids(): string[];
  readonly size: number;
}

/**
 * The pipelines this process runs, by id. A pipeline is in it from the moment its actor is
 * spawned until it stops, is dropped or forgotten; whatever acts on a pipeline looks it up here.
 * It is written by the one part that spawns and lets go of actors; every other part reads it.
 */
export class PipelineRegistry implements PipelinesView<PipelineHandle> {
  private readonly handles = new Map<string, PipelineHandle>();

  /** Takes on a pipeline; there is at most one handle a pipeline (two would run two data planes on one slot). */
  add(handle: PipelineHandle): void {
    if (this.handles.has(handle.id)) throw new Error(`pipeline ${handle.id} is run here already`);
    this.handles.set(handle.id, handle);
  }

  /** Lets go of `handle`; a handle that was replaced since is left alone. False when it was not held. */
  remove(handle: PipelineReading): boolean {
    if (!this.holds(handle)) return false;
    return this.handles.delete(handle.id);
  }

  /** Lets go of every pipeline (the process stops). */
  clear(): void {
    this.handles.clear();
  }

  get(pipelineId: string): PipelineHandle | undefined {
    return this.handles.get(pipelineId);
  }

  has(pipelineId: string): boolean {
    return this.handles.has(pipelineId);
  }

  holds(handle: PipelineReading): boolean {
    return this.handles.get(handle.id) === handle;
  }

  values(): IterableIterator<PipelineHandle> {
    return this.handles.values();
  }

  ids(): string[] {
    return [...this.handles.keys()];
  }

  get size(): number {
    return this.handles.size;
  }
}
