import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/log/logger.js';
import { awaitStop } from '../../src/runtime/slow-stop.js';

describe('a stop that takes long', () => {
  it('says what the data plane is waiting on while it lasts, and ends with it', async () => {
    const warned: Record<string, unknown>[] = [];
    const log = { warn: (fields: Record<string, unknown>) => warned.push(fields) } as unknown as Logger;
    let end: () => void = () => undefined;
    const loop = new Promise<void>((resolve) => {
      end = resolve;
    });
    const stopping = awaitStop(loop, log, () => ({ step: 'claiming the slot' }), 5);
    // Until it has said so at least once.
    while (warned.length === 0) await new Promise((r) => setImmediate(r));
    expect(warned[0]).toMatchObject({ step: 'claiming the slot' });
    end();
    await expect(stopping).resolves.toBeUndefined();
  });
});
