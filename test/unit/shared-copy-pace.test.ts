import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SharedCopyPace } from '../../src/runtime/shared-stream/shared-copy-pace.js';

describe('the pace of a copy beside a shared stream', () => {
  let now = 0;
  let streaming = true;
  const pace = () =>
    new SharedCopyPace(
      10_000,
      () => streaming,
      () => now,
    );

  beforeEach(() => {
    now = 1_000;
    streaming = true;
    vi.useFakeTimers();
  });
  afterEach(() => vi.useRealTimers());

  /** Whether the turn came by `ms` from now (the clock the pace reads moves with the timers). */
  const cameWithin = async (turn: Promise<void> | undefined, ms: number) => {
    if (turn === undefined) return true;
    let came = false;
    void turn.then(() => {
      came = true;
    });
    await vi.advanceTimersByTimeAsync(ms);
    now += ms;
    return came;
  };

  it('passes rows at its rate over all chunks: each chunk when the rows before it are due', async () => {
    const p = pace();
    // 100 rows take 10 ms at 10,000 rows/s: the first chunk goes at once, the second after 10 ms.
    expect(p.turn(100)).toBeUndefined();
    const second = p.turn(100);
    expect(await cameWithin(second, 9)).toBe(false);
    expect(await cameWithin(second, 1)).toBe(true);
    // The third is due 20 ms after the first: 10 ms from now.
    const third = p.turn(100);
    expect(await cameWithin(third, 9)).toBe(false);
    expect(await cameWithin(third, 1)).toBe(true);
  });

  it('does not wait a turn shorter than 2 ms: the copy runs a little ahead', () => {
    const p = pace();
    expect(p.turn(10)).toBeUndefined();
    expect(p.turn(10)).toBeUndefined(); // due in 1 ms
    expect(p.turn(10)).toBeInstanceOf(Promise); // due in 2 ms
  });

  it('owes nothing for what it copied while nothing else streamed', () => {
    const p = pace();
    streaming = false;
    for (let i = 0; i < 10; i++) expect(p.turn(10_000)).toBeUndefined();
    streaming = true;
    expect(p.turn(100)).toBeUndefined();
  });

  it('owes nothing for time gone by: a copy slower than its rate never waits', () => {
    const p = pace();
    for (let i = 0; i < 10; i++) {
      expect(p.turn(100)).toBeUndefined();
      now += 11;
    }
  });
});
