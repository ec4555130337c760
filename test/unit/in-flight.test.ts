import { describe, expect, it } from 'vitest';
import { InFlight } from '../../src/sinks/in-flight.js';

/** A write the test answers itself. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('InFlight', () => {
  it('sends up to its limit without waiting, then waits for room', async () => {
    const writes = [deferred(), deferred(), deferred()] as const;
    const sent: number[] = [];
    const inFlight = new InFlight(2);
    await inFlight.add(() => {
      sent.push(0);
      return writes[0].promise;
    });
    await inFlight.add(() => {
      sent.push(1);
      return writes[1].promise;
    });
    await Promise.resolve();
    expect(sent).toEqual([0, 1]);
    const adding = inFlight.add(() => {
      sent.push(2);
      return writes[2].promise;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([0, 1]);
    writes[1].resolve();
    await adding;
    await Promise.resolve();
    expect(sent).toEqual([0, 1, 2]);
    writes[0].resolve();
    writes[2].resolve();
    await inFlight.settle();
  });

  it('throws the first failure from settle, and sends nothing after it', async () => {
    const inFlight = new InFlight(4);
    const slow = deferred();
    await inFlight.add(() => slow.promise);
    await inFlight.add(() => Promise.reject(new Error('first')));
    await inFlight.add(() => Promise.reject(new Error('second')));
    slow.resolve();
    await expect(inFlight.settle()).rejects.toThrow('first');
    const sent: string[] = [];
    await expect(inFlight.add(async () => sent.push('after'))).rejects.toThrow('first');
    expect(sent).toEqual([]);
  });

  it('settles with nothing sent', async () => {
    await expect(new InFlight(1).settle()).resolves.toBeUndefined();
  });
});
