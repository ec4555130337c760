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
});
