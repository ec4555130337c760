import { afterEach, describe, expect, it, vi } from 'vitest';
import { LiveHub } from '../../src/live/live-hub.js';
import type { LiveMessage } from '../../src/live/live-messages.js';
import { PipelineRegistry } from '../../src/runtime/pipeline-registry.js';
import { PipelineStats } from '../../src/runtime/pipeline-stats.js';
import { StatsPublisher } from '../../src/runtime/stats-publisher.js';
import { idleHandle } from '../support/idle-handle.js';

/** One pipeline on a watched feed; `publish()` returns the copy rate of the message it sent. */
function watchedPipeline() {
  const stats = new PipelineStats();
  const registry = new PipelineRegistry();
  registry.add(idleHandle('p', 'orders', stats));
  const hub = new LiveHub();
  const rates: number[] = [];
  hub.subscribe('proj', (message: LiveMessage) => {
    if (message.type === 'pipeline.stats') rates.push(message.copy_rows_per_second);
  });
  const publisher = new StatsPublisher(hub, registry);
  return {
    stats,
    publish: () => {
      publisher.publish();
      return rates.at(-1);
    },
  };
}

describe('the rows copied a second on the live feed', () => {
  afterEach(() => vi.useRealTimers());

  it('counts a copy that began and ended between two messages in the next one', () => {
    vi.useFakeTimers();
    const { stats, publish } = watchedPipeline();
    expect(publish()).toBe(0);
    vi.advanceTimersByTime(1_000);
    // A table copied again from start to end within the second: no message saw it copying.
    stats.copyStarted('public.big', {
      partitionsTotal: 4,
      partitionsDone: 4,
      rowsTotal: 1_000_000,
      rowsDone: 1_500_000,
      rowsAtStart: 500_000,
    });
    expect(publish()).toBe(1_000_000);
    vi.advanceTimersByTime(2_000);
    expect(publish()).toBe(0);
  });

  it('divides by the time since the previous message, and says 0 on the first', () => {
    vi.useFakeTimers();
    const { stats, publish } = watchedPipeline();
    const progress = {
      partitionsTotal: 10,
      partitionsDone: 1,
      rowsTotal: 100_000,
      rowsDone: 10_000,
      rowsAtStart: 0,
    };
    stats.copyStarted('public.big', progress);
    // The first message has no previous one: the rows before it are not of one second.
    expect(publish()).toBe(0);
    progress.rowsDone = 40_000;
    vi.advanceTimersByTime(2_000);
    expect(publish()).toBe(15_000);
    // A partition rolled back: its rows go out of the count, which adds nothing.
    progress.rowsDone = 35_000;
    vi.advanceTimersByTime(1_000);
    expect(publish()).toBe(0);
  });
});
