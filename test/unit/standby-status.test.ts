import { describe, expect, it } from 'vitest';
import { standbyStatusUpdate } from '../../src/source/postgres/standby-status.js';

describe('standbyStatusUpdate', () => {
  it('frames the position as written, flushed and applied, with the clock in microseconds since 2000', () => {
    const message = standbyStatusUpdate(0x16b374d848n, Date.UTC(2000, 0, 1, 0, 0, 1));
    expect(message.length).toBe(39);
    expect(String.fromCharCode(message[0] ?? 0)).toBe('d');
    expect(message.readInt32BE(1)).toBe(38);
    expect(String.fromCharCode(message[5] ?? 0)).toBe('r');
    expect([6, 14, 22].map((at) => message.readBigUInt64BE(at))).toEqual([
      0x16b374d848n,
      0x16b374d848n,
      0x16b374d848n,
    ]);
    expect(message.readBigInt64BE(30)).toBe(1_000_000n);
    expect(message[38]).toBe(0);
  });

  it('carries a position above 32 bits and the top of the range exactly', () => {
    const top = (1n << 64n) - 1n;
    expect(standbyStatusUpdate(top, Date.UTC(2000, 0, 1)).readBigUInt64BE(14)).toBe(top);
  });
});
