import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer, type Server, type TLSSocket } from 'node:tls';
import amqp, { type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectionSecrets } from '../../src/connections/connection-secrets.js';
import { NO_LOCAL_ACCESS } from '../../src/connections/local-access.js';
import type { Sink } from '../../src/core/sink.js';
import { isUnreachable } from '../../src/runtime/error-kinds.js';
import { rabbitmqConnectionType } from '../../src/sinks/rabbitmq/rabbitmq-connection-type.js';
import { createRabbitmqSink } from '../../src/sinks/rabbitmq/rabbitmq-sink.js';
import { memorySinkState } from '../support/memory-sink-state.js';
import { col, tableOf } from '../support/table-schemas.js';
import { makeTestCertificates, type TestCertificates } from '../support/tls-certs.js';

const items = tableOf([col('id', 'integer', { isKey: true })], ['id'], { schema: 'public', table: 'items' });

/**
 * `amqps://` against a TLS front (a certificate for `localhost` from a throw-away CA) to the
 * plain broker of this machine: the server is verified by the given CA, its name is checked, and
 * the client certificate is sent.
 */
describe('rabbitmq sink over TLS', () => {
  let certs: TestCertificates;
  let front: Server;
  let port: number;
  const sockets = new Set<Socket>();
  /** Common names of the client certificates the front was shown. */
  const clientNames: string[] = [];
  let admin: ChannelModel;
  const exchange = `test.tls.${randomUUID().slice(0, 8)}`;
  const opened: Sink[] = [];

  beforeAll(async () => {
    certs = makeTestCertificates('replicator-client');
    front = createServer(
      {
        cert: readFileSync(join(certs.dir, 'server.crt')),
        key: readFileSync(join(certs.dir, 'server.key')),
        ca: certs.ca,
        requestCert: true,
        rejectUnauthorized: false,
      },
      (client: TLSSocket) => {
        const peer = client.getPeerCertificate();
        if (peer?.subject?.CN) clientNames.push(String(peer.subject.CN));
        const broker = createConnection(5672, '127.0.0.1');
        for (const socket of [client, broker]) {
          sockets.add(socket);
          socket.on('error', () => undefined);
          socket.on('close', () => {
            client.destroy();
            broker.destroy();
          });
        }
        client.pipe(broker);
        broker.pipe(client);
      },
    );
    front.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    port = (front.address() as AddressInfo).port;
    admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  });
  afterAll(async () => {
    for (const sink of opened) await sink.close();
    const channel = await admin.createChannel();
    await channel.deleteExchange(exchange);
    await admin.close();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => front.close(resolve));
  });

  async function open(dsn: string, tls: ConnectionSecrets['tls']) {
    const settings = await rabbitmqConnectionType.settings(dsn, { password: 'guest', tls }, NO_LOCAL_ACCESS);
    const sink = createRabbitmqSink({
      pipelineId: randomUUID(),
      connection: settings,
      properties: { exchange, mandatory: 'false' },
      state: memorySinkState(),
    });
    opened.push(sink);
    await sink.open([items]);
    return sink;
  }

  it('verifies the server by the given CA and its name, and sends the client certificate', async () => {
    const sink = await open(`amqps://guest@localhost:${port}/`, {
      ca_cert: certs.ca,
      client_cert: certs.clientCert,
      client_key: certs.clientKey,
    });
    await sink.applyBatch({
      changes: [
        {
          op: 'insert',
          table: items,
          after: { id: '1' },
          commitLsn: 0x1000n,
          xid: 1,
          commitTime: '2024-05-01T12:00:00Z',
        },
      ],
      commitLsn: 0x1010n,
      epoch: 1,
    });
    expect(await sink.readCheckpoint()).toEqual({ lsn: 0x1010n, epoch: 1 });
    expect(clientNames).toContain('replicator-client');
  });

  it.each([
    ['no CA (the platform CAs do not know this one)', `localhost`, {}],
    ['another CA', 'localhost', { ca: 'other' }],
    ['an address the certificate does not name', '127.0.0.1', { ca: 'ca' }],
  ])('refuses a server it cannot verify: %s', async (_why, host, which) => {
    const tls = 'ca' in which ? { ca_cert: which.ca === 'ca' ? certs.ca : certs.otherCa } : {};
    const error = (await open(`amqps://guest@${host}:${port}/`, tls).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).toMatch(
      new RegExp(
        `^cannot connect to RabbitMQ at ${host.replaceAll('.', '\\.')}:${port} \\(vhost /\\): .*(certificate|altnames)`,
        'i',
      ),
    );
    // Not an outage: a certificate that does not verify is retried a bounded number of times.
    expect(isUnreachable(error)).toBe(false);
  });
});
