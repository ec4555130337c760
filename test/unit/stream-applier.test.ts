import { afterEach, describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import type { SourceRelation, StreamItem } from '../../src/core/change-stream.js';
import { createLogger } from '../../src/log/logger.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import {
  type ApplyOutcome,
  applyStream,
  type StreamApplierOptions,
} from '../../src/runtime/stream-applier.js';
import { RecordingSink } from '../support/recording-sink.js';

const table = { schema: 'public', table: 't' };
const change = (id: string, on = table): ChangeEvent => ({
  op: 'insert',
  table: on,
  after: { id },
  commitLsn: 0x1n,
  xid: 1,
  commitTime: '',
});
const begin = (): StreamItem => ({ kind: 'begin', xid: 1, commitTimeMs: Date.now() });
const changes = (...ids: string[]): StreamItem[] => ids.map((id) => ({ kind: 'change', change: change(id) }));
const commit = (endLsn: bigint): StreamItem => ({ kind: 'commit', xid: 1, endLsn });
const transaction = (endLsn: bigint, ...ids: string[]): StreamItem[] => [
  begin(),
  ...changes(...ids),
  commit(endLsn),
];
const relation: SourceRelation = { ...table, relationId: 1, columns: [] };
/** Lets every reaction already due run (the applier's and the sink's are all promise reactions). */
const reactionsRun = () => new Promise<void>((resolve) => setImmediate(resolve));

/** An applier over a stream the test feeds delivery by delivery and a recording sink. */
function harness(overrides: Partial<StreamApplierOptions> = {}, sink = new RecordingSink()) {
  const deliveries: (StreamItem[] | null)[] = [];
  const acks: bigint[] = [];
  let calls = 0;
  let delivered = 0;
  const controller = new AbortController();
  const stats = overrides.stats ?? new PipelineStats();
  let wakeNext: (() => void) | undefined;
  // The stream: what was pushed since the last call, or a wait for the next push.
  const next = async (): Promise<StreamItem[] | null> => {
    calls++;
    sink.steps.check();
    while (deliveries.length === 0) await new Promise<void>((resolve) => (wakeNext = resolve));
    const items = deliveries.shift() ?? null;
    delivered++;
    sink.steps.check();
    return items;
  };
  const options: StreamApplierOptions = {
    next,
    ack: (lsn) => {
      acks.push(lsn);
      sink.steps.check();
    },
    sink,
    limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 0 },
    epoch: 1,
    startLsn: 0x10n,
    tables: new Set(['public.t']),
    stats,
    signal: controller.signal,
    logger: createLogger('silent'),
    ...overrides,
  };
  const applying = applyStream(options);
  const outcome = applying.then(
    (result): { result: ApplyOutcome } | { error: unknown } => ({ result }),
    (error: unknown) => ({ error }),
  );
  void outcome.then(() => sink.steps.check());
  running.push(async () => {
    controller.abort();
    sink.release();
    await outcome;
  });
  return {
    sink,
    stats,
    acks,
    outcome,
    /** Calls of next() so far. */
    calls: () => calls,
    push(...items: StreamItem[]) {
      deliveries.push(items);
      wakeNext?.();
    },
    end() {
      deliveries.push(null);
      wakeNext?.();
    },
    stop: () => controller.abort(),
    until: (holds: () => boolean) => sink.steps.until(holds),
    /** Resolves once `count` deliveries were handed to the applier. */
    delivered: (count: number) => sink.steps.until(() => delivered >= count),
    /** The position of every write that began, as `commitLsn`. */
    positions: () => sink.batches.map((b) => b.commitLsn),
  };
}

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of running.splice(0)) await stop();
});

