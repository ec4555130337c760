import { jetstreamManager } from '@nats-io/jetstream';
import { connect, createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { ChangeEvent, Row, TableSchema } from '../../src/core/change.js';
import { copyTextRows } from '../../src/core/copy-text.js';
import { parseLsn } from '../../src/core/lsn.js';
import { changeEnvelopes, envelopeText, readEnvelope } from '../../src/sinks/change-envelope.js';
import { parseNatsSinkProperties, subjectOf } from '../../src/sinks/nats/config.js';
import { ensureStream } from '../../src/sinks/nats/stream.js';
import { readTableSchemas } from '../../src/source/postgres/catalog.js';
import { NATS_URL } from '../nats-target.js';
import { backlogUpdatedId, type ReferenceInput, type SinkReference } from '../sink-reference.js';
import { runTag } from '../sink-target.js';
import { SNAPSHOT_TABLE } from '../snapshot-table.js';

/** Publications awaiting their ack at once: the NATS Go client's default for async publishes. */
const WINDOW = 4_000;
/** The bytes of WAL a backlog transaction takes, about: spaces the made-up commit positions. */
const WAL_PER_TRANSACTION = 400;

/** One message, ready to go: its payload encoded, its id the envelope's. */
interface Prepared {
  payload: Uint8Array;
  id: string;
}

const [SCHEMA, TABLE] = SNAPSHOT_TABLE.split('.') as [string, string];

/** The table's schema as the sink's source reads it, and its rows by COPY text, as the snapshot's are. */
async function readRows(url: string, where: string): Promise<{ table: TableSchema; rows: Row[] }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const [table] = await readTableSchemas(client, [{ schema: SCHEMA, table: TABLE }]);
    if (!table) throw new Error(`no table ${SNAPSHOT_TABLE} at the source`);
    const rows: Row[] = [];
    const copy = client.query(
      copyTo(`COPY (SELECT * FROM ${SNAPSHOT_TABLE} ${where} ORDER BY id) TO STDOUT`),
    );
    for await (const chunk of copyTextRows(copy, table.columns, 10_000)) rows.push(...chunk);
    return { table, rows };
  } finally {
    await client.end();
  }
}

/**
 * Publishes every message to `subject`, up to WINDOW awaiting their ack at once, and resolves once
 * every one is acknowledged by `stream`, as nats.go's PublishAsync does: each a plain publish whose
 * reply subject is a token under one inbox, the acks taken by one subscription to it. (The
 * client's `js.publish` makes a promise, a timer and an Error for each message, and goes at a
 * fifth of the speed in this process.)
 */
async function publishWindowed(
  nc: NatsConnection,
  subject: string,
  stream: string,
  messages: readonly Prepared[],
): Promise<void> {
  let inFlight = 0;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (done()) resolve();
        else wake = check;
      };
      check();
    });
  const inbox = createInbox();
  const subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, msg) => {
      inFlight--;
      if (error) failure ??= error;
      else if (msg.data.length === 0) failure ??= new Error(`no ack: status ${msg.headers?.code}`);
      else {
        const ack = msg.json<{ stream?: string; error?: { description: string } }>();
        if (ack.stream !== stream) failure ??= new Error(ack.error?.description ?? `stored in ${ack.stream}`);
      }
      const w = wake;
      wake = undefined;
      w?.();
    },
  });
  void nc.closed().then(() => {
    failure ??= new Error('the connection closed');
    wake?.();
  });
  try {
    let token = 0;
    for (const m of messages) {
      if (inFlight >= WINDOW) await until(() => failure !== undefined || inFlight <= WINDOW / 2);
      if (failure) break;
      inFlight++;
      const h = headers();
      h.set('Nats-Msg-Id', m.id);
      nc.publish(subject, m.payload, { reply: `${inbox}.${token++}`, headers: h });
    }
    await until(() => failure !== undefined || inFlight === 0);
    if (failure) throw failure;
  } finally {
    subscription.unsubscribe();
  }
}

const encoder = new TextEncoder();
const prepared = (envelope: { id: string }): Prepared => ({
  payload: encoder.encode(envelopeText(envelope as Parameters<typeof envelopeText>[0])),
  id: envelope.id,
});

/**
 * A JetStream publisher with many acks in flight: the same JSON envelopes as the sink's (built by
 * its own code, each with its id as `Nats-Msg-Id`), on a subject of the same form and length, into
 * a stream of its own created as the sink creates its (file storage, the same duplicate window).
 */
export function natsReference(): SinkReference {
  const tag = runTag();
  const config = parseNatsSinkProperties({ subject: `bench${tag}.{schema}.{table}`, stream: `BENCH_${tag}` });
  const subject = subjectOf(config, { schema: SCHEMA, table: TABLE });
  let nc: NatsConnection | undefined;
  let messages: Prepared[] = [];

  const load = async () => {
    if (!nc) throw new Error('the nats reference loads only what it prepared');
    await publishWindowed(nc, subject, config.stream, messages);
  };

  return {
    method: `JetStream async publishes as nats.go's PublishAsync makes them (one reply inbox, up to ${WINDOW.toLocaleString('en-US')} acks in flight, its default) of the sink's own envelopes, serialised beforehand, with Nats-Msg-Id, into a stream created as the sink's`,
    async prepareSnapshot(input: ReferenceInput) {
      const { table, rows } = await readRows(input.snapshotUrl, '');
      messages = rows.map((row) => prepared(readEnvelope(table, row)));
      nc = await connect({ servers: NATS_URL, noAsyncTraces: true });
      await ensureStream(await jetstreamManager(nc), config, [subject]);
    },
    loadSnapshot: load,
    async prepareDrain(input: ReferenceInput) {
      const { shape } = input;
      const { table, rows } = await readRows(
        input.backlogUrl,
        `WHERE id = ANY('{${Array.from({ length: shape.transactions }, (_, k) => backlogUpdatedId(shape, k + 1)).join(',')}}'::bigint[]) OR id > ${shape.rows}`,
      );
      const byId = new Map(rows.map((row) => [Number(row.id), row]));
      // Commit positions and times like the source's: the positions end at the source's current one.
      const client = new pg.Client({ connectionString: input.backlogUrl });
      await client.connect();
      const end = await client
        .query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
        .finally(() => client.end());
      const last = parseLsn(end.rows[0]?.lsn as string);
      const started = Date.now();
      const changes: ChangeEvent[] = [];
      for (let k = 1; k <= shape.transactions; k++) {
        const commitLsn = last - BigInt((shape.transactions - k) * WAL_PER_TRANSACTION);
        const ms = started + Math.floor(k / 10);
        const commitTime = `${new Date(ms).toISOString().slice(0, -1)}${String((k * 37) % 1000).padStart(3, '0')}Z`;
        const common = { table, commitLsn, xid: 1000 + k, commitTime };
        for (const [op, id] of [
          ['update', backlogUpdatedId(shape, k)],
          ['insert', shape.rows + k],
        ] as const) {
          const after = byId.get(id);
          if (!after) throw new Error(`the backlog has no row ${id}`);
          changes.push({ ...common, op, after });
        }
      }
      const { envelopes } = changeEnvelopes(changes, () => table, new Map());
      messages = envelopes.map(({ envelope }) => prepared(envelope));
    },
    loadDrain: load,
    async cleanUp() {
      messages = [];
      const conn = nc;
      nc = undefined;
      if (!conn) return;
      try {
        await (await jetstreamManager(conn)).streams.delete(config.stream).catch(() => undefined);
      } finally {
        await conn.close();
      }
    },
  };
}
