import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { SnapshotVisibility } from '../../src/core/snapshot-visibility.js';
import { HeldChanges } from '../../src/runtime/backfill/held-changes.js';

describe('snapshot visibility', () => {
  it('sees what committed before it and nothing in progress or later', () => {
    const snapshot = SnapshotVisibility.parse('100:110:102,105');
    expect(snapshot.sees(99)).toBe(true);
    expect(snapshot.sees(101)).toBe(true);
    expect(snapshot.sees(102)).toBe(false);
    expect(snapshot.sees(105)).toBe(false);
    expect(snapshot.sees(109)).toBe(true);
    expect(snapshot.sees(110)).toBe(false);
    expect(snapshot.sees(200)).toBe(false);
  });

  it('compares 32-bit xids across wraparound, from 64-bit snapshot values', () => {
    // Epoch 1: xmin is 2^32 + 4294967290, so 32-bit xids near 2^32 and just past 0 are ordered.
    const snapshot = SnapshotVisibility.parse(`${2 ** 32 + 4294967290}:${2 ** 33 + 5}:`);
    expect(snapshot.sees(4294967280)).toBe(true);
    expect(snapshot.sees(4294967295)).toBe(true);
    expect(snapshot.sees(3)).toBe(true);
    expect(snapshot.sees(5)).toBe(false);
  });

  it('refuses text that is not a snapshot', () => {
    expect(() => SnapshotVisibility.parse('12:x:')).toThrow('not a snapshot');
  });
});

const change = (i: number): ChangeEvent => ({
  op: 'insert',
  table: { schema: 'public', table: 't' },
  after: { id: String(i), v: `line\nwith "quotes" ${i}` },
  commitLsn: 2n,
  xid: i,
  commitTime: '2024-01-01T00:00:00.000Z',
});

describe('held changes', () => {
  it('keeps order across memory and file, filtered, and cleans up', async () => {
    const held = new HeldChanges();
    for (let i = 0; i < 25_000; i++) held.add(change(i));
    expect(held.size).toBe(25_000);
    const seen: number[] = [];
    for await (const chunk of held.drain(4_000, (c) => c.xid % 3 !== 0)) {
      expect(chunk.length).toBeLessThanOrEqual(4_000);
      seen.push(...chunk.map((c) => c.xid));
    }
    const expected = Array.from({ length: 25_000 }, (_, i) => i).filter((i) => i % 3 !== 0);
    expect(seen).toEqual(expected);
    expect(held.size).toBe(0);
  });
});
