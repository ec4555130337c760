import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalAccessPolicy, NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import { type PostgresSecrets, pgClientConfig } from '../../src/connections/pg-client-config.js';
import { parsePostgresDsn } from '../../src/connections/postgres-dsn.js';
import { availableBinDirs, createDatabase, type PgCluster, startPgCluster } from '../support/pg-cluster.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certs.js';

const CERT_USER = 'certuser';

describe('TLS to a PostgreSQL server, with certificates given as PEM text', () => {
  let server: PgCluster;
  let certs: TestCertificates;
  let port: string;

  beforeAll(async () => {
    certs = makeTestCertificates(CERT_USER);
    const binaries = availableBinDirs()[0] as { binDir: string };
    server = await startPgCluster('tls', binaries.binDir, certs.serverSettings);
    port = new URL(server.adminUrl).port;
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    await admin.query(`CREATE ROLE ${CERT_USER} LOGIN`);
    await admin.end();
  });
  afterAll(() => server?.stop());

  /** Connects as the service would and tells whether the session is encrypted. */
  async function encrypted(
    dsn: string,
    secrets: Partial<PostgresSecrets> = {},
    policy: LocalAccessPolicy = NO_LOCAL_ACCESS,
  ): Promise<boolean> {
    const parsed = parsePostgresDsn(dsn, policy);
    const config = await pgClientConfig(parsed, { tls: {}, password: parsed.password, ...secrets }, policy);
    const client = new pg.Client(config);
    client.on('error', () => {});
    await client.connect();
    try {
      const { rows } = await client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
      return rows[0].ssl;
    } finally {
      await client.end();
    }
  }

  const url = (host: string, query: string, user = 'postgres') =>
    `postgres://${user}@${host}:${port}/postgres?${query}`;

  it('verify-full checks the chain against the given CA and the host name', async () => {
    expect(await encrypted(url('localhost', 'sslmode=verify-full'), { tls: { ca_cert: certs.ca } })).toBe(
      true,
    );
    await expect(
      encrypted(url('localhost', 'sslmode=verify-full'), { tls: { ca_cert: certs.otherCa } }),
    ).rejects.toThrow(/certificate/i);
    // Without a CA, only the platform's trusted CAs count: a private CA is refused.
    await expect(encrypted(url('localhost', 'sslmode=verify-full'))).rejects.toThrow(/certificate/i);
    await expect(
      encrypted(url('127.0.0.1', 'sslmode=verify-full'), { tls: { ca_cert: certs.ca } }),
    ).rejects.toThrow(/127\.0\.0\.1|altnames|hostname/i);
  });

  it('verify-ca checks the chain only; require encrypts; no sslmode does not', async () => {
    expect(await encrypted(url('127.0.0.1', 'sslmode=verify-ca'), { tls: { ca_cert: certs.ca } })).toBe(true);
    await expect(
      encrypted(url('127.0.0.1', 'sslmode=verify-ca'), { tls: { ca_cert: certs.otherCa } }),
    ).rejects.toThrow(/certificate/i);
    expect(await encrypted(url('127.0.0.1', 'sslmode=require'))).toBe(true);
    // require with a CA verifies the chain, as libpq does.
    await expect(
      encrypted(url('127.0.0.1', 'sslmode=require'), { tls: { ca_cert: certs.otherCa } }),
    ).rejects.toThrow(/certificate/i);
    expect(await encrypted(url('127.0.0.1', 'sslmode=disable'))).toBe(false);
    expect(await encrypted(`postgres://postgres@127.0.0.1:${port}/postgres`)).toBe(false);
  });

  it('authenticates with a client certificate, its key encrypted or not', async () => {
    const dsn = url('localhost', 'sslmode=verify-full', CERT_USER);
    const tls = { ca_cert: certs.ca, client_cert: certs.clientCert };
    expect(await encrypted(dsn, { tls: { ...tls, client_key: certs.clientKey } })).toBe(true);
    expect(
      await encrypted(dsn, {
        tls: { ...tls, client_key: certs.clientKeyEncrypted },
        sslpassword: certs.passphrase,
      }),
    ).toBe(true);
    await expect(encrypted(dsn, { tls: { ca_cert: certs.ca } })).rejects.toThrow(/certificate/i);
  });

  it('reads certificate files only inside the operator directory, never a FIFO or a link out of it', async () => {
    const tlsDir = join(certs.dir, 'operator');
    mkdirSync(tlsDir);
    writeFileSync(join(tlsDir, 'ca.pem'), certs.ca);
    spawnSync('mkfifo', [join(tlsDir, 'fifo.pem')]);
    symlinkSync('/etc/passwd', join(tlsDir, 'link.pem'));
    const policy = { ...NO_LOCAL_ACCESS, tlsFileDir: tlsDir };
    expect(await encrypted(url('localhost', 'sslmode=verify-full&sslrootcert=ca.pem'), {}, policy)).toBe(
      true,
    );
    // Opening the FIFO (no writer) would block for good: refused without a hang is the answer.
    for (const name of ['fifo.pem', 'link.pem', 'missing.pem']) {
      await expect(
        encrypted(url('localhost', `sslmode=verify-full&sslrootcert=${name}`), {}, policy),
      ).rejects.toMatchObject({ code: 'INVALID_DSN' });
    }
  });

  describe('through the API', () => {
    let service: TestService;
    beforeAll(async () => {
      const store = await createDatabase(server.adminUrl, 'tls_store');
      service = await startTestService(testConfig(store));
    });
    afterAll(() => service?.stop());

    it('stores the PEM text sealed, shows it masked, and connects with it', async () => {
      const created = await service.request('POST', '/v1/connections', {
        name: 'tls-src',
        type: 'postgres',
        dsn: url('localhost', 'sslmode=verify-full', CERT_USER),
        tls: { ca_cert: certs.ca, client_cert: certs.clientCert, client_key: certs.clientKey },
      });
      expect(created.status).toBe(201);
      expect(created.body.tls).toEqual({ ca_cert: '****', client_cert: '****', client_key: '****' });
      expect(JSON.stringify(created.body)).not.toContain('BEGIN');
      const store = new pg.Client({ connectionString: new URL('/tls_store', server.adminUrl).toString() });
      await store.connect();
      const { rows } = await store.query("SELECT * FROM connections WHERE name = 'tls-src'");
      await store.end();
      expect(JSON.stringify(rows)).not.toContain('BEGIN');

      // The pipeline's source check connects with the stored material: it reaches the server and
      // reports what the server lacks (a replication role), not a TLS failure.
      const pipeline = await service.request('POST', '/v1/pipelines', {
        name: 'tls',
        source: { connection: 'tls-src', tables: ['public.t'] },
        sink: { connection: 'tls-src' },
      });
      expect(pipeline.status).toBe(422);
      expect(pipeline.body.error).toMatch(/replication|REPLICATION/);
      expect(pipeline.body.error).not.toMatch(/certificate/i);
    });

    it('refuses to connect with a CA that did not sign the server certificate', async () => {
      await service.request('POST', '/v1/connections', {
        name: 'wrong-ca',
        type: 'postgres',
        dsn: url('localhost', 'sslmode=verify-full'),
        tls: { ca_cert: certs.otherCa },
      });
      const pipeline = await service.request('POST', '/v1/pipelines', {
        name: 'wrong-ca',
        source: { connection: 'wrong-ca', tables: ['public.t'] },
        sink: { connection: 'wrong-ca' },
      });
      expect(pipeline.status).toBe(422);
      expect(pipeline.body.error).toMatch(/certificate/i);
    });

    it('keeps masked material on update for the same endpoint, and checks what it is given', async () => {
      const kept = await service.request('PUT', '/v1/connections/tls-src', {
        type: 'postgres',
        dsn: url('localhost', 'sslmode=verify-full', CERT_USER),
        tls: { ca_cert: '****', client_cert: '****', client_key: '****' },
      });
      expect(kept.status).toBe(200);
      expect(kept.body.tls).toEqual({ ca_cert: '****', client_cert: '****', client_key: '****' });
      const moved = await service.request('PUT', '/v1/connections/tls-src', {
        type: 'postgres',
        dsn: url('elsewhere.example', 'sslmode=verify-full', CERT_USER),
        tls: { ca_cert: certs.ca, client_cert: certs.clientCert, client_key: '****' },
      });
      expect(moved).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(moved.body.error).toContain('tls.client_key');
      for (const [tls, message] of [
        [{ ca_cert: 'not pem' }, 'tls.ca_cert'],
        [{ ca_cert: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, 'tls.ca_cert'],
        [{ client_cert: certs.clientCert }, 'tls.client_key: is required'],
        [{ client_cert: certs.clientCert, client_key: certs.clientKeyEncrypted }, 'sslpassword'],
        [{ client_cert: certs.ca, client_key: certs.clientKey }, 'does not belong'],
      ] as const) {
        const res = await service.request('POST', '/v1/connections', {
          name: 'bad-tls',
          type: 'postgres',
          dsn: url('localhost', 'sslmode=verify-full'),
          tls,
        });
        expect(res).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
        expect(res.body.error).toContain(message);
      }
      const plain = await service.request('POST', '/v1/connections', {
        name: 'bad-tls',
        type: 'postgres',
        dsn: url('localhost', ''),
        tls: { ca_cert: certs.ca },
      });
      expect(plain).toMatchObject({ status: 422, body: { code: 'VALIDATION_FAILED' } });
      expect(plain.body.error).toContain('sslmode');
    });
  });
});
