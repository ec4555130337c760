import { describe, expect, it } from 'vitest';
import {
  compareLsn,
  formatLsn,
  formatLsnWords,
  InvalidLsnError,
  isLsn,
  maxLsn,
  normalizeLsn,
  parseLsn,
  ZERO_LSN,
} from '../../src/core/lsn.js';

describe('lsn', () => {
  it('parses the two hex halves into one 64-bit position', () => {
    expect(parseLsn('16/B374D848')).toBe(0x16b374d848n);
    expect(parseLsn('0/0')).toBe(0n);
    expect(parseLsn('0/1')).toBe(1n);
    expect(parseLsn('1/0')).toBe(1n << 32n);
    expect(parseLsn('ffffffff/ffffffff')).toBe((1n << 64n) - 1n);
  });

  it('formats like PostgreSQL: upper case, no zero padding', () => {
    expect(formatLsn(0x16b374d848n)).toBe('16/B374D848');
    expect(formatLsn(0n)).toBe(ZERO_LSN);
    expect(formatLsn(0x16b3748n)).toBe('0/16B3748');
    expect(formatLsn((1n << 64n) - 1n)).toBe('FFFFFFFF/FFFFFFFF');
    expect(normalizeLsn('0/016b3748')).toBe('0/16B3748');
    expect(formatLsnWords(0x16, 0xb374d848)).toBe('16/B374D848');
    expect(formatLsnWords(0xffffffff, 0)).toBe('FFFFFFFF/0');
  });

  it('round-trips', () => {
    for (const text of ['0/0', '0/16B3748', '16/B374D848', '1/0', 'ABCDEF01/23456789']) {
      expect(formatLsn(parseLsn(text))).toBe(text);
    }
  });

  it('rejects what is not an LSN', () => {
    for (const bad of ['', '16', '16/', '/1', '16/B374D848/1', 'G/1', '123456789/0', ' 0/1', '0x1/2']) {
      expect(isLsn(bad)).toBe(false);
      expect(() => parseLsn(bad)).toThrow(InvalidLsnError);
    }
    expect(() => formatLsn(-1n)).toThrow(RangeError);
    expect(() => formatLsn(1n << 64n)).toThrow(RangeError);
  });

  it('compares numerically, not as text', () => {
    expect(compareLsn('0/9', '0/10')).toBeLessThan(0);
    expect(compareLsn('1/0', '0/FFFFFFFF')).toBeGreaterThan(0);
    expect(compareLsn('0/a', '0/A')).toBe(0);
    expect(maxLsn('0/9', '1/0', '0/FFFFFFFF')).toBe('1/0');
    expect(maxLsn('0/a')).toBe('0/A');
    expect(maxLsn()).toBe('0/0');
  });
});
