import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { type PipelineSample, pipelineSeries } from '../../src/metrics/pipeline-series.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';

const NOW = Date.parse('2025-01-01T00:00:10Z');
const changes = (...ops: ChangeEvent['op'][]) => ops.map((op) => ({ op }) as ChangeEvent);

function sample(name: string, state: PipelineSample['state'] = 'running'): PipelineSample {
  return { name, state, stats: new PipelineStats() };
}

describe('pipeline series', () => {
  it('shows the state as 1 for the current one and 0 for the six others', () => {
    const series = pipelineSeries.state([sample('a', 'paused')], NOW);
    expect(series).toHaveLength(7);
    expect(series.filter((s) => s.value === 1)).toEqual([
      { labels: { pipeline: 'a', state: 'paused' }, value: 1 },
    ]);
  });

  it('counts events by operation, every operation present, and reads rate, lag and checkpoint', () => {
    const p = sample('a');
    p.stats.recordApplied(changes('insert', 'insert', 'update', 'delete'), 1n, 0.01, NOW - 1000);
    p.stats.oldestPendingCommit(NOW - 2500);
    expect(pipelineSeries.eventsTotal([p], NOW)).toEqual([
      { labels: { pipeline: 'a', op: 'insert' }, value: 2 },
      { labels: { pipeline: 'a', op: 'update' }, value: 1 },
      { labels: { pipeline: 'a', op: 'delete' }, value: 1 },
      { labels: { pipeline: 'a', op: 'truncate' }, value: 0 },
    ]);
    expect(pipelineSeries.eventsPerSecond([p], NOW)).toEqual([{ labels: { pipeline: 'a' }, value: 0.8 }]);
    expect(pipelineSeries.lagSeconds([p], NOW)).toEqual([{ labels: { pipeline: 'a' }, value: 2.5 }]);
    expect(pipelineSeries.lastCheckpointSeconds([p], NOW)).toEqual([
      { labels: { pipeline: 'a' }, value: (NOW - 1000) / 1000 },
    ]);
    expect(pipelineSeries.sinkErrorsTotal([p], NOW)).toEqual([{ labels: { pipeline: 'a' }, value: 0 }]);
  });

  it("reads the source's failed status updates, from the open change stream and those closed", () => {
    const p = sample('a');
    const series = () => pipelineSeries.sourceStatusUpdatesFailedTotal([p], NOW);
    expect(series()).toEqual([{ labels: { pipeline: 'a' }, value: 0 }]);
    const streamStats = {
      transactions: 0,
      streamedTransactions: 0,
      spilledTransactions: 0,
      queuedItems: 0,
      queuedBytes: 0,
      arrivingSinceMs: null,
      failedStatusUpdates: 2,
    };
    p.stats.streamOpened(() => streamStats);
    expect(series()).toEqual([{ labels: { pipeline: 'a' }, value: 2 }]);
    p.stats.streamClosed();
    p.stats.streamOpened(() => ({ ...streamStats, failedStatusUpdates: 1 }));
    expect(series()).toEqual([{ labels: { pipeline: 'a' }, value: 3 }]);
  });

  it('leaves out what is not known yet: checkpoint, slot', () => {
    const p = sample('a', 'starting');
    expect(pipelineSeries.lastCheckpointSeconds([p], NOW)).toEqual([]);
    expect(pipelineSeries.slotRetainedWalBytes([p], NOW)).toEqual([]);
    expect(pipelineSeries.slotWalStatus([p], NOW)).toEqual([]);
    expect(pipelineSeries.snapshotRowsDone([p], NOW)).toEqual([]);
  });

  it('reads snapshot progress per table, the total never below what is done', () => {
    const p = sample('a');
    p.stats.copyStarted('public.t', { partitionsTotal: 4, partitionsDone: 1, rowsTotal: 100, rowsDone: 150 });
    const labels = { pipeline: 'a', table: 'public.t' };
    expect(pipelineSeries.snapshotRowsDone([p], NOW)).toEqual([{ labels, value: 150 }]);
    expect(pipelineSeries.snapshotRowsPlanned([p], NOW)).toEqual([{ labels, value: 150 }]);
    expect(pipelineSeries.snapshotPartitionsDone([p], NOW)).toEqual([{ labels, value: 1 }]);
    expect(pipelineSeries.snapshotPartitionsPlanned([p], NOW)).toEqual([{ labels, value: 4 }]);
  });

  it('shows the slot, with an unknown wal_status added to the known ones', () => {
    const p = sample('a');
    p.stats.slotRead({ retainedWalBytes: 4096, walStatus: 'extended' });
    expect(pipelineSeries.slotRetainedWalBytes([p], NOW)).toEqual([
      { labels: { pipeline: 'a' }, value: 4096 },
    ]);
    const statuses = pipelineSeries.slotWalStatus([p], NOW);
    expect(statuses.map((s) => [s.labels.status, s.value])).toEqual([
      ['reserved', 0],
      ['extended', 1],
      ['unreserved', 0],
      ['lost', 0],
    ]);
    p.stats.slotRead({ retainedWalBytes: null, walStatus: 'weird' });
    expect(pipelineSeries.slotRetainedWalBytes([p], NOW)).toEqual([]);
    expect(pipelineSeries.slotWalStatus([p], NOW).find((s) => s.value === 1)?.labels.status).toBe('weird');
  });
});
