import { randomBytes } from 'node:crypto';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { Redis } from 'ioredis';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { acquireInstance, releaseInstance } from '../../src/sinks/duckdb/instances.js';
import { EDGE_COLUMNS, edgesSql, float4, intervalParts, micros, type Read } from '../support/edge-values.js';
import { rawElements, rawMembers } from '../support/raw-json.js';
import { replicationDatabases, sqlOn, waitFor } from '../support/replication-fixture.js';
import { startTestService, type TestService, testConfig } from '../support/service.js';

const [cluster] = inject('pgClusters');

/** A timestamp(0) rounded up past the last second PostgreSQL can read: it prints, but is not read back. */
const UNREADABLE = '294276-12-31 23:59:59.999999';
const STREAMED = 100;

const SOURCE_SQL = `
  CREATE TABLE bounded (id int PRIMARY KEY, ia integer[]);
  INSERT INTO bounded VALUES (1, '[0:1]={1,2}');
  CREATE TABLE beyond_iso (id int PRIMARY KEY, d date, ts timestamp, tz timestamptz);
  INSERT INTO beyond_iso VALUES (1, '0044-03-15 BC', '0044-03-15 12:00:00 BC', '0044-03-15 12:00:00+00 BC'),
    (2, 'infinity', 'infinity', 'infinity'), (3, '-infinity', '-infinity', '-infinity'),
    (4, '12345-01-01', '12345-01-01 00:00:00', '12345-01-01 00:00:00+00');
  CREATE TABLE unreadable (id int PRIMARY KEY, ts timestamp(0));
  INSERT INTO unreadable VALUES (1, '${UNREADABLE}');
  CREATE TABLE unreadable_later (id int PRIMARY KEY, ts timestamp(0));`;

/** The arrays' values as JSON, as the envelope and DuckDB's LIST columns document them, by row. */
const ARRAYS_AS_JSON: Record<string, Read[]> = {
  ta: [[null, 'NULL', 'a,b', 'c"d', '', 'é'], []],
  ia: [[1, null, -2147483648], []],
  // A lower bound other than 1 cannot be a JSON array's: the source's text.
  fa: [
    [
      [1.5, null],
      [-0, 'Infinity'],
    ],
    '[0:1]={1.5,2}',
  ],
};

type Rows = Map<number, Record<string, Read>>;

const TABLES = ['edges', 'bounded', 'beyond_iso', 'unreadable', 'unreadable_later'];

/** Each column's text as the source prints it to the pipeline (UTC, shortest exact floats). */
async function sourceRows(url: string, table: string, columns: string[]): Promise<Rows> {
  const list = columns.map((c) => `${c}::text AS ${c}`).join(', ');
  const rows = await sqlOn(url, `SELECT id, ${list} FROM ${table} ORDER BY id`);
  return new Map(rows.map((r) => [r.id as number, r]));
}

const columnsOf: Record<string, string[]> = {
  edges: EDGE_COLUMNS.map((c) => c.name),
  bounded: ['ia'],
  beyond_iso: ['d', 'ts', 'tz'],
  unreadable: ['ts'],
  unreadable_later: ['ts'],
};

/** The row index (from 0) of an edges id: snapshot 1.., stream 101... */
const rowIndex = (id: number) => (id > STREAMED ? id - STREAMED : id) - 1;

/** Expects `actual` to hold the source's rows, each value as `expectOf` maps it, naming what differs. */
function compare(
  sink: string,
  table: string,
  source: Rows,
  actual: Rows,
  expectOf: (column: string, text: string, id: number) => Read,
): void {
  expect(
    [...actual.keys()].sort((a, b) => a - b),
    `${sink} ${table} ids`,
  ).toEqual([...source.keys()].sort((a, b) => a - b));
  for (const [id, row] of source) {
    for (const column of columnsOf[table] as string[]) {
      const text = row[column] as string | null;
      const expected = text === null ? null : expectOf(column, text, id);
      expect(actual.get(id)?.[column], `${sink} ${table} id ${id} column ${column} (source ${text})`).toEqual(
        expected,
      );
    }
  }
}

/** What the envelope documents each value becomes, compared as parsed JSON (JSON values: as text). */
function envelopeValue(column: string, text: string, id: number): Read {
  switch (column) {
    case 'i2':
    case 'f4':
    case 'f8':
      return Number(text);
    case 'ts':
      return text.replace(' ', 'T');
    case 'tz':
      return text.replace(' ', 'T').replace(/\+00$/, 'Z');
    case 'b':
      return Buffer.from(text.slice(2), 'hex').toString('base64');
    case 'ta':
    case 'fa':
      return ARRAYS_AS_JSON[column]?.[rowIndex(id)] as Read;
    case 'ia':
      return text.startsWith('[') ? text : (ARRAYS_AS_JSON.ia?.[rowIndex(id)] as Read);
    case 'bo':
      return text === 'true';
    default:
      return text;
  }
}

