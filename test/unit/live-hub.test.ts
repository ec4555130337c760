import { describe, expect, it } from 'vitest';
import { LiveHub } from '../../src/live/live-hub.js';

describe('LiveHub', () => {
  it('keeps later subscribers when an unsubscribe runs twice', () => {
    const hub = new LiveHub();
    const first = hub.subscribe('p', () => {});
    first();
    const received: unknown[] = [];
    hub.subscribe('p', (message) => received.push(message));
    first();
    hub.publish('p', { type: 'hello', version: 'v0' });
    expect(hub.watched('p')).toBe(true);
    expect(received).toHaveLength(1);
  });

  it("gives a subscriber of every project each project's messages, tagged with the project", () => {
    const hub = new LiveHub();
    const everything: unknown[] = [];
    const onlyA: unknown[] = [];
    const stop = hub.subscribe(null, (message) => everything.push(message));
    hub.subscribe('a', (message) => onlyA.push(message));
    expect(hub.watched('b')).toBe(true);
    hub.publish('a', { type: 'pipeline.state', name: 'orders', state: 'running', error: null });
    hub.publish('b', { type: 'pipeline.state', name: 'orders', state: 'stopped', error: null });
    expect(onlyA).toEqual([{ type: 'pipeline.state', name: 'orders', state: 'running', error: null }]);
    expect(everything).toEqual([
      { type: 'pipeline.state', name: 'orders', project_id: 'a', state: 'running', error: null },
      { type: 'pipeline.state', name: 'orders', project_id: 'b', state: 'stopped', error: null },
    ]);
    stop();
    expect(hub.watched('b')).toBe(false);
  });
});
