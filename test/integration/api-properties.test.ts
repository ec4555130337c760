import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors/codes.js';
import { createDatabase } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const cluster = inject('pgClusters')[0];
const RUNS = 60;

/** Every route with a body, and the stored records it could touch. */
const BODY_ROUTES = [
  ['POST', '/v1/connections'],
  ['PUT', '/v1/connections/base'],
  ['POST', '/v1/pipelines'],
  ['PUT', '/v1/pipelines/base-p'],
  ['PUT', '/v1/pipelines/base-p/state'],
  ['POST', '/v1/pipelines/base-p/backfill'],
  ['POST', '/v1/pipelines/base-p/schema/approve'],
  ['POST', '/v1/pipelines/base-p/schema/reject'],
] as const;

const GET_ROUTES = [
  '/v1/connections',
  '/v1/connections/base',
  '/v1/pipelines',
  '/v1/pipelines/base-p',
  '/v1/pipelines/base-p/metrics',
  '/v1/pipelines/base-p/progress',
  '/v1/pipelines/base-p/runs',
  '/v1/pipelines/base-p/schema/proposed',
  '/v1/health',
  '/v1/workers',
] as const;

/** Percent-encodes every UTF-8 byte (a lone surrogate becomes U+FFFD, as any client would send it). */
const pct = (text: string) =>
  [...Buffer.from(text, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

/** Strings a careless or hostile caller sends: quotes, SQL, control characters, long runs, odd Unicode. */
const nastyString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    "'; DROP TABLE connections;--",
    'a"; DROP TABLE x;--',
    'x\u0000y',
    'line\nbreak',
    'a'.repeat(1000),
    '../../etc/passwd',
    '%00',
    '\uD800',
    'public.t; SELECT pg_sleep(10)',
    'public."x"',
    'postgres://u@h/db?sslrootcert=/dev/zero&sslmode=verify-full',
    'postgres://postgres@/postgres?host=/tmp',
  ),
);

/** Any JSON a client could send, deep and wide, with nasty strings at the leaves. */
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(
      fc.oneof(
        nastyString,
        fc.constantFrom('name', 'type', 'dsn', 'source', 'sink', 'state', 'tables', 'tls'),
      ),
      tie('value'),
      { maxKeys: 5 },
    ),
  ),
})).value;

/** Bodies shaped almost like the real ones, each with at least one bad field. */
const nearlyValid = fc.oneof(
  fc.record({ name: nastyString, type: fc.constant('postgres'), dsn: nastyString }),
  fc.record({
    name: fc.constant('p-new'),
    source: fc.record({
      connection: fc.constant('base'),
      // A random name may be a valid one: an empty name among them keeps the body a bad one.
      tables: fc.array(nastyString, { maxLength: 3 }).map((names) => [...names, '']),
    }),
    sink: fc.record({ connection: fc.constant('base') }),
  }),
  fc.record({ state: nastyString }),
  fc.record({ tables: fc.array(nastyString, { maxLength: 3 }) }),
  fc.record({
    name: fc.constant('c-new'),
    type: fc.constant('postgres'),
    dsn: fc
      .tuple(
        fc.constantFrom(
          'passfile',
          'service',
          'servicefile',
          'sslcrl',
          'options',
          'host',
          'hostaddr',
          'replication',
        ),
        nastyString,
      )
      .map(([k, v]) => `postgres://u@h/db?${k}=${pct(v)}`),
  }),
);

