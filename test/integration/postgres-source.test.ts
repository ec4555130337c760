import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { pgClientConfigOfDsn } from '../../src/connections/pg-client-config.js';
import type { ChangeEvent, TableRef } from '../../src/core/change.js';
import { formatLsn, isLsn, parseLsn } from '../../src/core/lsn.js';
import { checkSourceReady, readTableSchemas } from '../../src/source/postgres/catalog.js';
import {
  type ChangeStreamOptions,
  type PostgresChangeStream,
  type PostgresStreamItem,
  startChangeStream,
} from '../../src/source/postgres/change-stream.js';
import {
  SlotMissingError,
  SourceNotReadyError,
  TableNotReplicableError,
} from '../../src/source/postgres/errors.js';
import type { RelationInfo } from '../../src/source/postgres/pgoutput-decoder.js';
import {
  formatTypes,
  schemaFromRelation,
  schemasFromRelations,
} from '../../src/source/postgres/relation-schema.js';
import {
  createSlotWithSnapshot,
  dropSlotAndPublication,
  ensurePublication,
  publicationName,
  slotName,
  slotStatus,
} from '../../src/source/postgres/slot.js';
import { createDatabase } from '../support/pg-cluster.js';
import { HANG_MS, waitFor } from '../support/wait-for.js';

interface Pipeline {
  id: string;
  slot: string;
  publication: string;
  consistentPoint: string;
}

interface Txn {
  begin: Extract<PostgresStreamItem, { kind: 'begin' }>;
  relations: RelationInfo[];
  changes: ChangeEvent[];
  commit: Extract<PostgresStreamItem, { kind: 'commit' }>;
}

const withTimeout = <T>(promise: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms),
    ),
  ]);

/** Reads items of one stream in order, transaction by transaction. */
class Reader {
  private buffered: PostgresStreamItem[] = [];
  private at = 0;

  constructor(readonly stream: PostgresChangeStream) {}

  async next(ms = 15_000): Promise<PostgresStreamItem> {
    while (this.at >= this.buffered.length) {
      const items = await withTimeout(this.stream.next(), ms, 'a stream item');
      if (items === null) throw new Error('stream ended');
      this.buffered = items;
      this.at = 0;
    }
    return this.buffered[this.at++] as PostgresStreamItem;
  }

  /** The next whole transaction, skipping idle items. */
  async txn(ms = 15_000): Promise<Txn> {
    let item = await this.next(ms);
    while (item.kind === 'idle') item = await this.next(ms);
    if (item.kind !== 'begin') throw new Error(`expected begin, got ${item.kind}`);
    const txn: Partial<Txn> & { relations: RelationInfo[]; changes: ChangeEvent[] } = {
      begin: item,
      relations: [],
      changes: [],
    };
    for (;;) {
      const next = await this.next(ms);
      if (next.kind === 'relation') txn.relations.push(next.relation);
      else if (next.kind === 'change') txn.changes.push(next.change);
      else if (next.kind === 'commit') return { ...txn, commit: next } as Txn;
      else throw new Error(`unexpected ${next.kind} inside a transaction`);
    }
  }

  async idle(ms = 15_000): Promise<Extract<PostgresStreamItem, { kind: 'idle' }>> {
    for (;;) {
      const item = await this.next(ms);
      if (item.kind === 'idle') return item;
    }
  }
}

const clusters = inject('pgClusters');

