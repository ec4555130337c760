import { afterEach, describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import type { SourceRelation, StreamItem } from '../../src/core/change-stream.js';
import { StreamVerdict } from '../../src/core/stream-verdict.js';
import { createLogger } from '../../src/log/logger.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { applyStream, type StreamApplierOptions } from '../../src/runtime/stream-applier.js';
import { RecordingHeldSink } from '../support/recording-held-sink.js';
import { RecordingSink } from '../support/recording-sink.js';

const table = { schema: 'public', table: 't' };
const BIG = 700;
const change = (id: string, xid = 1, op: ChangeEvent['op'] = 'insert'): ChangeEvent => ({
  op,
  table,
  ...(op === 'truncate' ? { tables: [table] } : { after: { id } }),
  commitLsn: 1n,
  xid,
  commitTime: '',
});
/** A small transaction committed at `endLsn`. */
const small = (endLsn: bigint, ...ids: string[]): StreamItem[] => [
  { kind: 'begin', xid: 1, commitTimeMs: Date.now() },
  ...ids.map((id): StreamItem => ({ kind: 'change', change: change(id) })),
  { kind: 'commit', xid: 1, endLsn },
];
/** Changes of the big streamed transaction as they arrive; `sub` made them in a subtransaction. */
const streamed = (ids: string[], sub = BIG): StreamItem[] =>
  ids.map((id) => ({ kind: 'stream-change', xid: BIG, change: change(id, sub) }));
const streamCommit = (endLsn: bigint) => {
  const verdict = new StreamVerdict();
  const item: StreamItem = { kind: 'stream-commit', xid: BIG, endLsn, commitTimeMs: Date.now(), verdict };
  return { item, verdict };
};
const relation = (columns: SourceRelation['columns']): SourceRelation => ({
  ...table,
  relationId: 5,
  columns,
});
const column = (name: string, typeOid = 25) => ({ name, typeOid, typeMod: -1, isKey: name === 'id' });

const running: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of running.splice(0)) await stop();
});

/** An applier over a stream the test feeds and a sink that records batches and held steps in one log. */
function harness<S extends RecordingSink>(sink: S, overrides: Partial<StreamApplierOptions> = {}) {
  const deliveries: StreamItem[][] = [];
  const acks: bigint[] = [];
  let wakeNext: (() => void) | undefined;
  const controller = new AbortController();
  const options: StreamApplierOptions = {
    next: async () => {
      sink.steps.check();
      while (deliveries.length === 0) await new Promise<void>((resolve) => (wakeNext = resolve));
      return deliveries.shift() ?? null;
    },
    ack: (lsn) => {
      acks.push(lsn);
      sink.steps.check();
    },
    sink,
    limits: { maxEvents: 2, maxBytes: 1 << 30, maxWaitMs: 0 },
    epoch: 1,
    startLsn: 0x10n,
    tables: new Set(['public.t']),
    stats: new PipelineStats(),
    signal: controller.signal,
    logger: createLogger('silent'),
    ...overrides,
  };
  const outcome = applyStream(options).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  void outcome.then(() => sink.steps.check());
  running.push(async () => {
    controller.abort();
    wakeNext?.();
    await outcome;
  });
  return {
    acks,
    outcome,
    push(...items: StreamItem[]) {
      deliveries.push(items);
      wakeNext?.();
    },
    until: (holds: () => boolean) => sink.steps.until(holds),
  };
}

