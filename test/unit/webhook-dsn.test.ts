import { describe, expect, it } from 'vitest';
import { maskDsn } from '../../src/connections/dsn.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { AppError } from '../../src/errors/app-error.js';
import { findConnectionType } from '../../src/sinks/registry.js';
import { webhookConnectionType } from '../../src/sinks/webhook/webhook-connection-type.js';
import { parseWebhookDsn, webhookEndpointOf } from '../../src/sinks/webhook/webhook-dsn.js';

const SECRET = 'whsec-0123456789abcdef';
const PRIVATE = { ...NO_LOCAL_ACCESS, webhookAllowPrivate: true };

function refusal(dsn: string, policy = NO_LOCAL_ACCESS): AppError {
  try {
    parseWebhookDsn(dsn, policy);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    expect(e.code).toBe('INVALID_DSN');
    expect(e.message).not.toContain(SECRET);
    return e;
  }
  throw new Error(`accepted ${JSON.stringify(dsn)}`);
}

describe('webhook DSN', () => {
  it('takes the secret out of the URL, keeping the other parameters as written', () => {
    const dsn = parseWebhookDsn(
      `https://Hooks.Example.com:8443/in/replicator?a=1&secret=${SECRET}&b=x%20y`,
      NO_LOCAL_ACCESS,
    );
    expect(dsn).toEqual({
      url: 'https://hooks.example.com:8443/in/replicator?a=1&b=x%20y',
      endpoint: 'https://hooks.example.com:8443',
      host: 'hooks.example.com',
      reach: { allowPrivate: false, https: true },
      password: SECRET,
      sslpassword: undefined,
      publicDsn: 'https://hooks.example.com:8443/in/replicator?a=1&b=x%20y',
    });
    expect(parseWebhookDsn(`https://h.example.com/x?secret=${SECRET}`, NO_LOCAL_ACCESS).publicDsn).toBe(
      'https://h.example.com/x',
    );
  });

  it('decodes a percent-encoded secret, and reads it from the user part as the API shows it back', () => {
    const raw = 'a&b=c/d+e%f ghijklmnop';
    expect(
      parseWebhookDsn(`https://h.example.com/?secret=${encodeURIComponent(raw)}`, NO_LOCAL_ACCESS).password,
    ).toBe(raw);
    const shown = maskDsn('https://h.example.com/x', { password: true, sslpassword: false });
    expect(shown).toBe('https://:****@h.example.com/x');
    const back = parseWebhookDsn(shown, NO_LOCAL_ACCESS);
    expect([back.password, back.publicDsn]).toEqual(['****', 'https://h.example.com/x']);
    expect(parseWebhookDsn('https://h.example.com/x?secret=****', NO_LOCAL_ACCESS).password).toBe('****');
    expect(parseWebhookDsn(`https://:${SECRET}@h.example.com/x`, NO_LOCAL_ACCESS).password).toBe(SECRET);
  });

  it.each([
    ['not a url', /must be a URL/],
    ['ftp://h.example.com/', /scheme must be https/],
    ['http://h.example.com/', /plain http:\/\/ is allowed only to internal hosts/],
    ['https://h.example.com/#frag', /fragment/],
    ['https://h.example.com/#', /fragment/],
    [`https://user:${SECRET}@h.example.com/`, /user name: HTTP Basic/],
    ['https://h.example.com:0/', /port/],
    [`https://h.example.com/?secret=${SECRET}&secret=${SECRET}`, /more than once/],
    [`https://h.example.com/?Secret=${SECRET}`, /lower case/],
    [`https://:${SECRET}@h.example.com/?secret=${SECRET}`, /both in the user part and in the query/],
    ['https://h.example.com/?secret=short', /16 to 1024 characters/],
    [`https://h.example.com/?secret=${SECRET}%0A`, /control character/],
    ['https://h.example.com/?secret=%E0%A4%A', /not valid percent-encoding/],
    [`https://h.example.com/\n?secret=${SECRET}`, /control character/],
  ])('refuses %j', (dsn, why) => {
    expect(refusal(dsn).message).toMatch(why);
  });

  it.each([
    'https://127.0.0.1/',
    'https://127.0.0.1./',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://0177.0.0.1/',
    'https://127.1/',
    'https://10.0.0.1/',
    'https://172.16.5.4/',
    'https://192.168.0.1/',
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/',
    'https://0.0.0.0/',
    'https://224.0.0.1/',
    'https://255.255.255.255/',
    'https://[::1]/',
    'https://[::]/',
    'https://[fe80::1]/',
    'https://[fd00::1]/',
    'https://[::ffff:127.0.0.1]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://[::127.0.0.1]/',
    'https://[64:ff9b::7f00:1]/',
    'https://localhost/',
    'https://localhost./',
    'https://LocalHost:8080/',
    'https://ⓛocalhost/',
    'https://a.localhost/',
    'https://metadata/',
    'https://metadata.google.internal/computeMetadata/v1/',
    'https://printer.local/',
  ])('refuses the internal host of %s', (dsn) => {
    expect(refusal(`${dsn}?secret=${SECRET}`).message).toMatch(/host/);
  });

  it('lets the operator allow internal hosts, and http to them', () => {
    for (const dsn of [
      'http://127.0.0.1:8080/hook',
      'https://localhost/hook',
      'http://localhost:9000/',
      'http://[fd00::5]/',
      'http://receiver/',
      'http://hooks.example.com/',
    ]) {
      expect(parseWebhookDsn(dsn, PRIVATE).publicDsn).toBe(new URL(dsn).href);
    }
    expect(parseWebhookDsn('http://10.1.2.3/', PRIVATE).reach).toEqual({ allowPrivate: true, https: false });
    // A public address over http, the metadata service and unspecified addresses stay refused.
    expect(refusal('http://8.8.8.8/', PRIVATE).message).toMatch(/use https/);
    expect(refusal('https://169.254.169.254/', PRIVATE).message).toMatch(/never/);
    expect(refusal('http://[::ffff:169.254.169.254]/', PRIVATE).message).toMatch(/never/);
    expect(refusal('http://0.0.0.0:8080/', PRIVATE).message).toMatch(/never/);
  });

  it('binds a stored secret to the whole URL', () => {
    const a = webhookEndpointOf('https://h.example.com/a?x=1');
    expect(webhookEndpointOf('https://H.example.com:443/a?x=1')).toBe(a);
    expect(webhookEndpointOf('https://h.example.com/b?x=1')).not.toBe(a);
    expect(webhookEndpointOf('https://h.example.com/a?x=2')).not.toBe(a);
    expect(webhookEndpointOf('https://evil.example.com/a?x=1')).not.toBe(a);
    expect(webhookEndpointOf('::bad')).not.toBe(webhookEndpointOf('::bad2'));
  });
});