describe.each(clusters)('postgres source on $label', (cluster) => {
  const dbName = `pg_source_${cluster.label.replace(/\W/g, '_')}`;
  let url: string;
  let settings: pg.ClientConfig;
  let admin: pg.Client;
  let spoolDir: string;
  const pipelines: string[] = [];
  const streams: PostgresChangeStream[] = [];

  async function sql(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    return admin.query(text, values);
  }

  async function newPipeline(tables: TableRef[]): Promise<Pipeline> {
    const id = randomUUID();
    pipelines.push(id);
    await ensurePublication(admin, publicationName(id), tables);
    const created = await createSlotWithSnapshot(settings, slotName(id));
    await created.release();
    return {
      id,
      slot: slotName(id),
      publication: publicationName(id),
      consistentPoint: created.consistentPoint,
    };
  }

  function openStream(p: Pipeline, options: Partial<ChangeStreamOptions> = {}): Reader {
    const stream = startChangeStream({
      connection: settings,
      slotName: p.slot,
      publicationName: p.publication,
      startLsn: p.consistentPoint,
      spoolDir,
      ...options,
    });
    streams.push(stream);
    return new Reader(stream);
  }

  beforeAll(async () => {
    url = await createDatabase(cluster.adminUrl, dbName);
    settings = await pgClientConfigOfDsn(url);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await sql("SET TIME ZONE 'UTC'");
    // Applies to the walsenders of this database: transactions over 64 kB get streamed.
    await sql(`ALTER DATABASE ${dbName} SET logical_decoding_work_mem = '64kB'`);
    spoolDir = mkdtempSync(join(tmpdir(), 'pg-source-spool-'));
  });

  afterEach(async () => {
    await Promise.all(streams.splice(0).map((s) => s.close()));
    for (const id of pipelines.splice(0)) await dropSlotAndPublication(admin, id);
    expect(readdirSync(spoolDir)).toEqual([]);
  });

  afterAll(async () => {
    await admin?.end();
    if (spoolDir) rmSync(spoolDir, { recursive: true, force: true });
  });

  it('accepts a logical-replication-ready source and refuses a role without REPLICATION', async () => {
    await expect(checkSourceReady(admin)).resolves.toBeUndefined();

    const role = `plain user ${cluster.label}`;
    await sql(`DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`);
    await sql(`CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN`);
    const asRole = new URL(url);
    asRole.username = encodeURIComponent(role);
    const client = new pg.Client({ connectionString: asRole.toString() });
    await client.connect();
    try {
      const error = await checkSourceReady(client).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SourceNotReadyError);
      expect((error as Error).message).toContain(`ALTER ROLE "${role}" REPLICATION`);
      expect((error as SourceNotReadyError).problems).toHaveLength(1);
    } finally {
      await client.end();
      await sql(`DROP ROLE ${pg.escapeIdentifier(role)}`);
    }
  });

  it('reads table schemas and refuses tables that cannot be replicated', async () => {
    await sql(`
      CREATE SCHEMA "Odd Schema";
      CREATE TABLE "Odd Schema"."My ""Quoted"" Table" ("Id" int PRIMARY KEY, "the value" numeric(12,2) NOT NULL, tags text[]);
      CREATE TABLE composite (a int, b int, gone int, note varchar(20), doubled int GENERATED ALWAYS AS (a * 2) STORED,
                              PRIMARY KEY (b, a) INCLUDE (note));
      ALTER TABLE composite DROP COLUMN gone;
      CREATE TABLE by_index (id int PRIMARY KEY, code text NOT NULL, payload jsonb);
      CREATE UNIQUE INDEX by_index_code ON by_index (code);
      ALTER TABLE by_index REPLICA IDENTITY USING INDEX by_index_code;
      CREATE TABLE no_key (x int);
      CREATE TABLE full_no_pk (x int);
      ALTER TABLE full_no_pk REPLICA IDENTITY FULL;
      CREATE TABLE nothing_ident (id int PRIMARY KEY);
      ALTER TABLE nothing_ident REPLICA IDENTITY NOTHING;
      CREATE TABLE parted (id int PRIMARY KEY) PARTITION BY RANGE (id);
      CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
      CREATE UNLOGGED TABLE scratch (id int PRIMARY KEY);
      CREATE VIEW a_view AS SELECT 1 AS one;
    `);
    const schemas = await readTableSchemas(admin, [
      { schema: 'Odd Schema', table: 'My "Quoted" Table' },
      { schema: 'public', table: 'composite' },
      { schema: 'public', table: 'by_index' },
      { schema: 'public', table: 'parted_1' },
    ]);
    expect(schemas[0]).toEqual({
      schema: 'Odd Schema',
      table: 'My "Quoted" Table',
      columns: [
        { name: 'Id', typeName: 'integer', typeOid: 23, nullable: false, isKey: true },
        { name: 'the value', typeName: 'numeric(12,2)', typeOid: 1700, nullable: false, isKey: false },
        { name: 'tags', typeName: 'text[]', typeOid: 1009, nullable: true, isKey: false },
      ],
      keyColumns: ['Id'],
    });
    expect(schemas[1]?.keyColumns).toEqual(['b', 'a']);
    expect(schemas[1]?.columns.map((c) => [c.name, c.typeName, c.isKey])).toEqual([
      ['a', 'integer', true],
      ['b', 'integer', true],
      ['note', 'character varying(20)', false],
    ]);
    expect(schemas[2]?.keyColumns).toEqual(['code']);
    expect(schemas[3]?.keyColumns).toEqual(['id']);

    const error = await readTableSchemas(admin, [
      { schema: 'public', table: 'composite' },
      { schema: 'public', table: 'missing' },
      { schema: 'public', table: 'no_key' },
      { schema: 'public', table: 'full_no_pk' },
      { schema: 'public', table: 'nothing_ident' },
      { schema: 'public', table: 'parted' },
      { schema: 'public', table: 'scratch' },
      { schema: 'public', table: 'a_view' },
      { schema: 'public', table: 'Composite' },
    ]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TableNotReplicableError);
    const problems = (error as TableNotReplicableError).problems;
    expect(problems.map((p) => [p.table, p.reason])).toEqual([
      ['missing', 'missing'],
      ['no_key', 'no-key'],
      ['full_no_pk', 'no-key'],
      ['nothing_ident', 'replica-identity-nothing'],
      ['parted', 'partitioned'],
      ['scratch', 'not-a-table'],
      ['a_view', 'not-a-table'],
      ['Composite', 'missing'],
    ]);
    const message = (error as Error).message;
    expect(message).toContain('public.missing: does not exist');
    expect(message).toContain(
      'public.no_key: has no primary key and no replica identity index: add a primary key, or ALTER TABLE "public"."no_key" REPLICA IDENTITY USING INDEX <unique index>',
    );
    expect(message).toContain('ALTER TABLE "public"."nothing_ident" REPLICA IDENTITY DEFAULT');
    expect(message).toContain('public.parted: is a partitioned table: replicate its partitions instead');
    expect(message).toContain('public.a_view: is a view, not a table');

    expect(
      await formatTypes(admin, [
        { typeOid: 1700, typeMod: 786438 },
        { typeOid: 1043, typeMod: 24 },
        { typeOid: 1007, typeMod: -1 },
        { typeOid: 1184, typeMod: 3 },
      ]),
    ).toEqual(['numeric(12,2)', 'character varying(20)', 'integer[]', 'timestamp(3) with time zone']);
  });

  it('creates the slot with an exported snapshot; later rows are on the stream, not in the snapshot', async () => {
    await sql(
      'CREATE TABLE snap (id int PRIMARY KEY, v text); INSERT INTO snap SELECT i, i::text FROM generate_series(1, 3) i',
    );
    const id = randomUUID();
    pipelines.push(id);
    expect(slotName(id)).toBe(`replicator_${id.replaceAll('-', '')}`);
    expect(() => slotName('not-a-uuid')).toThrow(/not a UUID/);
    await ensurePublication(admin, publicationName(id), [{ schema: 'public', table: 'snap' }]);
    const created = await createSlotWithSnapshot(settings, slotName(id));
    try {
      expect(isLsn(created.consistentPoint)).toBe(true);
      await sql("INSERT INTO snap VALUES (4, 'after the slot')");
      const reader = new pg.Client({ connectionString: url });
      await reader.connect();
      try {
        await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        await reader.query(`SET TRANSACTION SNAPSHOT '${created.snapshotName}'`);
        const { rows } = await reader.query<{ id: number }>('SELECT id FROM snap ORDER BY id');
        expect(rows.map((r) => r.id)).toEqual([1, 2, 3]);
        await reader.query('COMMIT');
      } finally {
        await reader.end();
      }
      await expect(createSlotWithSnapshot(settings, slotName(id))).rejects.toThrow(/already exists/);
    } finally {
      await created.release();
    }

    const status = await slotStatus(admin, slotName(id));
    expect(status).toMatchObject({ exists: true, active: false, confirmedFlushLsn: created.consistentPoint });
    expect(status?.walStatus).toBe('reserved');
    expect(status?.retainedWalBytes).toBeGreaterThanOrEqual(0);
    expect(await slotStatus(admin, 'no_such_slot')).toBeNull();

    const stream = openStream({
      id,
      slot: slotName(id),
      publication: publicationName(id),
      consistentPoint: created.consistentPoint,
    });
    const txn = await stream.txn();
    expect(txn.changes.map((c) => [c.op, c.after])).toEqual([['insert', { id: '4', v: 'after the slot' }]]);
    expect(txn.commit.endLsn).toBeGreaterThan(parseLsn(created.consistentPoint));
    expect(txn.changes[0]?.commitLsn).toBeGreaterThan(parseLsn(created.consistentPoint));

    // The publication follows the requested table list exactly.
    await sql('CREATE TABLE snap_other (id int PRIMARY KEY)');
    const published = async () =>
      (
        await sql('SELECT tablename FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1', [
          publicationName(id),
        ])
      ).rows.map((r) => r.tablename);
    await ensurePublication(admin, publicationName(id), [
      { schema: 'public', table: 'snap' },
      { schema: 'public', table: 'snap_other' },
    ]);
    expect(await published()).toEqual(['snap', 'snap_other']);
    await ensurePublication(admin, publicationName(id), [{ schema: 'public', table: 'snap_other' }]);
    expect(await published()).toEqual(['snap_other']);

    await stream.stream.close();
    await dropSlotAndPublication(admin, id);
    await dropSlotAndPublication(admin, id);
    expect(await slotStatus(admin, slotName(id))).toBeNull();
    expect(
      (await sql('SELECT 1 FROM pg_publication WHERE pubname = $1', [publicationName(id)])).rowCount,
    ).toBe(0);
  });

  it('decodes inserts, updates, deletes and truncates of mixed types', async () => {
    await sql(`
      CREATE TABLE mixed (id int PRIMARY KEY, amount numeric(12,2), at timestamptz, doc jsonb, nums int[],
                          raw bytea, note text, big text);
      ALTER TABLE mixed ALTER COLUMN big SET STORAGE EXTERNAL;
      CREATE TABLE full_ident (id int PRIMARY KEY, v text);
      ALTER TABLE full_ident REPLICA IDENTITY FULL;
      CREATE TABLE other (id int PRIMARY KEY);
    `);
    const p = await newPipeline([
      { schema: 'public', table: 'mixed' },
      { schema: 'public', table: 'full_ident' },
      { schema: 'public', table: 'other' },
    ]);
    const stream = openStream(p);

    await sql(`INSERT INTO mixed VALUES (1, 12.5, '2024-01-02 03:04:05.678+00', '{"b": null, "a": [1, 2]}',
                                        '{1,2,NULL}', '\\x00ff10', NULL,
                                        (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i))`);
    const big = (await sql('SELECT big FROM mixed')).rows[0].big as string;
    expect(big.length).toBe(9600);
    const insert = await stream.txn();
    expect(insert.relations).toHaveLength(1);
    const relation = insert.relations[0] as RelationInfo;
    expect(relation).toMatchObject({ schema: 'public', table: 'mixed', replicaIdentity: 'default' });
    expect(relation.columns.map((c) => [c.name, c.typeOid, c.isKey])).toEqual([
      ['id', 23, true],
      ['amount', 1700, false],
      ['at', 1184, false],
      ['doc', 3802, false],
      ['nums', 1007, false],
      ['raw', 17, false],
      ['note', 25, false],
      ['big', 25, false],
    ]);
    const fromRelation = await schemaFromRelation(admin, relation);
    expect(fromRelation?.columns.map((c) => c.typeName)).toEqual([
      'integer',
      'numeric(12,2)',
      'timestamp with time zone',
      'jsonb',
      'integer[]',
      'bytea',
      'text',
      'text',
    ]);
    expect(fromRelation?.keyColumns).toEqual(['id']);
    expect(fromRelation?.columns[0]?.nullable).toBe(false);
    const [inserted] = insert.changes;
    expect(insert.changes).toHaveLength(1);
    expect(inserted).toMatchObject({
      op: 'insert',
      table: { schema: 'public', table: 'mixed' },
      after: {
        id: '1',
        amount: '12.50',
        at: '2024-01-02 03:04:05.678+00',
        doc: '{"a": [1, 2], "b": null}',
        nums: '{1,2,NULL}',
        raw: '\\x00ff10',
        note: null,
        big,
      },
      xid: insert.begin.xid,
    });
    expect(inserted?.key).toBeUndefined();
    expect(inserted?.unchangedToast).toBeUndefined();
    // The commit record's LSN precedes its end, the position the commit item carries.
    expect(inserted?.commitLsn).toBeLessThan(insert.commit.endLsn);
    expect(insert.begin.xid).toBe(insert.commit.xid);
    expect(Date.parse(inserted?.commitTime as string)).toBe(insert.begin.commitTimeMs);
    expect(inserted?.commitTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Math.abs(insert.begin.commitTimeMs - Date.now())).toBeLessThan(60_000);

    await sql("UPDATE mixed SET note = 'changed' WHERE id = 1");
    const update = (await stream.txn()).changes;
    expect(update).toHaveLength(1);
    expect(update[0]).toMatchObject({
      op: 'update',
      unchangedToast: ['big'],
      after: { id: '1', note: 'changed' },
    });
    expect(update[0]?.after).not.toHaveProperty('big');
    expect(update[0]?.key).toBeUndefined();
    expect(update[0]?.before).toBeUndefined();

    await sql('UPDATE mixed SET id = 2 WHERE id = 1');
    const keyChange = (await stream.txn()).changes[0];
    expect(keyChange).toMatchObject({ op: 'update', key: { id: '1' }, after: { id: '2', amount: '12.50' } });
    expect(keyChange?.before).toBeUndefined();

    await sql(
      "BEGIN; INSERT INTO full_ident VALUES (1, 'a'); UPDATE full_ident SET v = 'b'; DELETE FROM full_ident; COMMIT",
    );
    const full = await stream.txn();
    expect(full.relations.map((r) => [r.table, r.replicaIdentity])).toEqual([['full_ident', 'full']]);
    expect(full.changes.map(({ op, key, before, after }) => ({ op, key, before, after }))).toEqual([
      { op: 'insert', key: undefined, before: undefined, after: { id: '1', v: 'a' } },
      { op: 'update', key: { id: '1', v: 'a' }, before: { id: '1', v: 'a' }, after: { id: '1', v: 'b' } },
      { op: 'delete', key: { id: '1', v: 'b' }, before: { id: '1', v: 'b' }, after: undefined },
    ]);
    expect((await schemaFromRelation(admin, full.relations[0] as RelationInfo))?.keyColumns).toEqual(['id']);
    // Several relations in one round: each its own schema, in order, and null for one gone.
    const gone: RelationInfo = { ...relation, relationId: 2_147_483_000, table: 'gone' };
    const together = await schemasFromRelations(admin, [full.relations[0] as RelationInfo, gone, relation]);
    expect(together.map((t) => t && [t.table, t.keyColumns, t.columns.map((c) => c.typeName)])).toEqual([
      ['full_ident', ['id'], ['integer', 'text']],
      null,
      ['mixed', ['id'], fromRelation?.columns.map((c) => c.typeName)],
    ]);
    expect(new Set(full.changes.map((c) => c.commitLsn)).size).toBe(1);

    await sql('DELETE FROM mixed WHERE id = 2');
    const deleted = (await stream.txn()).changes[0];
    expect(deleted).toMatchObject({ op: 'delete', key: { id: '2' } });
    expect(deleted?.before).toBeUndefined();
    expect(deleted?.after).toBeUndefined();

    await sql('BEGIN; INSERT INTO other VALUES (1); TRUNCATE mixed, other; COMMIT');
    const truncate = await stream.txn();
    expect(truncate.changes.map((c) => c.op)).toEqual(['insert', 'truncate']);
    const t = truncate.changes[1] as ChangeEvent;
    expect(t.tables?.map((x) => x.table).sort()).toEqual(['mixed', 'other']);
    expect(t.table).toEqual(t.tables?.[0]);
  });

  it('replays a streamed large transaction whole, and drops aborted streamed (sub)transactions', async () => {
    // No autovacuum on it: an analyze's catalog rows go through the same 64kB decoding memory, at
    // times a busy machine decides, and the counts below are of this test's transactions alone.
    await sql('CREATE TABLE bulk (id int PRIMARY KEY, payload text) WITH (autovacuum_enabled = false)');
    const p = await newPipeline([{ schema: 'public', table: 'bulk' }]);
    const reader = openStream(p);

    await sql("INSERT INTO bulk SELECT i, repeat('x', 200) FROM generate_series(1, 5000) i");
    const started = Date.now();
    const big = await reader.txn();
    const elapsed = Date.now() - started;
    expect(big.changes).toHaveLength(5000);
    expect(big.changes.map((c) => Number(c.after?.id))).toEqual(
      Array.from({ length: 5000 }, (_, i) => i + 1),
    );
    expect(
      big.changes.every((c) => c.xid === big.begin.xid && c.commitLsn === big.changes[0]?.commitLsn),
    ).toBe(true);
    expect(reader.stream.stats().streamedTransactions).toBe(1);
    console.info(`[${cluster.label}] streamed 5000-row transaction delivered in ${elapsed} ms`);

    await sql(
      "BEGIN; INSERT INTO bulk SELECT i, repeat('y', 200) FROM generate_series(10001, 15000) i; ROLLBACK",
    );
    await sql(`BEGIN;
               INSERT INTO bulk SELECT i, repeat('z', 200) FROM generate_series(20001, 23000) i;
               SAVEPOINT s;
               INSERT INTO bulk SELECT i, repeat('w', 200) FROM generate_series(30001, 33000) i;
               ROLLBACK TO SAVEPOINT s;
               INSERT INTO bulk VALUES (40001, 'last');
               COMMIT`);
    const next = await reader.txn();
    const ids = next.changes.map((c) => Number(c.after?.id));
    expect(ids).toHaveLength(3001);
    expect(ids.filter((id) => id > 10000 && id <= 15000)).toEqual([]);
    expect(ids.filter((id) => id > 30000 && id <= 33000)).toEqual([]);
    expect(ids.at(-1)).toBe(40001);
    const stats = reader.stream.stats();
    expect(stats.streamedTransactions).toBe(2);
    expect(stats.abortedStreamedTransactions).toBe(1);
    expect(stats.abortedSubtransactions).toBeGreaterThanOrEqual(1);
  });

  it('acks commit and idle positions into confirmed_flush_lsn', async () => {
    await sql('CREATE TABLE acked (id int PRIMARY KEY); CREATE TABLE unpublished (id int)');
    const p = await newPipeline([{ schema: 'public', table: 'acked' }]);
    const reader = openStream(p, { statusIntervalMs: 500 });
    await sql('INSERT INTO acked VALUES (1)');
    const txn = await reader.txn();
    reader.stream.ack(txn.commit.endLsn);
    const confirmed = async () => (await slotStatus(admin, p.slot))?.confirmedFlushLsn;
    const waitConfirmed = async (lsn: string) => {
      await waitFor(async () => (await confirmed()) === lsn, `confirmed_flush_lsn ${lsn}`, HANG_MS, 50).catch(
        () => undefined,
      );
      return confirmed();
    };
    expect(await waitConfirmed(formatLsn(txn.commit.endLsn))).toBe(formatLsn(txn.commit.endLsn));

    // WAL of tables outside the publication moves the server on; the idle position follows it.
    await sql('INSERT INTO unpublished SELECT generate_series(1, 100)');
    let idle = await reader.idle();
    while (idle.walEnd <= txn.commit.endLsn) idle = await reader.idle();
    reader.stream.ack(idle.walEnd);
    expect(await waitConfirmed(formatLsn(idle.walEnd))).toBe(formatLsn(idle.walEnd));

    // A new stream resumes after the acked position.
    await sql('INSERT INTO acked VALUES (2)');
    await reader.stream.close();
    await sql('INSERT INTO acked VALUES (3)');
    const resumed = openStream(p, { startLsn: '0/0' });
    expect((await resumed.txn()).changes[0]?.after).toEqual({ id: '2' });
    expect((await resumed.txn()).changes[0]?.after).toEqual({ id: '3' });
  });

  it('reports the last of acknowledgements that come faster than it reports them, and one still waiting at close', async () => {
    await sql('CREATE TABLE quick_acks (id int PRIMARY KEY)');
    const p = await newPipeline([{ schema: 'public', table: 'quick_acks' }]);
    // No periodic status update in the test's time: only acknowledgements report.
    const reader = openStream(p, { statusIntervalMs: 3_600_000 });
    const committed = async (id: number) => {
      await sql(`INSERT INTO quick_acks VALUES (${id})`);
      return (await reader.txn()).commit.endLsn;
    };
    const confirmed = async () => (await slotStatus(admin, p.slot))?.confirmedFlushLsn;
    const [first, second] = [await committed(1), await committed(2)];
    reader.stream.ack(first);
    reader.stream.ack(second);
    await waitFor(
      async () => (await confirmed()) === formatLsn(second),
      `confirmed_flush_lsn ${formatLsn(second)}`,
    );

    const [third, fourth] = [await committed(3), await committed(4)];
    reader.stream.ack(third);
    reader.stream.ack(fourth);
    await reader.stream.close();
    await waitFor(async () => (await slotStatus(admin, p.slot))?.active === false, 'the slot to be released');
    expect(await confirmed()).toBe(formatLsn(fourth));
  });

  it('hands a non-streamed transaction over as it arrives: committed already, it is never spooled', async () => {
    await sql('CREATE TABLE medium (id int PRIMARY KEY, v text)');
    const p = await newPipeline([{ schema: 'public', table: 'medium' }]);
    const reader = openStream(p, { memoryLimitBytes: 2000 });
    await sql("INSERT INTO medium SELECT i, 'v' || i FROM generate_series(1, 200) i");
    const txn = await reader.txn();
    expect(txn.changes.map((c) => c.after)).toEqual(
      Array.from({ length: 200 }, (_, i) => ({ id: `${i + 1}`, v: `v${i + 1}` })),
    );
    expect(reader.stream.stats()).toMatchObject({ spilledTransactions: 0, streamedTransactions: 0 });
    expect(readdirSync(spoolDir)).toEqual([]);
  });

  it('holds back reading while the consumer does not read', async () => {
    await sql('CREATE TABLE many (id int PRIMARY KEY)');
    const p = await newPipeline([{ schema: 'public', table: 'many' }]);
    await sql(
      'CREATE PROCEDURE fill() LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..3000 LOOP INSERT INTO many VALUES (i); COMMIT; END LOOP; END $$',
    );
    await sql('CALL fill()');
    // A walsender drops a receiver silent for longer than this; status updates must go on while paused.
    await sql(`ALTER DATABASE ${dbName} SET wal_sender_timeout = '1s'`);
    const reader = openStream(p, { queueCapacity: 50, statusIntervalMs: 300 });
    const walsender = async () =>
      (
        await sql(
          `SELECT r.pid FROM pg_stat_replication r
             JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = $1`,
          [p.slot],
        )
      ).rows[0] as { pid: number } | undefined;
    // Its walsender has started, under the 1 s timeout (read as it connects).
    await waitFor(walsender, 'the walsender', HANG_MS, 50);
    await sql(`ALTER DATABASE ${dbName} RESET wal_sender_timeout`);
    // The consumer reads nothing: the queue fills, and then the stall goes on for longer than the
    // walsender's timeout. Its length is the scenario, not a wait: the stream counts no status
    // updates, and the reply_time the server shows is the client library's malformed timestamp.
    await waitFor(() => reader.stream.stats().queuedItems >= 50, 'the queue to fill', HANG_MS, 50);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await walsender()).toBeDefined();
    const stalled = reader.stream.stats();
    // About 9000 messages are waiting on the server; only the socket's last chunk may pass the high-water mark.
    expect(stalled.queuedItems).toBeLessThan(50 + 2500);
    const ids: number[] = [];
    while (ids.length < 3000) {
      const txn = await reader.txn();
      for (const c of txn.changes) ids.push(Number(c.after?.id));
    }
    expect(ids).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
    // The walsender outlived the stall: it still streams new transactions.
    await sql('INSERT INTO many VALUES (3001)');
    expect((await reader.txn()).changes[0]?.after).toEqual({ id: '3001' });
    console.info(
      `[${cluster.label}] backpressure: at most ${reader.stream.stats().maxBufferedMessages} messages buffered`,
    );
  });

  // Rows of 40 kB (under the 64 kB at which the server streams a transaction) come whole; rows of
  // 1 MB are streamed, spooled, and replayed at their commit: both ways are bounded in bytes.
  it.each([
    ['whole transactions', 40_000, 400],
    ['streamed transactions replayed', 1_000_000, 40],
  ])('holds back reading by bytes, not only by items: %s', async (_, size, count) => {
    const table = `wide_${size}`;
    await sql(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
    const p = await newPipeline([{ schema: 'public', table }]);
    await sql(
      `CREATE PROCEDURE fill_${table}() LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..${count} LOOP
         INSERT INTO ${table} VALUES (i, repeat(chr(97 + i % 26), ${size})); COMMIT; END LOOP; END $$`,
    );
    await sql(`CALL fill_${table}()`);
    const bound = 1024 * 1024;
    const reader = openStream(p, { queueBytes: bound });
    // The consumer reads nothing: the queue fills up to its bytes, far below its 5,000 items.
    await waitFor(() => reader.stream.stats().queuedBytes >= bound, 'the queue to fill', HANG_MS, 50);
    // The scenario, not a wait: reading stays held back while the consumer does not read.
    await new Promise((r) => setTimeout(r, 1_000));
    const stalled = reader.stream.stats();
    // Past the bound by at most the message being read when the socket paused, and a read's worth.
    expect(stalled.queuedBytes).toBeLessThan(bound + size + 256 * 1024);
    expect(stalled.queuedItems).toBeLessThan(3 * ((bound + size + 256 * 1024) / size + 2));
    const seen: number[] = [];
    while (seen.length < count) {
      const txn = await reader.txn();
      for (const c of txn.changes) {
        expect(c.after?.v).toHaveLength(size);
        seen.push(Number(c.after?.id));
      }
    }
    expect(seen).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });

  it('ends its walsender when closed while reading is held back', async () => {
    await sql('CREATE TABLE held_back (id int PRIMARY KEY, v text)');
    const p = await newPipeline([{ schema: 'public', table: 'held_back' }]);
    // More than the sockets between the two hold: the walsender blocks sending it.
    await sql(`INSERT INTO held_back SELECT i, repeat('x', 100) FROM generate_series(1, 200000) AS i`);
    const reader = openStream(p, { queueCapacity: 5 });
    // The consumer reads nothing: the socket is paused with the server's data waiting on it.
    await waitFor(() => reader.stream.stats().queuedItems >= 5, 'the queue to fill', HANG_MS, 50);
    await reader.stream.close();
    // A paused socket would never read the server's end of the connection, and the walsender,
    // blocked sending, would stay and hold the slot until its own timeout.
    await waitFor(
      async () =>
        (await sql('SELECT active FROM pg_replication_slots WHERE slot_name = $1', [p.slot])).rows[0]
          ?.active === false,
      'the slot to be free',
      HANG_MS,
      50,
    );
  });

  it('fails with SlotMissingError when the slot is dropped mid-stream or does not exist', async () => {
    await sql('CREATE TABLE doomed (id int PRIMARY KEY)');
    const p = await newPipeline([{ schema: 'public', table: 'doomed' }]);
    const reader = openStream(p);
    await sql('INSERT INTO doomed VALUES (1)');
    await reader.txn();
    await dropSlotAndPublication(admin, p.id);
    const error = await reader.txn().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlotMissingError);
    expect((error as Error).message).toMatch(/resync/);

    const missing = openStream(p);
    const again = await missing.next().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(SlotMissingError);
    expect((again as Error).message).toContain(`'${p.slot}' does not exist`);
  });
});