describe('applyStream', () => {
  it('writes a transaction larger than two batches in pieces under the previous position, counted at its commit', async () => {
    const t = harness({ limits: { maxEvents: 2, maxBytes: 1 << 30, maxWaitMs: 0 } });
    t.push(begin(), ...changes('a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'));
    await t.sink.began(2);
    await t.until(() => t.sink.durable.length === 2);
    // The first piece at twice a batch, the next at one batch each; the rest waits for the commit.
    expect(t.sink.written()).toEqual([
      ['t:a1', 't:a2', 't:a3', 't:a4'],
      ['t:a5', 't:a6'],
    ]);
    expect(t.positions()).toEqual([0x10n, 0x10n]);
    expect(t.stats.eventsTotal).toBe(0);
    expect(t.acks).toEqual([]);
    t.sink.hold();
    t.push(commit(0x100n));
    await t.sink.began(3);
    expect(t.sink.written()[2]).toEqual(['t:a7']);
    expect(t.positions()[2]).toBe(0x100n);
    expect(t.stats.eventsTotal).toBe(0);
    t.sink.release();
    await t.until(() => t.acks.includes(0x100n));
    expect(t.stats.eventsTotal).toBe(7);
    expect(t.acks).toEqual([0x100n]);
  });

  it('replays whole a transaction stopped in the middle of its pieces, counting each change once', async () => {
    const stats = new PipelineStats();
    const limits = { maxEvents: 2, maxBytes: 1 << 30, maxWaitMs: 0 };
    const first = harness({ limits, stats });
    first.push(begin(), ...changes('a1', 'a2', 'a3', 'a4', 'a5'));
    await first.until(() => first.sink.durable.length === 1);
    await first.delivered(1);
    first.stop();
    expect(await first.outcome).toEqual({ result: 'stopped' });
    // The piece is in the sink, a5 is not, nothing is acknowledged and nothing counted.
    expect(first.sink.written()).toEqual([['t:a1', 't:a2', 't:a3', 't:a4']]);
    expect(first.acks).toEqual([]);
    expect(stats.eventsTotal).toBe(0);

    const again = harness({ limits, stats }, first.sink);
    again.push(...transaction(0x100n, 'a1', 'a2', 'a3', 'a4', 'a5'));
    await again.until(() => again.acks.includes(0x100n));
    expect(first.sink.written().slice(1)).toEqual([['t:a1', 't:a2', 't:a3', 't:a4'], ['t:a5']]);
    expect(stats.eventsTotal).toBe(5);
  });

  it('flushes what committed before a relation change, and applies the transaction that brings it whole', async () => {
    const seenAtRelation: string[][][] = [];
    const t = harness({
      limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 60_000 },
      schema: {
        project: (c) => c,
        onRelation: async (_relation, flushCommitted) => {
          await flushCommitted();
          seenAtRelation.push(t.sink.written());
          return 'continue';
        },
      },
    });
    t.push(
      ...transaction(0x100n, 'a1'),
      begin(),
      ...changes('b1'),
      { kind: 'relation', relation },
      ...changes('b2'),
    );
    await t.until(() => seenAtRelation.length === 1);
    expect(seenAtRelation[0]).toEqual([['t:a1']]);
    await t.until(() => t.acks.includes(0x100n));
    t.push(commit(0x200n));
    await t.delivered(2);
    await reactionsRun();
    t.stop();
    expect(await t.outcome).toEqual({ result: 'stopped' });
    expect(t.sink.written()).toEqual([['t:a1'], ['t:b1', 't:b2']]);
    expect(t.acks).toEqual([0x100n, 0x200n]);
  });

  it('holds for a schema review: what committed before is applied, the open transaction discarded', async () => {
    const t = harness({
      limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 60_000 },
      schema: { project: (c) => c, onRelation: async () => 'hold' },
    });
    t.push(
      ...transaction(0x100n, 'a1'),
      begin(),
      ...changes('b1'),
      { kind: 'relation', relation },
      ...changes('b2'),
      commit(0x200n),
    );
    expect(await t.outcome).toEqual({ result: 'held-for-schema' });
    expect(t.sink.written()).toEqual([['t:a1']]);
    expect(t.acks).toEqual([0x100n]);
  });

  it('holds for a schema review during a write: waits for it, then applies what committed since', async () => {
    let releaseVerdict: () => void = () => undefined;
    const verdict = new Promise<void>((resolve) => {
      releaseVerdict = resolve;
    });
    const t = harness({
      schema: {
        project: (c) => c,
        onRelation: async (_relation, flushCommitted) => {
          await verdict;
          await flushCommitted();
          return 'hold';
        },
      },
    });
    t.sink.hold();
    t.push(...transaction(0x100n, 'a1'));
    await t.sink.began(1);
    t.push(...transaction(0x200n, 'b1'), begin(), ...changes('c1'), { kind: 'relation', relation });
    await t.delivered(2);
    releaseVerdict();
    await reactionsRun();
    // The guard's flush waits for the write under way: nothing more is written meanwhile.
    expect(t.sink.batches).toHaveLength(1);
    t.sink.release();
    expect(await t.outcome).toEqual({ result: 'held-for-schema' });
    expect(t.sink.written()).toEqual([['t:a1'], ['t:b1']]);
    expect(t.acks).toEqual([0x100n, 0x200n]);
  });

  it('acknowledges an idle position or an empty commit that came during a write only after it', async () => {
    const other = { schema: 'public', table: 'other' };
    const t = harness();
    t.sink.hold();
    t.push(...transaction(0x100n, 'a1'));
    await t.sink.began(1);
    // A transaction with nothing for this pipeline, then an idle position.
    t.push(begin(), { kind: 'change', change: change('x', other) }, commit(0x180n));
    t.push({ kind: 'idle', walEnd: 0x200n });
    await t.delivered(3);
    await reactionsRun();
    expect(t.acks).toEqual([]);
    t.sink.release();
    await t.until(() => t.acks.includes(0x200n));
    expect(t.acks).toEqual([0x100n, 0x200n]);
    expect(t.sink.written()).toEqual([['t:a1']]);
  });

  it('acknowledges an empty commit during a write after it, alone', async () => {
    const other = { schema: 'public', table: 'other' };
    const t = harness();
    t.sink.hold();
    t.push(...transaction(0x100n, 'a1'));
    await t.sink.began(1);
    t.push(begin(), { kind: 'change', change: change('x', other) }, commit(0x180n));
    await t.delivered(2);
    await reactionsRun();
    expect(t.acks).toEqual([]);
    t.sink.release();
    await t.until(() => t.acks.includes(0x180n));
    expect(t.acks).toEqual([0x100n, 0x180n]);
  });

  it('waits for the write under way once twice a batch gathered, before reading more', async () => {
    const t = harness({ limits: { maxEvents: 2, maxBytes: 1 << 30, maxWaitMs: 0 } });
    t.sink.hold();
    t.push(...transaction(0x100n, 'a1', 'a2'));
    await t.sink.began(1);
    // Three batches in one delivery: the applier stops taking them in at twice a batch.
    t.push(
      ...transaction(0x200n, 'b1', 'b2'),
      ...transaction(0x300n, 'c1', 'c2'),
      ...transaction(0x400n, 'd1', 'd2'),
    );
    await t.delivered(2);
    await reactionsRun();
    expect(t.calls()).toBe(2);
    t.sink.release();
    await t.until(() => t.calls() === 3);
    await t.until(() => t.acks.includes(0x400n));
    expect(t.sink.written()).toEqual([
      ['t:a1', 't:a2'],
      ['t:b1', 't:b2', 't:c1', 't:c2'],
      ['t:d1', 't:d2'],
    ]);
  });

  it('reads on while a batch under twice a batch gathers during a write', async () => {
    const t = harness({ limits: { maxEvents: 2, maxBytes: 1 << 30, maxWaitMs: 0 } });
    t.sink.hold();
    t.push(...transaction(0x100n, 'a1', 'a2'));
    await t.sink.began(1);
    t.push(...transaction(0x200n, 'b1', 'b2'), ...transaction(0x300n, 'c1'));
    await t.until(() => t.calls() === 3);
    expect(t.sink.batches).toHaveLength(1);
  });

  it('fails with the error of a write that failed while it waited for the stream', async () => {
    const t = harness();
    const refused = new Error('refused');
    t.sink.failNext(refused);
    t.push(...transaction(0x100n, 'a1'));
    expect(await t.outcome).toEqual({ error: refused });
    expect(t.acks).toEqual([]);
    expect(t.stats.sinkErrorsTotal).toBe(1);
  });

  it('applies at a stop what fully arrived, and not the open transaction', async () => {
    const t = harness({ limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 60_000 } });
    t.push(...transaction(0x100n, 'a1'), ...transaction(0x200n, 'b1'), begin(), ...changes('c1'));
    await t.delivered(1);
    await reactionsRun();
    // The batch gathers for a minute: nothing is written before the stop.
    expect(t.sink.batches).toHaveLength(0);
    t.stop();
    expect(await t.outcome).toEqual({ result: 'stopped' });
    expect(t.sink.written()).toEqual([['t:a1', 't:b1']]);
    expect(t.positions()).toEqual([0x200n]);
    expect(t.acks).toEqual([0x200n]);
  });

  it('stops when the stream ends, applying what arrived', async () => {
    const t = harness({ limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 60_000 } });
    t.push(...transaction(0x100n, 'a1'));
    t.end();
    expect(await t.outcome).toEqual({ result: 'stopped' });
    expect(t.sink.written()).toEqual([['t:a1']]);
    expect(t.acks).toEqual([0x100n]);
  });

  it('writes a gathering batch at its deadline with nothing else coming', async () => {
    const t = harness({ limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 20 } });
    t.push(...transaction(0x100n, 'a1'));
    await t.until(() => t.acks.includes(0x100n));
    expect(t.sink.written()).toEqual([['t:a1']]);
  });

  it('writes each transaction as it comes when nothing of before the start is on its way', async () => {
    const t = harness({ caughtUpAt: 0x300n });
    t.push(...transaction(0x100n, 'a1'));
    await t.until(() => t.acks.includes(0x100n));
    t.push(...transaction(0x200n, 'b1'));
    t.push(...transaction(0x300n, 'c1'));
    await t.until(() => t.acks.includes(0x300n));
    expect(t.sink.written()[0]).toEqual(['t:a1']);
  });

  it('writes the first transaction of a backlog at once, then lets a batch fill, written at its deadline when none comes', async () => {
    // What committed before the stream started reaches 64 MiB past its start.
    const t = harness({ caughtUpAt: 0x10n + 64n * 1024n * 1024n });
    // The sink was idle since the start: the first rows are not held back.
    t.push(...transaction(0x100n, 'a1'));
    await t.until(() => t.acks.includes(0x100n));
    // Three deliveries, as a backlog arrives read by read: one batch, not three.
    t.push(...transaction(0x200n, 'b1'));
    t.push(...transaction(0x300n, 'c1'));
    t.push(...transaction(0x400n, 'd1'));
    await t.until(() => t.acks.includes(0x400n));
    expect(t.sink.written()).toEqual([['t:a1'], ['t:b1', 't:c1', 't:d1']]);
    // Caught up (the source idle past it): the next one goes alone.
    t.push({ kind: 'idle', walEnd: 0x10n + 64n * 1024n * 1024n });
    t.push(...transaction(0x5000000n, 'e1'));
    await t.until(() => t.acks.includes(0x5000000n));
    expect(t.sink.written()[2]).toEqual(['t:e1']);
  });

  it('writes the first transaction at once while a backlog arrives, then a batch as it fills', async () => {
    const t = harness({
      caughtUpAt: 0x10n + 64n * 1024n * 1024n,
      limits: { maxEvents: 4, maxBytes: 1 << 30, maxWaitMs: 0 },
    });
    // Two deliveries queued before the applier reads either: the first is not held for the second.
    t.push(...transaction(0x100n, 'a1'));
    t.push(...transaction(0x200n, 'b1'), ...transaction(0x300n, 'c1'), ...transaction(0x400n, 'd1'));
    await t.until(() => t.acks.includes(0x400n));
    expect(t.sink.written()).toEqual([['t:a1'], ['t:b1', 't:c1', 't:d1']]);
  });
});