describe('every endpoint under hostile input', () => {
  let service: TestService;
  let before: string;

  async function raw(method: string, path: string, body?: string | Uint8Array, type = 'application/json') {
    const res = await fetch(`${service.url}${path}`, {
      method,
      // State-changing calls declare JSON even without a body, as every client of the service does.
      headers: body === undefined && ['GET', 'HEAD'].includes(method) ? {} : { 'content-type': type },
      body,
    });
    const text = await res.text();
    return { status: res.status, text };
  }

  /** The answer is a documented 4xx with `{error, code}` whose code matches the status. */
  function expectClientError(res: { status: number; text: string }, context: string) {
    const message = `${context.slice(0, 200)} → ${res.status} ${res.text.slice(0, 300)}`;
    expect(res.status, message).toBeGreaterThanOrEqual(400);
    expect(res.status, message).toBeLessThan(500);
    const body = JSON.parse(res.text);
    expect(Object.keys(body).sort(), message).toEqual(['code', 'error']);
    expect(typeof body.error, message).toBe('string');
    expect(ERROR_CODES[body.code as keyof typeof ERROR_CODES], message).toBe(res.status);
  }

  /** What is stored, without the fields that move on their own. */
  async function storedState(): Promise<string> {
    const parts = await Promise.all(['/v1/connections', '/v1/pipelines/base-p'].map((p) => raw('GET', p)));
    return JSON.stringify(parts.map((p) => JSON.parse(p.text)));
  }

  beforeAll(async () => {
    service = await startTestService(
      testConfig(await createDatabase(cluster?.adminUrl as string, 'api_properties')),
    );
    // Unreachable on purpose: nothing here may depend on a database answering.
    await service.request('POST', '/v1/connections', {
      name: 'base',
      type: 'postgres',
      dsn: 'postgres://u:pw@127.0.0.1:1/db',
    });
    await service.request('POST', '/v1/pipelines', {
      name: 'base-p',
      source: { connection: 'base', tables: ['public.t'] },
      sink: { connection: 'base', properties: { target_schema: 'copy' } },
    });
    before = await storedState();
  });
  afterAll(() => service?.stop());

  it.each(BODY_ROUTES)('%s %s answers any JSON with a documented 4xx', async (method, path) => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(anyJson, nearlyValid), async (body) => {
        const res = await raw(method, path, JSON.stringify(body));
        // A body that happens to be valid may succeed; nothing may fail on the server's side.
        if (res.status < 300) return;
        expectClientError(res, `${method} ${path} ${JSON.stringify(body).slice(0, 200)}`);
      }),
      { numRuns: RUNS },
    );
  });

  it.each(BODY_ROUTES)(
    '%s %s refuses bodies that are not JSON, too deep or too large',
    async (method, path) => {
      const bodies: [string, string | Uint8Array][] = [
        ['invalid UTF-8', new Uint8Array([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])],
        ['truncated', '{"name": "x", "dsn": '],
        ['nested 100,000 deep', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
        ['nested objects', `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`],
        ['over the size limit', JSON.stringify({ name: 'x', dsn: 'a'.repeat(2 * 1024 * 1024) })],
        ['a bare string', '"start"'],
        ['empty', ''],
      ];
      for (const [what, body] of bodies)
        expectClientError(await raw(method, path, body), `${method} ${path} ${what}`);
      expectClientError(await raw(method, path, '{}', 'text/plain'), `${method} ${path} text/plain`);
    },
  );

  it('answers any name in a path with 400 or 404, never touching the stored records', async () => {
    const paths = [
      '/v1/connections/',
      '/v1/pipelines/',
      '/v1/pipelines/{}/state',
      '/v1/pipelines/{}/progress',
    ];
    await fc.assert(
      fc.asyncProperty(
        nastyString.filter((n) => n !== 'base' && n !== 'base-p' && n !== ''),
        fc.constantFrom(...paths),
        fc.constantFrom('GET', 'DELETE', 'PUT'),
        async (name, template, method) => {
          const encoded = pct(name);
          const path = template.includes('{}') ? template.replace('{}', encoded) : `${template}${encoded}`;
          const res = await raw(method, path, method === 'PUT' ? '{"state":"start"}' : undefined);
          expectClientError(res, `${method} ${path}`);
          expect([400, 404, 405, 422]).toContain(res.status);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('refuses unknown query parameters on every route', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...GET_ROUTES),
        fc.string({ minLength: 1, maxLength: 20 }).filter((k) => k !== 'force'),
        nastyString,
        async (path, key, value) => {
          const query = `${pct(key)}=${pct(value)}`;
          const res = await raw('GET', `${path}?${query}`);
          expectClientError(res, `GET ${path}?${query}`);
          expect(res.status).toBe(400);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('left the stored records as they were', async () => {
    expect(await storedState()).toBe(before);
  });
});