describe('webhook connection type', () => {
  const type = webhookConnectionType;

  it('is registered as a sink-only type', () => {
    expect(findConnectionType('webhook')).toBe(type);
    expect(type.roles).toEqual(['sink']);
  });

  it('needs a signing secret, and refuses TLS material on http', () => {
    const withSecret = type.checkDsn(`https://h.example.com/?secret=${SECRET}`, NO_LOCAL_ACCESS);
    expect(() => type.checkTls(withSecret, { password: SECRET, tls: {} })).not.toThrow();
    const without = type.checkDsn('https://h.example.com/', NO_LOCAL_ACCESS);
    expect(() => type.checkTls(without, { tls: {} })).toThrow(/needs a signing secret/);
    const plain = type.checkDsn('http://127.0.0.1/', PRIVATE);
    expect(() => type.checkTls(plain, { password: SECRET, tls: { ca_cert: 'x' } })).toThrow(
      /tls\.ca_cert: is given but the DSN does not encrypt/,
    );
  });

  it('makes settings from the stored DSN, checked again against the policy of now', async () => {
    const settings = await type.settings(
      'https://h.example.com/in?a=1',
      { password: SECRET, tls: {} },
      NO_LOCAL_ACCESS,
    );
    expect(settings).toEqual({
      url: 'https://h.example.com/in?a=1',
      endpoint: 'https://h.example.com',
      secret: SECRET,
      reach: { allowPrivate: false, https: true },
      tls: {},
    });
    // The operator withdrew private access since the connection was saved.
    await expect(
      type.settings('http://127.0.0.1:9/', { password: SECRET, tls: {} }, NO_LOCAL_ACCESS),
    ).rejects.toThrow(/scheme must be https/);
  });
});
