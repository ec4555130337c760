import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { pgClientConfigOfDsn } from '../../src/connections/pg-client-config.js';
import type { ChangeEvent } from '../../src/core/change.js';
import type { ChangeStream, SourceRelation, StreamItem } from '../../src/core/change-stream.js';
import type { Source } from '../../src/core/source.js';
import { SlotMissingError, TableNotReplicableError } from '../../src/core/source-errors.js';
import { findSourceKind } from '../../src/source/registry.js';
import { createDatabase } from '../support/pg-cluster.js';
import { waitFor } from '../support/wait-for.js';

const withTimeout = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms),
    ),
  ]);

async function text(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a stream's items up to and including the first commit that follows a change. */
async function nextTransaction(stream: ChangeStream): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for (;;) {
    const batch = await withTimeout(stream.next(), 15_000, 'stream items');
    if (batch === null) throw new Error('stream ended');
    for (const item of batch) {
      if (item.kind === 'idle') continue;
      items.push(item);
      if (item.kind === 'commit' && items.some((i) => i.kind === 'change')) return items;
    }
  }
}

const quiet = { debug() {}, info() {}, warn() {} };

const changesOf = (items: StreamItem[]): ChangeEvent[] =>
  items.flatMap((i) => (i.kind === 'change' ? [i.change] : []));

const clusters = inject('pgClusters');