/** The rows of each table from a sink's envelopes, each value parsed, but JSON columns' as their text. */
function envelopeRows(messages: readonly string[]): Map<string, Rows> {
  const tables = new Map<string, Rows>();
  for (const message of messages) {
    const envelope = rawMembers(message);
    const table = (JSON.parse(envelope.get('table') as string) as string).replace('public.', '');
    const after = rawMembers(envelope.get('after') as string);
    const row: Record<string, Read> = {};
    for (const [name, raw] of after)
      row[name] = (name === 'j' || name === 'jb') && raw !== 'null' ? raw : JSON.parse(raw);
    if (!tables.has(table)) tables.set(table, new Map());
    tables.get(table)?.set(row.id as number, row);
  }
  return tables;
}

describe('edge values through every sink, snapshot and stream, value by value', () => {
  let service: TestService;
  let dbs: Awaited<ReturnType<typeof replicationDatabases>>;
  let source: string;
  let dataDir: string;
  let duckdbPath: string;
  let my: Connection;
  let redis: Redis;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let amqpModel: ChannelModel;
  let channel: Channel;
  let queue: string;
  const tag = randomBytes(5).toString('hex');
  const mysqlDb = `fidelity_${tag}`;
  const duckdbFile = `fidelity-${tag}.duckdb`;
  const exchange = `test.fidelity.${tag}`;
  const natsStream = `FIDELITY_${tag}`;
  const hooks: string[] = [];
  const rabbit: string[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      hooks.push(...rawElements(rawMembers(body).get('events') as string));
      res.writeHead(204).end();
    });
  });

  const pipelines: Record<
    string,
    { connection: string; tables: string[]; properties?: Record<string, string> }
  > = {};
  const pipeline = async (name: string) => (await service.request('GET', `/v1/pipelines/${name}`)).body;

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as { port: number }).port;
    dbs = await replicationDatabases(cluster?.adminUrl as string, 'fidelity');
    const url = new URL(dbs.source);
    url.searchParams.set('options', '-c TimeZone=UTC -c extra_float_digits=3');
    source = url.toString();
    const edges = edgesSql();
    await sqlOn(source, `${edges.create}; ${SOURCE_SQL}`);
    await sqlOn(source, edges.insert, edges.params);

    my = await mysql.createConnection({ host: '127.0.0.1', port: 3306, user: 'root', password: '' });
    await my.query(`CREATE DATABASE \`${mysqlDb}\``);
    redis = new Redis('redis://127.0.0.1:6379/0');
    nc = await connect({ servers: '127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
    amqpModel = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
    channel = await amqpModel.createChannel();
    await channel.assertExchange(exchange, 'topic', { durable: true });
    queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true })).queue;
    await channel.bindQueue(queue, exchange, 'public.*');
    await channel.consume(queue, (m) => m && rabbit.push(m.content.toString('utf8')), { noAck: true });

    dataDir = await mkdtemp(join(tmpdir(), 'fidelity-'));
    const config = testConfig(dbs.store, dataDir);
    config.connections.webhookAllowPrivate = true;
    service = await startTestService(config);
    duckdbPath = join(await realpath(dataDir), 'duckdb', duckdbFile);
    for (const [name, type, dsn] of [
      ['src', 'postgres', dbs.source],
      ['pg', 'postgres', dbs.sink],
      ['my', 'mysql', `mysql://root@127.0.0.1:3306/${mysqlDb}`],
      ['duck', 'duckdb', `duckdb:${duckdbFile}`],
      ['redis', 'redis', 'redis://127.0.0.1:6379/0'],
      ['nats', 'nats', 'nats://127.0.0.1:4222'],
      ['rabbit', 'rabbitmq', 'amqp://guest:guest@127.0.0.1:5672/%2F'],
      ['hook', 'webhook', `http://127.0.0.1:${port}/in?secret=fidelity-signing-secret`],
    ] as const) {
      const created = await service.request('POST', '/v1/connections', { name, type, dsn });
      if (created.status !== 201) throw new Error(`connection ${name}: ${JSON.stringify(created.body)}`);
    }
    const kept = ['edges', 'bounded', 'beyond_iso', 'unreadable_later'];
    const envelopes = ['edges', 'bounded', 'beyond_iso', 'unreadable', 'unreadable_later'];
    Object.assign(pipelines, {
      'to-pg': { connection: 'pg', tables: kept },
      // MySQL has no BC, infinite or five-digit-year dates: beyond_iso is refused on its own below.
      'to-my': { connection: 'my', tables: ['edges', 'bounded', 'unreadable_later'] },
      // A LIST column has no lower bound: bounded is refused on its own below.
      'to-duck': { connection: 'duck', tables: ['edges', 'beyond_iso', 'unreadable_later'] },
      'to-redis': {
        connection: 'redis',
        tables: envelopes,
        properties: { stream: `fidelity:${tag}:{table}` },
      },
      'to-nats': {
        connection: 'nats',
        tables: envelopes,
        properties: { subject: `fidelity${tag}.{schema}.{table}`, stream: natsStream },
      },
      'to-rabbit': { connection: 'rabbit', tables: envelopes, properties: { exchange } },
      'to-hook': { connection: 'hook', tables: envelopes },
      'pg-unreadable': { connection: 'pg', tables: ['unreadable'] },
      'my-unreadable': { connection: 'my', tables: ['unreadable'] },
      'duck-unreadable': { connection: 'duck', tables: ['unreadable'] },
      'duck-bounded': { connection: 'duck', tables: ['bounded'] },
      'my-beyond-iso': { connection: 'my', tables: ['beyond_iso'] },
    });
    await Promise.all(
      Object.entries(pipelines).map(async ([name, p]) => {
        const created = await service.request('POST', '/v1/pipelines', {
          name,
          source: { connection: 'src', tables: p.tables.map((t) => `public.${t}`) },
          sink: { connection: p.connection, properties: p.properties ?? {} },
        });
        if (created.status !== 201) throw new Error(`pipeline ${name}: ${JSON.stringify(created.body)}`);
        const started = await service.request('PUT', `/v1/pipelines/${name}/state`, { state: 'start' });
        if (started.status !== 200) throw new Error(`starting ${name}: ${JSON.stringify(started.body)}`);
      }),
    );
  }, 120_000);

  afterAll(async () => {
    // The Redis sink's own keys are named by the pipeline's id.
    const redisPipeline = await service?.request('GET', '/v1/pipelines/to-redis').catch(() => undefined);
    for (const name of Object.keys(pipelines))
      await service?.request('PUT', `/v1/pipelines/${name}/state`, { state: 'stop' });
    await service?.stop();
    await my?.query(`DROP DATABASE IF EXISTS \`${mysqlDb}\``);
    await my?.end();
    const keys = [
      ...((await redis?.keys(`fidelity:${tag}:*`)) ?? []),
      ...(redisPipeline?.body?.id ? await redis.keys(`replicator:${redisPipeline.body.id}:*`) : []),
    ];
    if (keys?.length) await redis.del(...keys);
    await redis?.quit();
    await jsm?.streams.delete(natsStream).catch(() => undefined);
    await nc?.close();
    await channel?.deleteExchange(exchange).catch(() => undefined);
    await amqpModel?.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await rm(dataDir, { recursive: true, force: true });
  });

  const failed = (name: string) =>
    waitFor(async () => {
      const p = await pipeline(name);
      return p.state === 'failed' ? (p.error as string) : undefined;
    }, `${name} to fail`);

  it('refuses, naming the table, the key and the column, what a sink documents it cannot hold', async () => {
    // PostgreSQL prints the rounded timestamp(0) but reads it back as out of range; so do the others.
    for (const name of ['pg-unreadable', 'my-unreadable', 'duck-unreadable']) {
      const error = await failed(name);
      expect(error, name).toMatch(/the sink refused the change of public\.unreadable with key \(id\)=\(1\)/);
      expect(error, name).toMatch(/column "ts"/);
    }
    expect(await failed('duck-bounded')).toMatch(
      /public\.bounded with key \(id\)=\(1\): ia: .*lower bound is not 1 cannot be written to a LIST column/,
    );
    expect(await failed('my-beyond-iso')).toMatch(
      /public\.beyond_iso with key \(id\)=\(\d\): column "(d|ts|tz)": .*(has no MySQL|outside the years 1 to 9999)/,
    );
  }, 90_000);

  const readers: Record<string, () => Promise<Map<string, Rows>>> = {
    'to-pg': async () =>
      new Map(
        await Promise.all(
          ['edges', 'bounded', 'beyond_iso'].map(async (t) => {
            const url = new URL(dbs.sink);
            url.searchParams.set('options', '-c TimeZone=UTC -c extra_float_digits=3');
            return [t, await sourceRows(url.toString(), t, columnsOf[t] as string[])] as const;
          }),
        ),
      ),
    'to-my': async () => {
      const query = async (sql: string) =>
        new Map(
          ((await my.query<RowDataPacket[]>(sql))[0] as Record<string, Read>[]).map((r) => [
            r.id as number,
            r,
          ]),
        );
      const asChar = (c: string) => `CAST(\`${c}\` AS CHAR) AS \`${c}\``;
      const edges = EDGE_COLUMNS.map(({ name }) => {
        if (name === 'f4' || name === 'f8') return `CAST(\`${name}\` + 0 AS CHAR) AS \`${name}\``;
        if (name === 'ts' || name === 'tz')
          return `DATE_FORMAT(\`${name}\`, '%Y-%m-%d %H:%i:%s.%f') AS \`${name}\``;
        if (name === 'b') return 'LOWER(HEX(`b`)) AS `b`';
        return asChar(name);
      });
      return new Map([
        ['edges', await query(`SELECT id, ${edges.join(', ')} FROM \`${mysqlDb}\`.edges`)],
        ['bounded', await query(`SELECT id, ${asChar('ia')} FROM \`${mysqlDb}\`.bounded`)],
      ]);
    },
    'to-duck': async () => {
      const instance = await acquireInstance(duckdbPath);
      const conn = await instance.connect();
      try {
        const query = async (sql: string) =>
          new Map(
            ((await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, Read>[]).map((r) => [
              Number(r.id),
              r,
            ]),
          );
        const edges = EDGE_COLUMNS.map(({ name }) => {
          if (name === 'f4' || name === 'f8') return `CAST("${name}" AS DOUBLE) AS "${name}"`;
          if (name === 'ts') return `strftime(ts, '%Y-%m-%d %H:%M:%S.%f') AS ts`;
          if (name === 'tz') return `strftime(timezone('UTC', tz), '%Y-%m-%d %H:%M:%S.%f') AS tz`;
          if (name === 'iv') return 'iv';
          if (name === 'b') return 'lower(hex(b)) AS b';
          if (name === 'ta' || name === 'ia') return `CAST(to_json("${name}") AS VARCHAR) AS "${name}"`;
          return `CAST("${name}" AS VARCHAR) AS "${name}"`;
        });
        const beyond = `SELECT id, CAST(d AS VARCHAR) AS d, CAST(ts AS VARCHAR) AS ts,
          CAST(timezone('UTC', tz) AS VARCHAR) AS tz FROM public.beyond_iso`;
        return new Map([
          ['edges', await query(`SELECT id, ${edges.join(', ')} FROM public.edges`)],
          ['beyond_iso', await query(beyond)],
        ]);
      } finally {
        conn.closeSync();
        await releaseInstance(duckdbPath);
      }
    },
    'to-redis': async () => {
      const messages: string[] = [];
      for (const table of TABLES)
        for (const [, fields] of await redis.xrange(`fidelity:${tag}:${table}`, '-', '+'))
          messages.push(fields[1] as string);
      return envelopeRows(messages);
    },
    'to-nats': async () => {
      const messages: string[] = [];
      const last = (await jsm.streams.info(natsStream)).state.last_seq;
      for (let seq = 1; seq <= last; seq++) {
        const stored = await jsm.streams.getMessage(natsStream, { seq });
        if (stored) messages.push(stored.string());
      }
      return envelopeRows(messages);
    },
    'to-rabbit': async () => envelopeRows(rabbit),
    'to-hook': async () => envelopeRows(hooks),
  };

  /** What each sink documents a source text becomes, as its reader above gives it. */
  const expectations: Record<string, (table: string) => (column: string, text: string, id: number) => Read> =
    {
      'to-pg': () => (_, text) => text,
      'to-my': () => (column, text) => {
        switch (column) {
          // MariaDB keeps no negative zero: -0 is 0 there.
          case 'f4':
            return String(float4(Number(text)) || 0);
          case 'f8':
            return String(Number(text) || 0);
          case 'ts':
          case 'tm':
            return micros(text);
          case 'tz':
            return micros(text.replace(/\+00$/, ''));
          case 'b':
            return text.slice(2);
          case 'bo':
            return text === 'true' ? '1' : '0';
          default:
            return text;
        }
      },
      'to-duck': (table) => (column, text, id) => {
        // DuckDB prints a BC date as `0044-03-15 (BC)`, a time after it; the UTC instant of a timestamptz.
        if (table === 'beyond_iso')
          return text.replace(/\+00( BC)?$/, '$1').replace(/^(\S+)(.*) BC$/, '$1 (BC)$2');
        switch (column) {
          case 'f4':
            return float4(Number(text));
          case 'f8':
            return Number(text);
          case 'ts':
            return micros(text);
          case 'tz':
            return micros(text.replace(/\+00$/, ''));
          case 'iv':
            return intervalParts(text);
          case 'b':
            return text.slice(2);
          case 'ta':
          case 'ia':
            return JSON.stringify(ARRAYS_AS_JSON[column]?.[rowIndex(id)]);
          default:
            return text;
        }
      },
    };

  /** A sink's value as the comparison reads it: a float4 as its float32, an interval as its parts. */
  const normalise = (sink: string, rows: Rows): Rows => {
    for (const row of rows.values()) {
      if (sink === 'to-my' && typeof row.f4 === 'string') row.f4 = String(float4(Number(row.f4)));
      if (sink === 'to-my' && typeof row.f8 === 'string') row.f8 = String(Number(row.f8));
      if (sink === 'to-duck' && typeof row.f4 === 'number') row.f4 = float4(row.f4);
      if (sink === 'to-duck' && row.iv && typeof row.iv === 'object') {
        const iv = row.iv as unknown as { months: number; days: number; micros: bigint };
        row.iv = { months: iv.months, days: iv.days, micros: String(iv.micros) };
      }
    }
    return rows;
  };

  const ENVELOPE_SINKS = ['to-redis', 'to-nats', 'to-rabbit', 'to-hook'];

  it('keeps every value of the snapshot and of the stream, in every sink, as each documents', async () => {
    for (const name of Object.keys(readers)) {
      await waitFor(
        async () =>
          (await service.request('GET', `/v1/pipelines/${name}/progress`)).body.phase === 'streaming',
        `${name} streaming`,
      );
    }
    // The same values again, through the stream.
    await sqlOn(
      source,
      `INSERT INTO edges SELECT id + ${STREAMED}, ${EDGE_COLUMNS.map((c) => c.name).join(', ')} FROM edges;
       INSERT INTO bounded VALUES (${STREAMED + 1}, '[-1:0]={3,NULL}');
       INSERT INTO beyond_iso SELECT id + ${STREAMED}, d, ts, tz FROM beyond_iso;`,
    );
    const expected = new Map(
      await Promise.all(
        TABLES.map(async (t) => [t, await sourceRows(source, t, columnsOf[t] as string[])] as const),
      ),
    );
    for (const [sink, read] of Object.entries(readers)) {
      const tables = pipelines[sink]?.tables.filter((t) => t !== 'unreadable_later') ?? [];
      const got = await waitFor(async () => {
        const rows = await read().catch(() => undefined);
        const complete = tables.every((t) => rows?.get(t)?.size === expected.get(t)?.size);
        return complete ? rows : undefined;
      }, `${sink} to hold every row`);
      for (const table of tables) {
        const expectOf = ENVELOPE_SINKS.includes(sink)
          ? (column: string, text: string, id: number) =>
              table === 'edges' || table === 'bounded' ? envelopeValue(column, text, id) : text
          : (expectations[sink]?.(table) as (column: string, text: string, id: number) => Read);
        compare(sink, table, expected.get(table) as Rows, normalise(sink, got?.get(table) as Rows), expectOf);
      }
    }
  }, 120_000);

  it('refuses a value the stream brings that the sink cannot read back, naming table, key and column', async () => {
    await sqlOn(source, `INSERT INTO unreadable_later VALUES (7, '${UNREADABLE}')`);
    for (const name of ['to-pg', 'to-my', 'to-duck']) {
      const error = await failed(name);
      expect(error, name).toMatch(
        /the sink refused the change of public\.unreadable_later with key \(id\)=\(7\)/,
      );
      expect(error, name).toMatch(/column "ts"/);
    }
    // A message sink sends the source's text, as it does any value ISO 8601 cannot write.
    const [{ ts }] = await sqlOn(source, 'SELECT ts::text AS ts FROM unreadable_later');
    for (const name of ENVELOPE_SINKS) {
      const rows = await waitFor(
        async () => (await readers[name]?.())?.get('unreadable_later'),
        `${name} to send the streamed row`,
      );
      expect(rows?.get(7)?.ts, name).toBe(ts);
    }
  }, 90_000);
});
