import { describe, expect, it } from 'vitest';
import { nextOrWake, onAbort } from '../../src/runtime/next-or-wake.js';

describe('nextOrWake', () => {
  it('resolves with the item, a timeout or a wake-up, and leaves no listener behind', async () => {
    const controller = new AbortController();
    let listeners = 0;
    const counted = (listener: () => void) => {
      listeners++;
      const off = onAbort(controller.signal)(listener);
      return () => {
        listeners--;
        off();
      };
    };
    for (let i = 0; i < 1000; i++) {
      expect(await nextOrWake(Promise.resolve(i), 1000, [counted])).toEqual({ kind: 'next', value: i });
    }
    expect(listeners).toBe(0);
    expect(await nextOrWake(new Promise(() => {}), 5, [counted])).toEqual({ kind: 'timeout' });
    const waiting = nextOrWake(new Promise(() => {}), null, [counted]);
    controller.abort();
    expect(await waiting).toEqual({ kind: 'wake' });
    expect(listeners).toBe(0);
    await expect(nextOrWake(Promise.reject(new Error('boom')), null, [counted])).rejects.toThrow('boom');
    expect(listeners).toBe(0);
  });
});
