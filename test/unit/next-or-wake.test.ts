import { describe, expect, it } from 'vitest';
import { abortWith } from '../../src/runtime/abort-link.js';
import { nextOrWake, onAbort } from '../../src/runtime/next-or-wake.js';

describe('nextOrWake', () => {
  it('resolves with the item, a timeout or a wake-up, and leaves no listener behind', async () => {
    const controller = new AbortController();
    let listeners = 0;
    const countedOn = (signal: AbortSignal) => (listener: () => void) => {
      listeners++;
      const off = onAbort(signal)(listener);
      return () => {
        listeners--;
        off();
      };
    };
    const counted = countedOn(controller.signal);
    for (let i = 0; i < 1000; i++) {
      expect(await nextOrWake(Promise.resolve(i), 1000, [counted])).toEqual({ kind: 'next', value: i });
    }
    expect(listeners).toBe(0);
    expect(await nextOrWake(new Promise(() => {}), 5, [counted])).toEqual({ kind: 'timeout' });
    const waiting = nextOrWake(new Promise(() => {}), null, [counted]);
    controller.abort();
    expect(await waiting).toEqual({ kind: 'wake' });
    expect(listeners).toBe(0);
    // An aborted signal wakes at once (below); a rejection is seen while it is not.
    const countedFresh = countedOn(new AbortController().signal);
    await expect(nextOrWake(Promise.reject(new Error('boom')), null, [countedFresh])).rejects.toThrow('boom');
    expect(listeners).toBe(0);
  });
});

describe('a wait on a signal aborted before it began', () => {
  it('wakes at once, since an aborted signal fires no more events', async () => {
    const aborted = AbortSignal.abort();
    const never = new Promise<never>(() => {});
    await expect(nextOrWake(never, null, [onAbort(aborted)])).resolves.toEqual({ kind: 'wake' });
  });

  it('links a controller that is aborted at once, or when the signal aborts later', () => {
    expect(abortWith(AbortSignal.abort()).controller.signal.aborted).toBe(true);
    const later = new AbortController();
    const { controller } = abortWith(later.signal);
    expect(controller.signal.aborted).toBe(false);
    later.abort();
    expect(controller.signal.aborted).toBe(true);
    const source = new AbortController();
    const unlinked = abortWith(source.signal);
    unlinked.unlink();
    source.abort();
    expect(unlinked.controller.signal.aborted).toBe(false);
  });
});
