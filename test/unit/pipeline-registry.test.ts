import { describe, expect, it } from 'vitest';
import type { PipelineHandle } from '../../src/runtime/pipeline-handle.js';
import { PipelineRegistry, type PipelinesView } from '../../src/runtime/pipeline-registry.js';
import { idleHandle as handle } from '../support/idle-handle.js';

describe('the pipeline registry', () => {
  it('finds the pipelines taken on, in the order they were', () => {
    const registry = new PipelineRegistry();
    const a = handle('a');
    const b = handle('b');
    registry.add(a);
    registry.add(b);
    expect(registry.get('a')).toBe(a);
    expect(registry.has('b')).toBe(true);
    expect(registry.has('c')).toBe(false);
    expect(registry.ids()).toEqual(['a', 'b']);
    expect([...registry.values()]).toEqual([a, b]);
    expect(registry.size).toBe(2);
  });

  it('refuses a second handle of one pipeline: two would run two data planes on one slot', () => {
    const registry = new PipelineRegistry();
    const first = handle('a');
    registry.add(first);
    expect(() => registry.add(handle('a'))).toThrow(/run here already/);
    expect(registry.get('a')).toBe(first);
  });

  it('lets go of a handle only while it is the one held', () => {
    const registry = new PipelineRegistry();
    const old = handle('a');
    registry.add(old);
    expect(registry.holds(old)).toBe(true);
    expect(registry.remove(old)).toBe(true);
    expect(registry.holds(old)).toBe(false);
    const taken = handle('a');
    registry.add(taken);
    // A late removal of the old one leaves the new one alone.
    expect(registry.remove(old)).toBe(false);
    expect(registry.get('a')).toBe(taken);
    registry.clear();
    expect(registry.size).toBe(0);
  });

  it('shows readers what changes in it', () => {
    const registry = new PipelineRegistry();
    const view: PipelinesView = registry;
    registry.add(handle('a'));
    expect(view.ids()).toEqual(['a']);
    expect(view.get('a')?.name).toBe('pipeline a');
    registry.remove(registry.get('a') as PipelineHandle);
    expect(view.size).toBe(0);
  });
});