describe.each(clusters)('the Source contract, PostgreSQL on $label', (cluster) => {
  const dbName = `source_contract_${cluster.label.replace(/\W/g, '_')}`;
  let url: string;
  let settings: pg.ClientConfig;
  let admin: pg.Client;
  const open: Source[] = [];
  const owned: string[] = [];

  const sql = (statement: string) => admin.query(statement);

  async function connected(connection: pg.ClientConfig = settings): Promise<Source> {
    const source = findSourceKind('postgres')?.create(connection) as Source;
    open.push(source);
    await source.connect();
    return source;
  }

  beforeAll(async () => {
    url = await createDatabase(cluster.adminUrl, dbName);
    settings = await pgClientConfigOfDsn(url);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  afterEach(async () => {
    const source = await connected();
    for (const id of owned.splice(0)) await source.dropOwned(id);
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  afterAll(async () => {
    await admin?.end();
  });

  it('checks the source, describes tables and tells which database it reads', async () => {
    await sql('CREATE TABLE described (id int PRIMARY KEY, name text NOT NULL)');
    const source = await connected();
    await expect(source.checkReady()).resolves.toBeUndefined();
    const [schema] = await source.describeTables([{ schema: 'public', table: 'described' }]);
    expect(schema).toMatchObject({ schema: 'public', table: 'described', keyColumns: ['id'] });
    expect(schema?.columns.map((c) => [c.name, c.typeName, c.nullable])).toEqual([
      ['id', 'integer', false],
      ['name', 'text', false],
    ]);
    await expect(source.describeTables([{ schema: 'public', table: 'absent' }])).rejects.toBeInstanceOf(
      TableNotReplicableError,
    );

    const again = await connected();
    const other = await connected(await pgClientConfigOfDsn(cluster.adminUrl));
    const identity = await source.identity();
    expect(identity).toMatch(new RegExp(`^\\d+/${dbName}$`));
    expect(await again.identity()).toBe(identity);
    expect(await other.identity()).not.toBe(identity);

    await source.close();
    await source.close();
    await expect(source.checkReady()).rejects.toThrow(/not connected/);
  });

  it('claims a slot with a snapshot, copies partitions in it and streams what came after', async () => {
    await sql('CREATE TABLE items (id int PRIMARY KEY, label text)');
    await sql("INSERT INTO items SELECT i, 'row ' || i FROM generate_series(1, 3) i");
    const source = await connected();
    const id = randomUUID();
    owned.push(id);
    const tables = [{ schema: 'public', table: 'items' }];
    const [table] = await source.describeTables(tables);
    if (!table) throw new Error('no schema');
    await source.publish(id, tables);

    // Only a pipeline that never streamed may get a new slot.
    await expect(source.claimSlot(id, { mayCreate: false, logger: quiet })).rejects.toBeInstanceOf(
      SlotMissingError,
    );
    await expect(source.slotStatus(id)).rejects.toBeInstanceOf(SlotMissingError);
    const claim = await source.claimSlot(id, { mayCreate: true, logger: quiet });
    expect(claim.position).toBeGreaterThan(0n);
    expect(claim.snapshot).toBeDefined();
    await sql("INSERT INTO items VALUES (4, 'after the slot')");

    const reader = await claim.snapshot?.openReader();
    if (!reader) throw new Error('no reader');
    const plan = await reader.planPartitions(table, { targetRows: 1_000, maxPartitions: 8 });
    expect(plan.partitions).toEqual([{ partitionId: '0', lower: null, upper: null }]);
    const copied = await text(reader.copyPartition(table, plan.partitions[0] as (typeof plan.partitions)[0]));
    expect(copied).toBe('1\trow 1\n2\trow 2\n3\trow 3\n');
    const seen = await reader.visibility();
    await reader.close();
    await reader.close();
    await claim.snapshot?.release();
    await claim.snapshot?.release();

    const stream = source.startStream(id, { from: claim.position });
    try {
      const first = await nextTransaction(stream);
      const [insert] = changesOf(first);
      expect(insert).toMatchObject({ op: 'insert', after: { id: '4', label: 'after the slot' } });
      expect(seen.sees(insert?.xid as number)).toBe(false);
      const commit = first.find((i) => i.kind === 'commit');
      if (commit?.kind !== 'commit') throw new Error('no commit');
      expect(commit.endLsn).toBeGreaterThan(claim.position);
      stream.ack(commit.endLsn);

      // A new shape comes as a relation item the source describes, with what rows already there hold.
      // A volatile default rewrites the table; a constant one is kept as the value of existing rows.
      await sql('ALTER TABLE items ADD COLUMN noise float8 DEFAULT random()');
      await sql("ALTER TABLE items ADD COLUMN kind text NOT NULL DEFAULT 'plain'");
      await sql('ALTER TABLE items ADD COLUMN note text');
      await sql("INSERT INTO items (id, label) VALUES (5, 'new shape')");
      const second = await nextTransaction(stream);
      const relation = second.find((i) => i.kind === 'relation')?.relation as SourceRelation;
      expect(relation).toMatchObject({ schema: 'public', table: 'items' });
      const described = await source.describeRelation(relation);
      expect(described?.columns.map((c) => [c.name, c.typeName, c.nullable])).toEqual([
        ['id', 'integer', false],
        ['label', 'text', true],
        ['noise', 'double precision', true],
        ['kind', 'text', false],
        ['note', 'text', true],
      ]);
      expect(described?.keyColumns).toEqual(['id']);
      const existing = await source.existingValues(relation, ['kind', 'note', 'noise']);
      expect(Object.fromEntries(existing)).toEqual({ kind: 'plain', note: null });
      await expect(
        source.describeRelation({ schema: 'public', table: 'items', relationId: 1, columns: [] }),
      ).rejects.toThrow(/not announced by a PostgreSQL change stream/);
      expect(stream.stats().transactions).toBeGreaterThanOrEqual(2);
    } finally {
      await stream.close();
    }

    const status = await source.slotStatus(id);
    expect(status.walStatus).toBe(cluster.majorVersion >= 13 ? 'reserved' : null);
    expect(status.retainedWalBytes).toBeGreaterThanOrEqual(0);
    // An existing slot is claimed where its reader acknowledged, with no snapshot.
    const reclaimed = await source.claimSlot(id, { mayCreate: true, logger: quiet });
    expect(reclaimed.snapshot).toBeUndefined();
    expect(reclaimed.position).toBeGreaterThanOrEqual(claim.position);

    await source.dropOwned(id);
    await source.dropOwned(id);
    await expect(source.slotStatus(id)).rejects.toThrow(/does not exist any more/);
  });

  it('closes a reader whose partition copy is held back (its sink refused it), ending the session', async () => {
    await sql('CREATE TABLE refused_copy (id bigint PRIMARY KEY, pad text)');
    // More than the sockets between the two hold: the server blocks sending the copy.
    await sql("INSERT INTO refused_copy SELECT i, repeat('x', 200) FROM generate_series(1, 200000) AS i");
    const source = await connected();
    const [table] = await source.describeTables([{ schema: 'public', table: 'refused_copy' }]);
    if (!table) throw new Error('no schema');
    const snapshot = await source.exportSnapshot();
    try {
      const reader = await snapshot.openReader();
      const plan = await reader.planPartitions(table, { targetRows: 1_000_000, maxPartitions: 1 });
      const copy = reader.copyPartition(table, plan.partitions[0] as (typeof plan.partitions)[0]);
      // Closing the reader ends the copy with an error, which the runtime listens for.
      const ended = new Promise<Error>((resolve) => copy.once('error', resolve));
      // One chunk read, then nothing more: a sink that refused the partition reads no further.
      await new Promise<void>((resolve) => copy.once('data', () => resolve()));
      copy.pause();
      const copying = async () =>
        Number(
          (
            await sql(
              "SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE 'COPY%refused_copy%' AND pid <> pg_backend_pid()",
            )
          ).rows[0]?.n,
        );
      expect(await copying()).toBe(1);
      await reader.close();
      expect((await ended).message).toMatch(/terminated/);
      await waitFor(async () => (await copying()) === 0, 'the copying session to end', 30_000, 50);
    } finally {
      await snapshot.release();
    }
  });

  it('exports a snapshot of the source as it is now', async () => {
    await sql('CREATE TABLE counted (id bigint PRIMARY KEY)');
    await sql('INSERT INTO counted SELECT generate_series(1, 5000)');
    await sql('ANALYZE counted');
    const source = await connected();
    const [table] = await source.describeTables([{ schema: 'public', table: 'counted' }]);
    if (!table) throw new Error('no schema');
    const snapshot = await source.exportSnapshot();
    try {
      await sql('DELETE FROM counted WHERE id > 4000');
      const reader = await snapshot.openReader();
      try {
        const plan = await reader.planPartitions(table, { targetRows: 1_000, maxPartitions: 8 });
        expect(plan.rowsEstimate).toBe(5000);
        expect(plan.partitions.length).toBeGreaterThan(1);
        let rows = 0;
        for (const partition of plan.partitions) {
          rows += (await text(reader.copyPartition(table, partition))).split('\n').length - 1;
        }
        expect(rows).toBe(5000);
      } finally {
        await reader.close();
      }
    } finally {
      await snapshot.release();
    }
  });
});
