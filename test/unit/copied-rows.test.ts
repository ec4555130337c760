import { describe, expect, it } from 'vitest';
import type { TableProgress } from '../../src/pipelines/table-progress.js';
import { type CopiedRowsSeen, rowsCopiedSince } from '../../src/runtime/copied-rows.js';

const progress = (rowsDone: number, rowsAtStart?: number): TableProgress => ({
  partitionsTotal: 4,
  partitionsDone: 0,
  rowsTotal: 1_000_000,
  rowsDone,
  ...(rowsAtStart === undefined ? {} : { rowsAtStart }),
});

describe('rowsCopiedSince', () => {
  it('sums the rows each table copied since the previous sample', () => {
    const seen: CopiedRowsSeen = new Map();
    const a = progress(0, 0);
    const b = progress(0, 0);
    const tables = new Map([
      ['public.a', a],
      ['public.b', b],
    ]);
    expect(rowsCopiedSince(seen, tables)).toBe(0);
    a.rowsDone = 1_000;
    b.rowsDone = 250;
    expect(rowsCopiedSince(seen, tables)).toBe(1_250);
    a.rowsDone = 1_500;
    expect(rowsCopiedSince(seen, tables)).toBe(500);
    expect(rowsCopiedSince(seen, tables)).toBe(0);
  });

  it('counts a copy seen for the first time from where it started, not its whole count', () => {
    const seen: CopiedRowsSeen = new Map();
    // A snapshot resumed after a restart: 800k rows were copied before, 2k since.
    expect(rowsCopiedSince(seen, new Map([['public.a', progress(802_000, 800_000)]]))).toBe(2_000);
    // An entry without a start counts from its next sample.
    expect(rowsCopiedSince(new Map(), new Map([['public.a', progress(5_000)]]))).toBe(0);
  });

  it('never goes negative when a partition is rolled back, and counts the rows copied again', () => {
    const seen: CopiedRowsSeen = new Map();
    const a = progress(10_000, 0);
    const tables = new Map([['public.a', a]]);
    rowsCopiedSince(seen, tables);
    a.rowsDone = 4_000;
    expect(rowsCopiedSince(seen, tables)).toBe(0);
    a.rowsDone = 6_000;
    expect(rowsCopiedSince(seen, tables)).toBe(2_000);
  });

  it('neither drops nor spikes when a table is copied again (its entry replaced)', () => {
    const seen: CopiedRowsSeen = new Map();
    const tables = new Map([['public.a', progress(2_000_000, 0)]]);
    rowsCopiedSince(seen, tables);
    tables.set('public.a', progress(3_000, 0));
    expect(rowsCopiedSince(seen, tables)).toBe(3_000);
    // Replaced by an entry already past where the old one stood: only its own rows count.
    rowsCopiedSince(seen, tables);
    tables.set('public.a', progress(2_500_000, 2_499_000));
    expect(rowsCopiedSince(seen, tables)).toBe(1_000);
  });

  it('forgets a table gone from the pipeline', () => {
    const seen: CopiedRowsSeen = new Map();
    rowsCopiedSince(seen, new Map([['public.a', progress(100, 0)]]));
    expect(rowsCopiedSince(seen, new Map())).toBe(0);
    expect(seen.size).toBe(0);
  });
});
