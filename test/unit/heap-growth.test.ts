import { describe, expect, it } from 'vitest';
import { heapGrowthGiven, limitHeapGrowth } from '../../src/cli/heap-growth.js';

describe('the heap growing factor of serve', () => {
  it('is left as given on the command line or in NODE_OPTIONS, in either spelling', () => {
    expect(heapGrowthGiven(['--heap-growing-percent=50'], undefined)).toBe(true);
    expect(heapGrowthGiven(['--heap_growing_percent', '50'], undefined)).toBe(true);
    expect(heapGrowthGiven([], '--max-old-space-size=512 --heap-growing-percent=80')).toBe(true);
    expect(limitHeapGrowth([], '--heap-growing-percent=80')).toBe(false);
  });

  it('is set when nothing gives it, other V8 flags notwithstanding', () => {
    expect(heapGrowthGiven(['--max-old-space-size=512'], '--enable-source-maps')).toBe(false);
    expect(heapGrowthGiven([], undefined)).toBe(false);
    expect(limitHeapGrowth(['--enable-source-maps'], '')).toBe(true);
  });
});