describe('a streamed transaction written while it arrives', () => {
  it('writes its pieces between the batches committed meanwhile, each after what committed before it, and commits it at its end', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink);
    const { item, verdict } = streamCommit(0x90n);
    t.push(...streamed(['a1', 'a2']), ...small(0x20n, 'b1'), ...streamed(['a3']));
    t.push(...small(0x30n, 'c1'), ...streamed(['a4']), item);
    expect(await verdict.decided).toBe(true);
    await t.until(() => t.acks.includes(0x90n));
    expect(sink.log).toEqual([
      'open',
      'apply a1,a2',
      'batch 0/20 b1',
      // a4 arrived after c1 committed: its piece waits for c1.
      'batch 0/30 c1',
      'apply a3,a4',
      'commit 0/90',
    ]);
    expect(sink.committed).toEqual([{ lsn: '0/90', ids: ['a1', 'a2', 'a3', 'a4'] }]);
    expect(t.acks).toEqual([0x20n, 0x30n, 0x90n]);
    // Nothing of it went through the batches, so its replay (skipped by the verdict) adds nothing.
    expect(sink.durable.flatMap((b) => b.changes.map((c) => c.after?.id))).toEqual(['b1', 'c1']);
  });

  it('ends a piece at batch_max_bytes of change data even when it holds fewer changes than batch_max_events', async () => {
    // Each change counts 64 bytes plus its values: 'a1' is 66, so two make a piece of 132 bytes.
    const sink = new RecordingHeldSink();
    const t = harness(sink, { limits: { maxEvents: 100, maxBytes: 132, maxWaitMs: 0 } });
    const { item, verdict } = streamCommit(0x90n);
    t.push(...streamed(['a1', 'a2', 'a3', 'a4', 'a5']), item);
    expect(await verdict.decided).toBe(true);
    expect(sink.log).toEqual(['open', 'apply a1,a2', 'apply a3,a4', 'apply a5', 'commit 0/90']);
    expect(sink.committed).toEqual([{ lsn: '0/90', ids: ['a1', 'a2', 'a3', 'a4', 'a5'] }]);
  });

  it('undoes a subtransaction rolled back, from its savepoint on, and keeps the rest', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink, { limits: { maxEvents: 100, maxBytes: 1 << 30, maxWaitMs: 0 } });
    const { item, verdict } = streamCommit(0x90n);
    t.push(
      ...streamed(['a1']),
      ...streamed(['s1', 's2'], 701),
      ...streamed(['n1'], 702),
      { kind: 'stream-abort', xid: BIG, subxid: 702 },
      { kind: 'stream-abort', xid: BIG, subxid: 701 },
      ...streamed(['a2']),
      ...streamed(['k1'], 703),
      item,
    );
    expect(await verdict.decided).toBe(true);
    expect(sink.log).toEqual([
      'open',
      'apply a1',
      'savepoint 701',
      'apply s1,s2',
      'savepoint 702',
      'apply n1',
      'rollback 702',
      'rollback 701',
      'apply a2',
      'savepoint 703',
      'apply k1',
      'commit 0/90',
    ]);
    expect(sink.committed).toEqual([{ lsn: '0/90', ids: ['a1', 'a2', 'k1'] }]);
  });

  it('rolls back a streamed transaction aborted whole, acknowledging nothing of it', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink);
    t.push(
      ...streamed(['a1', 'a2', 'a3']),
      { kind: 'stream-abort', xid: BIG, subxid: BIG },
      ...small(0x40n, 'b1'),
    );
    await t.until(() => t.acks.includes(0x40n));
    expect(sink.log).toEqual(['open', 'apply a1,a2', 'abort', 'batch 0/40 b1']);
    expect(sink.committed).toEqual([]);
  });

  it('falls back to the replay at a new table shape mid-stream: rolled back, then applied after its commit', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink);
    const { item, verdict } = streamCommit(0x90n);
    t.push(
      { kind: 'relation', relation: relation([column('id'), column('v')]) },
      ...streamed(['a1', 'a2']),
      { kind: 'stream-relation', xid: BIG, relation: relation([column('id'), column('v', 23)]) },
      ...streamed(['a3']),
      item,
    );
    expect(await verdict.decided).toBe(false);
    // The source replays it whole after the verdict.
    t.push(...small(0x90n, 'a1', 'a2', 'a3'));
    await t.until(() => t.acks.includes(0x90n));
    expect(sink.log).toEqual(['open', 'apply a1,a2', 'abort', 'batch 0/90 a1,a2,a3']);
    expect(sink.committed).toEqual([]);
  });

  it('goes on through a shape the stream announced the same as before', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink);
    const { item, verdict } = streamCommit(0x90n);
    const shape = [column('id'), column('v')];
    t.push(
      { kind: 'relation', relation: relation(shape) },
      { kind: 'stream-relation', xid: BIG, relation: relation(shape) },
      ...streamed(['a1']),
      item,
    );
    expect(await verdict.decided).toBe(true);
    expect(sink.committed).toEqual([{ lsn: '0/90', ids: ['a1'] }]);
  });

  it('falls back at a truncate, and when the held transaction fails', async () => {
    const sink = new RecordingHeldSink();
    const t = harness(sink);
    const first = streamCommit(0x90n);
    t.push(...streamed(['a1', 'a2']), {
      kind: 'stream-change',
      xid: BIG,
      change: change('', BIG, 'truncate'),
    });
    t.push(...streamed(['a3']), first.item);
    expect(await first.verdict.decided).toBe(false);
    t.push(...small(0x90n, 'a1', 'a2', 'a3'));
    await t.until(() => t.acks.includes(0x90n));

    sink.failNextHeldStep(new Error('connection lost'));
    const second = streamCommit(0xa0n);
    t.push(...streamed(['x1', 'x2', 'x3']), second.item);
    expect(await second.verdict.decided).toBe(false);
    t.push(...small(0xa0n, 'x1', 'x2', 'x3'));
    await t.until(() => t.acks.includes(0xa0n));
    expect(sink.log).toEqual([
      'open',
      'apply a1,a2',
      'abort',
      'batch 0/90 a1,a2,a3',
      'open failed',
      'batch 0/A0 x1,x2,x3',
    ]);
    expect(sink.committed).toEqual([]);
  });

  it('falls back before the schema review changes a table of the sink, which would wait for its locks', async () => {
    const sink = new RecordingHeldSink();
    const schema: StreamApplierOptions['schema'] = {
      project: (c) => c,
      onRelation: async (_relation, flushCommitted) => {
        await flushCommitted();
        sink.log.push('alter');
        return 'continue';
      },
    };
    const t = harness(sink, { schema });
    const { item, verdict } = streamCommit(0x90n);
    t.push(
      ...streamed(['a1', 'a2', 'a3']),
      { kind: 'relation', relation: relation([column('id')]) },
      ...small(0x20n, 'b1'),
      item,
    );
    expect(await verdict.decided).toBe(false);
    await t.until(() => t.acks.includes(0x20n));
    expect(sink.log).toEqual(['open', 'apply a1,a2', 'abort', 'alter', 'batch 0/20 b1']);
  });

  it('falls back while a copy decides on the table', async () => {
    const sink = new RecordingHeldSink();
    const copyGate = {
      active: true,
      route: () => 'apply' as const,
    } as unknown as StreamApplierOptions['copyGate'];
    const t = harness(sink, { copyGate });
    const { item, verdict } = streamCommit(0x90n);
    t.push(...streamed(['a1']), item);
    expect(await verdict.decided).toBe(false);
    expect(sink.log).toEqual([]);
  });

  it('leaves a streamed transaction to its replay in a sink that cannot hold one open', async () => {
    const sink = new RecordingSink();
    const t = harness(sink);
    const { item, verdict } = streamCommit(0x90n);
    t.push(...streamed(['a1', 'a2', 'a3']), item);
    expect(await verdict.decided).toBe(false);
    t.push(...small(0x90n, 'a1', 'a2', 'a3'));
    await t.until(() => t.acks.includes(0x90n));
    expect(sink.written()).toEqual([['t:a1', 't:a2', 't:a3']]);
  });

  it('rolls back what it holds when the applier stops', async () => {
    const sink = new RecordingHeldSink();
    const controller = new AbortController();
    const t = harness(sink, { signal: controller.signal });
    t.push(...streamed(['a1', 'a2', 'a3']));
    await t.until(() => sink.log.includes('apply a1,a2'));
    controller.abort();
    t.push(...small(0x20n, 'b1'));
    await t.outcome;
    expect(sink.log.at(-1)).toBe('abort');
    expect(sink.committed).toEqual([]);
  });
});
