import { AsyncLocalStorage } from 'node:async_hooks';

/** A run of one pipeline's data plane, as an error that escaped it can be charged to it. */
export interface AttributedRun {
  pipeline: string;
  /** Ends the run with `error`, as if its work had thrown it; nothing once the run is over. */
  fail(error: unknown): void;
}

// Sockets, timers and emitters created inside a run carry it in their async context, so an error
// they emit with no listener (which reaches the process, not the run) still says whose it is.
// Its price on Node 20: once entered anywhere, every promise of the process pays the async hooks
// that carry the context (not only those of the run), and the context must cross the awaits before
// a pool opens a connection. Node's AsyncContextFrame (the default from Node 24) makes it cheap.
const runs = new AsyncLocalStorage<AttributedRun>();

/** Runs `work` (a pipeline's `prepare` or `replicate`) as `run`. */
export const runAttributed = <T>(run: AttributedRun, work: () => T): T => runs.run(run, work);

/** The run the current async context belongs to, if any. */
export const attributedRun = (): AttributedRun | undefined => runs.getStore();
