import { describe, expect, it } from 'vitest';
import { formatAgo } from '../../ui/src/lib/format.js';

describe('how long ago a time was', () => {
  const now = Date.parse('2026-11-26T10:00:00Z');
  it('never names a time just ahead of the page clock as to come', () => {
    expect(formatAgo('2026-11-26T10:00:01.200Z', now)).toBe('just now');
    expect(formatAgo('2026-11-26T10:00:30Z', now)).toBe('just now');
    expect(formatAgo('2026-11-26T09:59:57Z', now)).toBe('3 s ago');
    expect(formatAgo('2026-11-26T10:05:00Z', now)).toBe('in 5 min');
  });
});
