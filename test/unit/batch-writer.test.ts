import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { BatchWriter } from '../../src/runtime/apply/batch-writer.js';
import { PendingCommits } from '../../src/runtime/pending-commits.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { RecordingSink } from '../support/recording-sink.js';

const change = (id: string): ChangeEvent => ({
  op: 'insert',
  table: { schema: 'public', table: 't' },
  after: { id },
  commitLsn: 0x1n,
  xid: 1,
  commitTime: '',
});

/** A writer over a recording sink, starting after position 0x10, with what it acknowledged. */
function setup() {
  const sink = new RecordingSink();
  const stats = new PipelineStats();
  const acks: bigint[] = [];
  const oldest: (number | null)[] = [];
  let wakes = 0;
  const commits = new PendingCommits((ms) => oldest.push(ms));
  const writer = new BatchWriter({
    sink,
    epoch: 3,
    startLsn: 0x10n,
    ack: (lsn) => {
      acks.push(lsn);
      sink.steps.check();
    },
    stats,
    commits,
    onWriteEnded: () => {
      wakes++;
    },
  });
  return { sink, stats, acks, oldest, commits, writer, wakes: () => wakes };
}

describe('BatchWriter', () => {
  it('acknowledges a batch only once the sink has it durably, and sends its position and epoch', async () => {
    const { sink, stats, acks, writer, wakes } = setup();
    sink.hold();
    writer.start([change('a'), change('b')], 0x100n);
    expect(writer.busy).toBe(true);
    await sink.began(1);
    expect(sink.batches[0]).toMatchObject({ commitLsn: 0x100n, epoch: 3 });
    expect(acks).toEqual([]);
    expect(stats.eventsTotal).toBe(0);
    sink.release();
    await writer.settle();
    expect(writer.busy).toBe(false);
    expect(acks).toEqual([0x100n]);
    expect(writer.durableLsn).toBe(0x100n);
    expect(stats.eventsTotal).toBe(2);
    expect(stats.lastCheckpointLsn).toBe(0x100n);
    expect(wakes()).toBe(1);
  });

  it('acknowledges a position noted during a write after the write, and one noted when idle at once', async () => {
    const { sink, acks, writer } = setup();
    expect(writer.ackWhenDurable(0x20n)).toBe(true);
    expect(acks).toEqual([0x20n]);
    sink.hold();
    writer.start([change('a')], 0x100n);
    expect(writer.ackWhenDurable(0x150n)).toBe(false);
    expect(writer.ackWhenDurable(0x200n)).toBe(false);
    await sink.began(1);
    expect(acks).toEqual([0x20n]);
    sink.release();
    await writer.settle();
    expect(acks).toEqual([0x20n, 0x100n, 0x200n]);
    // A position never moves back.
    expect(writer.ackWhenDurable(0x180n)).toBe(true);
    expect(acks).toEqual([0x20n, 0x100n, 0x200n]);
  });

  it('keeps the failure of a write, counts it, and acknowledges nothing of it', async () => {
    const { sink, stats, acks, writer, wakes } = setup();
    const refused = new Error('refused');
    sink.failNext(refused);
    writer.start([change('a')], 0x100n);
    writer.ackWhenDurable(0x200n);
    await expect(writer.settle()).rejects.toBe(refused);
    expect(writer.failed).toBe(true);
    expect(writer.busy).toBe(false);
    expect(() => writer.throwIfFailed()).toThrow(refused);
    expect(acks).toEqual([]);
    expect(stats.sinkErrorsTotal).toBe(1);
    expect(wakes()).toBe(1);
    await writer.close();
  });

  it('fails a write made now with the sink error', async () => {
    const { sink, stats, acks, writer } = setup();
    sink.failNext(new Error('gone'));
    await expect(writer.write([change('a')], 0x100n)).rejects.toThrow('gone');
    expect(acks).toEqual([]);
    expect(stats.sinkErrorsTotal).toBe(1);
  });

  it('writes pieces under the durable position and counts them once their commit is durable', async () => {
    const { sink, stats, acks, writer } = setup();
    await writer.writePiece([change('a'), change('b')]);
    await writer.writePiece([change('c')]);
    expect(sink.batches.map((b) => b.commitLsn)).toEqual([0x10n, 0x10n]);
    expect(writer.piecesHeld).toBe(true);
    expect(stats.eventsTotal).toBe(0);
    expect(acks).toEqual([]);
    // Its commit carries a last change: the pieces count with the write that makes it durable.
    writer.committed(0x100n, true);
    expect(stats.eventsTotal).toBe(0);
    await writer.write([change('d')], 0x100n);
    expect(stats.eventsTotal).toBe(4);
    expect(stats.eventsByOp.insert).toBe(4);
    expect(writer.piecesHeld).toBe(false);
    expect(acks).toEqual([0x100n]);
  });

  it('counts pieces at once when the commit finds nothing left to write', async () => {
    const { stats, acks, writer } = setup();
    await writer.writePiece([change('a'), change('b')]);
    writer.committed(0x100n, false);
    expect(stats.eventsTotal).toBe(2);
    expect(acks).toEqual([0x100n]);
    expect(writer.piecesHeld).toBe(false);
  });

  it('counts no piece of a transaction that did not commit before it closed', async () => {
    const { stats, writer } = setup();
    await writer.writePiece([change('a'), change('b')]);
    await writer.close();
    // Whatever counts the pieces after that has nothing left to count.
    stats.countPieces();
    expect(stats.eventsTotal).toBe(0);
  });

  it('writes held changes under the durable position, acknowledging nothing', async () => {
    const { sink, acks, writer } = setup();
    await writer.write([change('a')], 0x100n);
    await writer.writeAtDurable([change('held')]);
    expect(sink.batches.map((b) => b.commitLsn)).toEqual([0x100n, 0x100n]);
    expect(acks).toEqual([0x100n]);
  });

  it('tells the pending commits when a write starts and ends', async () => {
    const { sink, oldest, commits, writer } = setup();
    commits.begin(1_000);
    commits.committed(true);
    sink.hold();
    writer.start([change('a')], 0x100n);
    expect(commits.oldest()).toBe(1_000);
    commits.begin(2_000);
    commits.committed(true);
    sink.release();
    await writer.settle();
    // The write carried the first commit; the second waits for the next one.
    expect(commits.oldest()).toBe(2_000);
    expect(oldest.at(-1)).toBe(2_000);
  });
});
