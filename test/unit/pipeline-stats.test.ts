import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import type { ChangeStreamStats } from '../../src/core/change-stream.js';
import { PendingCommits } from '../../src/runtime/pending-commits.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';

const insert = (id: number): ChangeEvent => ({
  op: 'insert',
  table: { schema: 'public', table: 't' },
  xid: 9,
  commitLsn: 0x100n,
  commitTime: '2026-01-01T00:00:00Z',
  after: { id: String(id) },
});
const inserts = (n: number) => Array.from({ length: n }, (_, i) => insert(i));
const streamStats = (figures: Partial<ChangeStreamStats>): ChangeStreamStats => ({
  transactions: 0,
  streamedTransactions: 0,
  spilledTransactions: 0,
  queuedItems: 0,
  queuedBytes: 0,
  arrivingSinceMs: null,
  failedStatusUpdates: 0,
  ...figures,
});

describe('pipeline lag', () => {
  const tracked = () => {
    const stats = new PipelineStats();
    const commits = new PendingCommits((oldest) => {
      stats.oldestPendingCommit(oldest);
    });
    return { stats, commits };
  };

  it('grows from the commit time of a transaction applied in pieces until its commit is durable', () => {
    const { stats, commits } = tracked();
    commits.begin(1_000);
    expect(stats.lagMs(31_000)).toBe(30_000);
    // Pieces written under the previous checkpoint change nothing: the transaction is still open.
    stats.recordPiece(inserts(3));
    expect(stats.lagMs(61_000)).toBe(60_000);
    commits.committed(true);
    commits.writeStarted();
    expect(stats.lagMs(62_000)).toBe(61_000);
    commits.writeEnded();
    expect(stats.lagMs(62_000)).toBe(0);
  });

  it('counts from the oldest of the write under way, the committed batch and the open transaction', () => {
    const { stats, commits } = tracked();
    commits.begin(1_000);
    commits.committed(true);
    commits.writeStarted();
    commits.begin(2_000);
    commits.committed(true);
    commits.begin(3_000);
    expect(stats.lagMs(10_000)).toBe(9_000);
    commits.writeEnded();
    expect(stats.lagMs(10_000)).toBe(8_000);
    commits.writeStarted();
    commits.writeEnded();
    expect(stats.lagMs(10_000)).toBe(7_000);
    // Its last changes went in a piece: its commit brings nothing to the batch, and it is durable.
    commits.committed(false);
    expect(stats.lagMs(10_000)).toBe(0);
  });

  it('counts a transaction still arriving from its first message, and the oldest of both', () => {
    const { stats, commits } = tracked();
    let arriving: number | null = 5_000;
    stats.streamOpened(() => streamStats({ arrivingSinceMs: arriving }));
    expect(stats.lagMs(20_000)).toBe(15_000);
    commits.begin(7_000);
    expect(stats.lagMs(20_000)).toBe(15_000);
    arriving = null;
    expect(stats.lagMs(20_000)).toBe(13_000);
    commits.clear();
    expect(stats.lagMs(20_000)).toBe(0);
  });
});

describe('pipeline source status updates', () => {
  it('counts the failed ones of the open stream, and keeps those of the streams closed before', () => {
    const stats = new PipelineStats();
    expect(stats.statusUpdatesFailedTotal).toBe(0);
    let failed = 2;
    stats.streamOpened(() => streamStats({ failedStatusUpdates: failed }));
    expect(stats.statusUpdatesFailedTotal).toBe(2);
    failed = 3;
    expect(stats.statusUpdatesFailedTotal).toBe(3);
    stats.streamClosed();
    expect(stats.statusUpdatesFailedTotal).toBe(3);
    // A stream opened again (a retry) counts from 0: the total goes on from the closed ones'.
    let again = 0;
    stats.streamOpened(() => streamStats({ failedStatusUpdates: again }));
    expect(stats.statusUpdatesFailedTotal).toBe(3);
    again = 4;
    expect(stats.statusUpdatesFailedTotal).toBe(7);
    stats.streamClosed();
    stats.streamClosed();
    expect(stats.statusUpdatesFailedTotal).toBe(7);
  });
});

describe('pipeline event counts', () => {
  it('counts the pieces of a transaction once its commit is durable, and never those replayed after a stop', () => {
    const stats = new PipelineStats();
    const batches: number[] = [];
    stats.tellBatchesTo((events) => batches.push(events));
    stats.recordPiece(inserts(400));
    stats.recordPiece(inserts(400));
    expect(stats.eventsTotal).toBe(0);
    expect(stats.unsaved().events).toBe(0);
    expect(stats.eventsByOp.insert).toBe(0);
    // The sink did write them: its batch figures and rate say so.
    expect(batches).toEqual([400, 400]);
    expect(stats.eventsPerSecond()).toBeGreaterThan(0);

    // Stopped before the commit: the next run replays the transaction whole.
    stats.dropPieces();
    stats.recordPiece(inserts(400));
    stats.recordPiece(inserts(400));
    stats.recordApplied(inserts(200), 0x200n);
    expect(stats.eventsTotal).toBe(200);
    stats.countPieces();
    expect(stats.eventsTotal).toBe(1_000);
    expect(stats.eventsByOp.insert).toBe(1_000);
    expect(stats.takeDeltas()).toMatchObject({ events: 1_000, checkpointLsn: '0/200' });
    stats.countPieces();
    expect(stats.eventsTotal).toBe(1_000);
  });
});

describe('pipeline stats and the machine', () => {
  it("shows the phase and the retry count the pipeline's machine holds, kept nowhere else", () => {
    let control = { phase: 'snapshot' as 'snapshot' | 'streaming' | 'idle', retries: 2 };
    const stats = new PipelineStats({ control: () => control, lastCheckpointAt: '2026-01-01T00:00:00.000Z' });
    expect([stats.phase, stats.retries, stats.lastCheckpointAt]).toEqual([
      'snapshot',
      2,
      '2026-01-01T00:00:00.000Z',
    ]);
    control = { phase: 'streaming', retries: 0 };
    expect([stats.phase, stats.retries]).toEqual(['streaming', 0]);
    expect(new PipelineStats().phase).toBe('idle');
  });

  it('tells progress to the current run only', () => {
    const stats = new PipelineStats();
    const told: string[] = [];
    stats.tellProgressTo(() => told.push('first run'));
    stats.caughtUp();
    stats.tellProgressTo(() => told.push('second run'));
    stats.recordApplied(inserts(1), 0x300n);
    expect(told).toEqual(['first run', 'second run']);
  });
});
