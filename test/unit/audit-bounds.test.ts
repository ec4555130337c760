import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../../src/audit/audit-event.js';
import { boundedEvent, MAX_DETAILS_CHARS, MAX_FIELD_CHARS } from '../../src/audit/event-limits.js';
import {
  RefusalThrottle,
  SUPPRESSED_ACTION,
  type SuppressedRefusals,
  suppressedEvent,
} from '../../src/audit/refusal-throttle.js';

const refusal = (address: string, action = 'connection.delete'): AuditEvent => ({
  actorType: 'anonymous',
  actorName: 'anonymous',
  action,
  outcome: 'denied',
  status: 401,
  sourceAddress: address,
});

describe('anonymous refusals', () => {
  it('keeps the first of a window, counts the rest, and writes one summary when the window ends', () => {
    let now = 1_000_000;
    const summaries: AuditEvent[] = [];
    const throttle = new RefusalThrottle((s: SuppressedRefusals) => summaries.push(suppressedEvent(s)), {
      perWindow: 3,
      windowMs: 60_000,
      now: () => now,
    });
    const kept = Array.from({ length: 100 }, () => throttle.admit('192.0.2.1', 'connection.delete')).filter(
      Boolean,
    );
    expect(kept).toHaveLength(3);
    // Another address, and another action from the same address, have their own allowance.
    expect(throttle.admit('192.0.2.2', 'connection.delete')).toBe(true);
    expect(throttle.admit('192.0.2.1', 'auth.login')).toBe(true);
    expect(summaries).toHaveLength(0);
    now += 60_000;
    throttle.flush();
    expect(summaries).toEqual([
      expect.objectContaining({
        action: SUPPRESSED_ACTION,
        sourceAddress: '192.0.2.1',
        details: expect.objectContaining({ suppressed: 97, refused_action: 'connection.delete' }),
      }),
    ]);
    expect(throttle.admit('192.0.2.1', 'connection.delete')).toBe(true);
  });

  it('shares one count among addresses beyond the number it tracks', () => {
    const throttle = new RefusalThrottle(() => {}, { perWindow: 1, maxAddresses: 2 });
    expect(throttle.admit('192.0.2.1', 'connection.delete')).toBe(true);
    expect(throttle.admit('192.0.2.2', 'connection.delete')).toBe(true);
    expect(throttle.admit('192.0.2.3', 'connection.delete')).toBe(true);
    expect(throttle.admit('192.0.2.4', 'connection.delete')).toBe(false);
  });
});

describe('the size of one event', () => {
  it('cuts long fields and details, and marks the cut', () => {
    const event = boundedEvent({
      ...refusal('192.0.2.1'),
      target: `pipeline:${'p'.repeat(10_000)}`,
      details: { email: 'e'.repeat(10_000), many: Array.from({ length: 500 }, (_, i) => `item ${i}`) },
    });
    expect(event.target?.length).toBe(MAX_FIELD_CHARS);
    expect(event.target).toMatch(/…\[truncated\]$/);
    expect(JSON.stringify(event.details).length).toBeLessThanOrEqual(MAX_DETAILS_CHARS);
    expect(event.details).toMatchObject({ truncated: true });
    const small = boundedEvent({ ...refusal('192.0.2.1'), details: { email: 'e'.repeat(1000) } });
    expect(small.details?.email).toMatch(/^e+…\[truncated\]$/);
  });
});

describe('text PostgreSQL refuses', () => {
  it('writes a NUL a caller sent as a visible escape', () => {
    const event = boundedEvent({
      ...refusal('192.0.2.1'),
      target: 'token:a\u0000b',
      details: { 'k\u0000': 'v\u0000' },
    });
    expect(event.target).toBe('token:a\\0b');
    expect(event.details).toEqual({ 'k\\0': 'v\\0' });
  });
});
