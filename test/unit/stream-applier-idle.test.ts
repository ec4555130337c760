import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../src/core/change.js';
import type { StreamItem } from '../../src/core/change-stream.js';
import type { ChangeBatch, Sink } from '../../src/core/sink.js';
import { createLogger } from '../../src/log/logger.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { applyStream } from '../../src/runtime/stream-applier.js';

/**
 * The idle position (a keepalive's walEnd with no transaction open) is acknowledged once what
 * arrived before it is durable, also when it arrives while a batch gathers or is being written. A
 * source shutting down (`pg_ctl stop -m fast`) waits until its walsender hears exactly that
 * position, which no later keepalive repeats: dropped, the shutdown waits for ever.
 */
describe('the applier and the idle position', () => {
  const table = { schema: 'public', table: 't' };
  const transaction = (xid: number, endLsn: bigint): StreamItem[] => [
    { kind: 'begin', xid, commitTimeMs: Date.now() },
    {
      kind: 'change',
      change: { op: 'insert', table, after: { id: String(xid) }, commitLsn: 1n, xid, commitTime: '' },
    },
    { kind: 'commit', xid, endLsn },
  ];

  /** Runs the applier over `deliveries` (one next() each), then until `done` says so; returns the acks. */
  async function run(
    deliveries: StreamItem[][],
    options: { maxWaitMs: number; holdWrites?: boolean },
    done: (acks: bigint[], batches: ChangeBatch[]) => boolean,
  ) {
    const acks: bigint[] = [];
    const batches: ChangeBatch[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const sink = {
      applyBatch: async (batch: ChangeBatch): Promise<Checkpoint> => {
        batches.push(batch);
        if (options.holdWrites) await held;
        return { lsn: batch.commitLsn, epoch: 1 };
      },
    } as unknown as Sink;
    const controller = new AbortController();
    let waiting: (() => void) | undefined;
    const next = async (): Promise<StreamItem[] | null> => {
      const items = deliveries.shift();
      if (items) return items;
      // Nothing more from the source: the writes go on until the test has what it waits for.
      release();
      await new Promise<void>((resolve) => {
        waiting = resolve;
        controller.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return null;
    };
    const applying = applyStream({
      next,
      ack: (lsn) => acks.push(lsn),
      sink,
      limits: { maxEvents: 10_000, maxBytes: 1 << 30, maxWaitMs: options.maxWaitMs },
      epoch: 1,
      startLsn: 0n,
      tables: new Set(['public.t']),
      stats: new PipelineStats(),
      signal: controller.signal,
      logger: createLogger('silent'),
    });
    const deadline = Date.now() + 10_000;
    while (!done(acks, batches) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    waiting?.();
    await applying.catch(() => undefined);
    return { acks, batches };
  }

  it('acknowledges an idle position that came while the batch gathered, with the batch', async () => {
    const { acks, batches } = await run(
      [[...transaction(1, 100n), { kind: 'idle', walEnd: 500n }]],
      { maxWaitMs: 50 },
      (acks) => acks.includes(500n),
    );
    expect(batches.map((b) => b.commitLsn)).toEqual([500n]);
    expect(acks.at(-1)).toBe(500n);
  });

  it('acknowledges an idle position that came while a batch was being written, after the write', async () => {
    const { acks } = await run(
      [transaction(1, 100n), [{ kind: 'idle', walEnd: 500n }], transaction(2, 600n)],
      { maxWaitMs: 0, holdWrites: true },
      (acks) => acks.includes(500n) && acks.includes(600n),
    );
    expect(acks).toContain(500n);
    expect(acks.at(-1)).toBe(600n);
  });
});
