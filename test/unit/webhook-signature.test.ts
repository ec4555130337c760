import { createHmac, timingSafeEqual } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signatureHeader } from '../../src/sinks/webhook/signature.js';

/** A receiver's check, as docs/sinks/webhook.md shows it: written apart from the signing code on purpose. */
function verify(secret: string, header: string, body: string, now: number, toleranceS = 300): boolean {
  const fields = new Map<string, string[]>();
  for (const part of header.split(',')) {
    const [k, v] = part.split('=', 2);
    if (k && v) fields.set(k, [...(fields.get(k) ?? []), v]);
  }
  const t = Number(fields.get('t')?.[0]);
  if (!Number.isInteger(t) || Math.abs(now - t) > toleranceS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return (fields.get('v1') ?? []).some((v) => {
    const given = Buffer.from(v, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

describe('webhook signature', () => {
  const secret = 'whsec-0123456789abcdef';
  const body = '{"events":[{"id":"0/1/public/t/0"}]}';

  it('is t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
    const header = signatureHeader(secret, 1_700_000_000, body);
    expect(header).toBe(
      `t=1700000000,v1=${createHmac('sha256', secret).update(`1700000000.${body}`).digest('hex')}`,
    );
    expect(header).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  it('verifies with the secret, and not with another body, secret or an old timestamp', () => {
    const header = signatureHeader(secret, 1_700_000_000, body);
    expect(verify(secret, header, body, 1_700_000_010)).toBe(true);
    expect(verify(secret, header, `${body} `, 1_700_000_010)).toBe(false);
    expect(verify('another-secret-of-16+', header, body, 1_700_000_010)).toBe(false);
    expect(verify(secret, header, body, 1_700_000_000 + 301)).toBe(false);
    // The timestamp is signed: moving it forward breaks the signature.
    expect(verify(secret, header.replace('t=1700000000', 't=1700000300'), body, 1_700_000_300)).toBe(false);
  });

  it('signs bytes, not characters: a non-ASCII body verifies as sent', () => {
    const text = '{"events":[{"after":{"name":"Zoë ☃"}}]}';
    const header = signatureHeader(secret, 42, text);
    expect(verify(secret, header, Buffer.from(text, 'utf8').toString('utf8'), 42)).toBe(true);
  });
});
