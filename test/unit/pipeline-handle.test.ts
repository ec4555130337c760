import { describe, expect, it } from 'vitest';
import { fromCallback, fromPromise } from 'xstate';
import { type PipelineEvent, type PipelineState, pipelineMachine } from '../../machines/pipeline.js';
import type { Logger } from '../../src/log/logger.js';
import { PipelineHandle } from '../../src/runtime/pipeline-handle.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';

const silent = { warn: () => undefined } as unknown as Logger;

/** Resolves once `condition` holds, checking after each turn of the event loop. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

/** A promise and the way to settle it. */
function gate<T = void>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * A handle whose data plane is a loop run through the handle, ending when the test says: each
 * start of `replicate` takes the next gate of `runs`.
 */
function handleWith(resumeAs: 'stopped' | 'running' | 'paused' | 'failed' = 'stopped') {
  const changes: [PipelineState, PipelineState, string | null][] = [];
  const runs: ReturnType<typeof gate<'held-for-schema' | undefined>>[] = [];
  const handle: PipelineHandle = new PipelineHandle({
    id: 'p1',
    name: 'orders',
    projectId: 'proj',
    stats: new PipelineStats({ control: () => handle.machineFigures() }),
    resumeAs,
    error: null,
    generation: 3,
    epoch: 7,
    changed: (_h, previous, state, error) => changes.push([previous, state, error]),
    machine: (h) =>
      pipelineMachine.provide({
        actors: {
          prepare: fromPromise<void, { pipelineId: string }>(async () => {}),
          replicate: fromCallback(({ sendBack }) => {
            const run = gate<'held-for-schema' | undefined>();
            runs.push(run);
            const report = (event: PipelineEvent) => sendBack(event);
            h.runAfterLoop(
              () => run.promise,
              (outcome) =>
                report(
                  outcome === 'held-for-schema'
                    ? { type: 'SCHEMA_CHANGE' }
                    : { type: 'FAILED', message: 'ended', retryable: false },
                ),
              (error) => report({ type: 'FAILED', message: String(error), retryable: false }),
            );
          }),
          drain: fromPromise(() => h.awaitStop(silent)),
        },
        delays: { backoff: 1 },
      }),
  });
  return { handle, changes, runs };
}

describe('a pipeline handle', () => {
  it('is built whole, actor included, and tells nothing before it starts', () => {
    const { handle, changes, runs } = handleWith('running');
    expect(handle).toMatchObject({ id: 'p1', name: 'orders', projectId: 'proj', generation: 3 });
    expect(handle.control.epoch).toBe(7);
    expect(handle.state).toBe('stopped');
    expect(handle.runId).toBeNull();
    expect(changes).toEqual([]);
    expect(runs).toHaveLength(0);
  });

  it('tells a pipeline restored as running as reached from stopped, and starts its data plane', () => {
    const { handle, changes, runs } = handleWith('running');
    handle.start();
    expect(handle.state).toBe('running');
    expect(changes).toEqual([['stopped', 'running', null]]);
    expect(runs).toHaveLength(1);
  });

  it('tells nothing when started stopped, then every state its actor reaches', async () => {
    const { handle, changes, runs } = handleWith();
    handle.start();
    expect(changes).toEqual([]);
    expect(handle.accepts({ type: 'STOP' })).toBe(false);
    expect(handle.accepts({ type: 'START' })).toBe(true);
    handle.send({ type: 'START' });
    await until(() => handle.state === 'running');
    handle.send({ type: 'PHASE', phase: 'streaming' });
    expect(handle.stats.phase).toBe('streaming');
    runs[0]?.reject(new Error('the sink refused'));
    await until(() => handle.state === 'failed');
    expect(handle.error).toBe('Error: the sink refused');
    // A pipeline that does not run has no phase.
    expect(handle.stats.phase).toBe('idle');
    expect(changes).toEqual([
      ['stopped', 'starting', null],
      ['starting', 'running', null],
      ['running', 'failed', 'Error: the sink refused'],
    ]);
  });

  it('stops only once its data plane has ended', async () => {
    const { handle, changes, runs } = handleWith('running');
    handle.start();
    handle.send({ type: 'STOP' });
    expect(handle.state).toBe('stopping');
    // The drain waits on the loop: the state holds until the run ends.
    await new Promise((r) => setImmediate(r));
    expect(handle.state).toBe('stopping');
    runs[0]?.resolve(undefined);
    await until(() => handle.state === 'stopped');
    await handle.loop;
    expect(changes.map(([, to]) => to)).toEqual(['running', 'stopping', 'stopped']);
  });

  it('starts a data-plane loop only after the one before it settled', async () => {
    const { handle } = handleWith();
    const order: string[] = [];
    const first = gate();
    handle.runAfterLoop(
      () => {
        order.push('first ran');
        return first.promise;
      },
      () => order.push('first ended'),
      () => order.push('first failed'),
    );
    handle.runAfterLoop(
      () => {
        order.push('second ran');
        throw new Error('refused');
      },
      () => order.push('second ended'),
      (error) => order.push(`second failed: ${(error as Error).message}`),
    );
    await until(() => order.length > 0);
    expect(order).toEqual(['first ran']);
    first.resolve();
    await handle.loop;
    expect(order).toEqual(['first ran', 'first ended', 'second ran', 'second failed: refused']);
  });

  it('runs its store writes one at a time, in order, going on after one that failed', async () => {
    const { handle } = handleWith();
    const done: string[] = [];
    const failures: unknown[] = [];
    const slow = gate();
    handle.queueWrite(async () => {
      await slow.promise;
      done.push('a');
    }, failures.push.bind(failures));
    handle.queueWrite(async () => {
      throw new Error('store down');
    }, failures.push.bind(failures));
    handle.queueWrite(async () => {
      done.push('c');
    }, failures.push.bind(failures));
    await new Promise((r) => setImmediate(r));
    expect(done).toEqual([]);
    slow.resolve();
    await handle.writes;
    expect(done).toEqual(['a', 'c']);
    expect(failures).toHaveLength(1);
    expect((failures[0] as Error).message).toBe('store down');
  });

  it('keeps the run the store opened until it is closed, and the generation it was told of', () => {
    const { handle } = handleWith();
    handle.runOpened('run-1');
    expect(handle.runId).toBe('run-1');
    handle.runClosed();
    expect(handle.runId).toBeNull();
    handle.followGeneration(4);
    expect(handle.generation).toBe(4);
  });
});
