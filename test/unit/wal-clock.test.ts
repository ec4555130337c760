import { describe, expect, it } from 'vitest';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { WalClock } from '../../src/runtime/wal-clock.js';

describe('WalClock', () => {
  it('dates the WAL after a position by the first sample past it, and reads 0 once it is reached', () => {
    const clock = new WalClock();
    clock.observe(100n, 1_000);
    clock.observe(100n, 2_000);
    clock.observe(250n, 3_000);
    clock.observe(400n, 4_000);
    expect(clock.ageAfter(99n, 10_000)).toBe(9_000);
    expect(clock.ageAfter(100n, 10_000)).toBe(7_000);
    expect(clock.ageAfter(300n, 10_000)).toBe(6_000);
    expect(clock.ageAfter(400n, 10_000)).toBe(0);
    expect(clock.end()).toBe(400n);
    // Nothing written since: still 0 later on.
    clock.observe(400n, 20_000);
    expect(clock.ageAfter(400n, 30_000)).toBe(0);
  });

  it('keeps dating the oldest WAL when it thins a long history', () => {
    const clock = new WalClock();
    for (let i = 1; i <= 5_000; i++) clock.observe(BigInt(i * 10), i * 1_000);
    expect(clock.ageAfter(0n, 6_000_000)).toBe(6_000_000 - 1_000);
    // Thinned, a position inside the history is dated by a sample after it: never too old.
    const age = clock.ageAfter(25_000n, 6_000_000);
    expect(age).toBeLessThanOrEqual(6_000_000 - 2_501_000);
    expect(age).toBeGreaterThan(6_000_000 - 2_600_000);
  });
});

describe('PipelineStats lag', () => {
  it('counts WAL the pipeline has not received, and takes the larger of the two measures', () => {
    const stats = new PipelineStats();
    const slot = (confirmed: bigint) => ({
      confirmedLsn: confirmed,
      retainedWalBytes: 512,
      walStatus: 'reserved',
    });
    stats.observeSource(1_000n, 0, slot(1_000n));
    expect(stats.lagMs(5_000)).toBe(0);
    expect(stats.lagBytes()).toBe(0);
    // The source writes; the pipeline (paused) receives nothing.
    stats.observeSource(1_800n, 1_000, slot(1_000n));
    stats.observeSource(2_600n, 2_000, slot(1_000n));
    expect(stats.lagMs(4_000)).toBe(3_000);
    expect(stats.lagBytes()).toBe(1_600);
    expect(stats.live(4_000)).toMatchObject({
      replicationLagMs: 3_000,
      replicationLagBytes: 1_600,
      retainedWalBytes: 512,
    });
    // Acknowledged in this process before the slot tells: the fresher position counts.
    stats.acknowledged(1_800n);
    expect(stats.lagMs(4_000)).toBe(2_000);
    expect(stats.lagBytes()).toBe(800);
    // A received transaction committed earlier than that is older still.
    stats.oldestPendingCommit(500);
    expect(stats.lagMs(4_000)).toBe(3_500);
    stats.oldestPendingCommit(null);
    stats.acknowledged(2_600n);
    expect(stats.lagMs(4_000)).toBe(0);
    // Stopped: not measured.
    stats.forgetSource();
    stats.endRun();
    expect(stats.lagBytes()).toBeNull();
    expect(stats.live(4_000)).toMatchObject({
      replicationLagMs: 0,
      replicationLagBytes: null,
      retainedWalBytes: null,
    });
  });

  it("carries the previous owner's lag until it reads the source, and dates the WAL after the durable position by it", () => {
    const stats = new PipelineStats();
    stats.carryLag(1_000);
    expect(stats.lagMs(6_000)).toBe(5_000);
    // The first read: the WAL after the durable position is as old as the previous owner said.
    stats.observeSource(5_000n, 6_000, {
      confirmedLsn: 2_000n,
      retainedWalBytes: 3_000,
      walStatus: 'reserved',
    });
    expect(stats.lagMs(8_000)).toBe(7_000);
    // Once the sink holds it, it no longer counts.
    stats.acknowledged(5_000n);
    expect(stats.lagMs(8_000)).toBe(0);
  });

  it('drops a carried lag when the first read finds the sink holding everything', () => {
    const stats = new PipelineStats();
    stats.carryLag(1_000);
    stats.observeSource(5_000n, 6_000, { confirmedLsn: 5_000n, retainedWalBytes: 0, walStatus: 'reserved' });
    expect(stats.lagMs(9_000)).toBe(0);
  });
});
