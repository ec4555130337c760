import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import { findSinkKind } from '../../src/sinks/registry.js';
import { parseWebhookSinkProperties } from '../../src/sinks/webhook/config.js';
import {
  excerptOf,
  RETRY_AFTER_CAP_MS,
  requestFailed,
  retryAfterMs,
  statusFailed,
} from '../../src/sinks/webhook/delivery-errors.js';

describe('webhook sink properties', () => {
  it('defaults to requests of up to 5000 events and 1 MiB', () => {
    expect(parseWebhookSinkProperties({})).toEqual({
      timeoutMs: 10_000,
      maxAttempts: 5,
      batch: { maxEvents: 5000, maxBytes: 1024 * 1024, maxWaitMs: 0 },
    });
    expect(
      parseWebhookSinkProperties({ timeout_ms: '2500', max_attempts: '1', batch_max_bytes: '4096' }),
    ).toMatchObject({ timeoutMs: 2500, maxAttempts: 1, batch: { maxBytes: 4096 } });
    expect(findSinkKind('webhook')?.properties.map((p) => p.key)).toEqual([
      'timeout_ms',
      'max_attempts',
      'batch_max_events',
      'batch_max_bytes',
      'batch_max_wait_ms',
    ]);
  });

  it.each([
    [{ timeout_ms: '50' }, 'sink.properties.timeout_ms'],
    [{ max_attempts: '0' }, 'sink.properties.max_attempts'],
    [{ max_attempts: '21' }, 'sink.properties.max_attempts'],
    [{ batch_max_bytes: '10' }, 'sink.properties.batch_max_bytes'],
    [{ headers: 'x' }, 'sink.properties.headers'],
  ])('refuses %j on %s', (props, field) => {
    try {
      parseWebhookSinkProperties(props as Record<string, string>);
      throw new Error('accepted');
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).details?.field).toBe(field);
    }
  });
});

describe('webhook delivery errors', () => {
  const endpoint = 'https://h.example.com';

  it('counts a receiver that is down or busy as unreachable, retried in the batch', () => {
    for (const status of [408, 429, 502, 503, 504]) {
      const error = statusFailed(endpoint, status, undefined, Buffer.alloc(0));
      expect([error.code, error.retryHere, isUnreachable(error)]).toEqual([
        'WEBHOOK_UNAVAILABLE',
        true,
        true,
      ]);
    }
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']) {
      const error = requestFailed(endpoint, Object.assign(new Error('x'), { code }));
      expect([error.code, error.retryHere, isUnreachable(error)]).toEqual([
        'WEBHOOK_UNAVAILABLE',
        true,
        true,
      ]);
    }
  });

  it('fails other answers for a person to look at: 4xx at once, 5xx after the attempts, 3xx never followed', () => {
    const rejected = statusFailed(endpoint, 400, undefined, Buffer.from('bad'));
    expect([rejected.retryHere, isUnreachable(rejected)]).toEqual([false, false]);
    expect(rejected.message).toBe('webhook https://h.example.com answered 400: bad');
    const crashed = statusFailed(endpoint, 500, undefined, Buffer.alloc(0));
    expect([crashed.retryHere, isUnreachable(crashed)]).toEqual([true, false]);
    const moved = statusFailed(endpoint, 301, undefined, Buffer.alloc(0));
    expect([moved.retryHere, moved.message]).toEqual([
      false,
      'webhook https://h.example.com answered 301 (redirects are not followed: give the final URL in the DSN)',
    ]);
    const unknownName = requestFailed(endpoint, Object.assign(new Error('nope'), { code: 'ENOTFOUND' }));
    expect([unknownName.retryHere, isUnreachable(unknownName)]).toEqual([false, false]);
  });

  it('reads Retry-After as seconds or a date, capped', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(['2'], now)).toBe(2000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:05 GMT', now)).toBe(0);
    expect(retryAfterMs('99999', now)).toBe(RETRY_AFTER_CAP_MS);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it('shows a short, printable excerpt of an answer, never all of it', () => {
    expect(excerptOf(Buffer.from('line 1\r\nline\u0000 2\u001b[31m'))).toBe('line 1 line 2 [31m');
    const long = excerptOf(Buffer.from('x'.repeat(5000)));
    expect(long.length).toBe(201);
    expect(long.endsWith('…')).toBe(true);
  });
});
