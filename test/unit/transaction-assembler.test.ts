import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import type { PostgresStreamItem } from '../../src/source/postgres/change-stream.js';
import { PgoutputProtocolError } from '../../src/source/postgres/errors.js';
import { TransactionAssembler } from '../../src/source/postgres/transaction-assembler.js';
import { Msg, pgMicros, pgoutput, type RelationInput } from '../support/pgoutput-messages.js';

const T1 = new Date('2024-05-06T07:08:09.123Z');
const TS = pgMicros(T1, 456);
const TS_ISO = '2024-05-06T07:08:09.123456Z';
const T2 = new Date('2024-05-06T07:08:10Z');
const TS2 = pgMicros(T2);

const ITEMS: RelationInput = {
  relationId: 7,
  schema: 'shop',
  table: 'items',
  columns: [{ name: 'id', key: true, typeOid: 23 }, { name: 'v' }],
};
const ITEMS_TABLE = { schema: 'shop', table: 'items' };
const OTHER: RelationInput = { relationId: 8, table: 'other', columns: [{ name: 'id', key: true }] };

const changes = (items: PostgresStreamItem[]): ChangeEvent[] =>
  items.flatMap((item) => (item.kind === 'change' ? [item.change] : []));
const kinds = (items: PostgresStreamItem[]): string[] => items.map((item) => item.kind);

describe('transaction assembler', () => {
  let parent: string;
  let emitted: PostgresStreamItem[];
  let logged: { level: string; fields: object; message: string }[];
  let assembler: TransactionAssembler;

  const make = (memoryLimitBytes?: number) =>
    new TransactionAssembler({
      emit: (item) => emitted.push(item),
      spoolDir: parent,
      memoryLimitBytes,
      logger: {
        debug: (fields, message) => logged.push({ level: 'debug', fields, message }),
        info: (fields, message) => logged.push({ level: 'info', fields, message }),
        warn: (fields, message) => logged.push({ level: 'warn', fields, message }),
      },
    });

  /** Accepts each message; a replay is taken whole and its items returned. */
  const feed = (...messages: Buffer[]): PostgresStreamItem[] => {
    const replayed: PostgresStreamItem[] = [];
    for (const message of messages) {
      const replay = assembler.accept(message);
      if (replay) replayed.push(...replay);
    }
    return replayed;
  };
  /** The items emitted since the last call. */
  const taken = () => emitted.splice(0);
  const spoolFiles = () => readdirSync(parent).flatMap((dir) => readdirSync(join(parent, dir)));

  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'assembler-test-'));
    emitted = [];
    logged = [];
    assembler = make();
  });

  afterEach(() => {
    assembler.dispose();
    expect(readdirSync(parent)).toEqual([]);
    rmSync(parent, { recursive: true });
  });

  describe('transactions that were not streamed', () => {
    it('emits Begin, Relation, changes and Commit as they arrive', () => {
      feed(pgoutput.begin(0x16b374d848n, TS, 4000000000));
      expect(taken()).toEqual([
        { kind: 'begin', xid: 4000000000, commitTimeMs: T1.getTime(), commitLsn: 0x16b374d848n },
      ]);
      feed(pgoutput.relation(ITEMS));
      expect(taken()).toEqual([
        {
          kind: 'relation',
          relation: {
            relationId: 7,
            schema: 'shop',
            table: 'items',
            replicaIdentity: 'default',
            columns: [
              { name: 'id', typeOid: 23, typeMod: -1, isKey: true },
              { name: 'v', typeOid: 25, typeMod: -1, isKey: false },
            ],
          },
        },
      ]);
      feed(pgoutput.insert(7, ['1', 'a']));
      const tx = { xid: 4000000000, commitLsn: 0x16b374d848n, commitTime: TS_ISO };
      // An insert's row stays encoded until read: the copy reads it.
      const inserted = taken().map((item) =>
        item.kind === 'change' ? { ...item, change: { ...item.change, after: item.change.after } } : item,
      );
      expect(inserted).toEqual([
        { kind: 'change', change: { op: 'insert', table: ITEMS_TABLE, ...tx, after: { id: '1', v: 'a' } } },
      ]);
      feed(
        pgoutput.update(7, ['1', 'b']),
        pgoutput.delete(7, { kind: 'K', values: ['1', null] }),
        pgoutput.truncate([7]),
        pgoutput.commit(0x16b374d848n, 0x16b374d8a0n, TS),
      );
      const rest = taken();
      expect(changes(rest)).toEqual([
        { op: 'update', table: ITEMS_TABLE, ...tx, after: { id: '1', v: 'b' } },
        { op: 'delete', table: ITEMS_TABLE, ...tx, key: { id: '1' } },
        { op: 'truncate', table: ITEMS_TABLE, tables: [ITEMS_TABLE], ...tx },
      ]);
      expect(rest.at(-1)).toEqual({ kind: 'commit', xid: 4000000000, endLsn: 0x16b374d8a0n });
      expect(assembler.stats()).toMatchObject({ transactions: 1, streamedTransactions: 0 });
    });

    it('gives each change the commit LSN and time of its own transaction', () => {
      feed(
        pgoutput.begin(0x100n, TS, 10),
        pgoutput.relation(ITEMS),
        pgoutput.insert(7, ['1', 'a']),
        pgoutput.commit(0x100n, 0x128n, TS),
        pgoutput.begin(0x200n, TS2, 11),
        pgoutput.insert(7, ['2', 'b']),
        pgoutput.commit(0x200n, 0x228n, TS2),
      );
      const items = taken();
      expect(kinds(items)).toEqual(['begin', 'relation', 'change', 'commit', 'begin', 'change', 'commit']);
      expect(
        changes(items).map(({ xid, commitLsn, commitTime }) => ({ xid, commitLsn, commitTime })),
      ).toEqual([
        { xid: 10, commitLsn: 0x100n, commitTime: TS_ISO },
        { xid: 11, commitLsn: 0x200n, commitTime: '2024-05-06T07:08:10.000000Z' },
      ]);
      expect(items[4]).toEqual({ kind: 'begin', xid: 11, commitTimeMs: T2.getTime(), commitLsn: 0x200n });
      expect(items[6]).toEqual({ kind: 'commit', xid: 11, endLsn: 0x228n });
      expect(assembler.stats().transactions).toBe(2);
    });

    it('decodes changes against the latest Relation message of their relation', () => {
      feed(
        pgoutput.relation(ITEMS),
        pgoutput.begin(0x100n, TS, 10),
        pgoutput.insert(7, ['1', 'a']),
        pgoutput.relation({ ...ITEMS, columns: [...ITEMS.columns, { name: 'added' }] }),
        pgoutput.insert(7, ['2', 'b', 'c']),
        pgoutput.commit(0x100n, 0x128n, TS),
      );
      const items = taken();
      expect(kinds(items)).toEqual(['relation', 'begin', 'change', 'relation', 'change', 'commit']);
      expect(changes(items).map((c) => c.after)).toEqual([
        { id: '1', v: 'a' },
        { id: '2', v: 'b', added: 'c' },
      ]);
      expect(() => feed(pgoutput.begin(0x200n, TS, 11), pgoutput.insert(7, ['3', 'd']))).toThrow(
        /has 2 columns, its Relation message 3/,
      );
    });

    it('ignores Type, Origin and Message, inside a transaction and outside', () => {
      feed(
        pgoutput.message(false, 0x50n, 'outside', Buffer.from('x')),
        pgoutput.begin(0x100n, TS, 10),
        pgoutput.origin(1n << 32n, 'node "a"'),
        pgoutput.type(90000, 'public', 'mood'),
        pgoutput.relation(ITEMS),
        pgoutput.message(true, 0x2000n, 'my.prefix', Buffer.from('abc')),
        pgoutput.insert(7, ['1', 'a']),
        pgoutput.commit(0x100n, 0x128n, TS),
      );
      expect(kinds(taken())).toEqual(['begin', 'relation', 'change', 'commit']);
    });
  });

  describe('protocol errors', () => {
    it('refuses changes outside a transaction', () => {
      feed(pgoutput.relation(ITEMS));
      for (const message of [
        pgoutput.insert(7, ['1', 'a']),
        pgoutput.update(7, ['1', 'a']),
        pgoutput.delete(7, { kind: 'K', values: ['1', null] }),
        pgoutput.truncate([7]),
      ]) {
        expect(() => feed(message)).toThrow(
          new PgoutputProtocolError(
            `${String.fromCharCode(message[0] as number)} message outside a transaction`,
          ),
        );
      }
      expect(() => feed(pgoutput.commit(0x100n, 0x128n, TS))).toThrow(/Commit without Begin/);
    });

    it('refuses Begin or Stream Start inside a transaction, and Begin or Stream Commit inside a stream block', () => {
      feed(pgoutput.begin(0x100n, TS, 10));
      expect(() => feed(pgoutput.begin(0x200n, TS, 11))).toThrow(/Begin inside a transaction/);
      expect(() => feed(pgoutput.streamStart(12, true))).toThrow(/Stream Start inside a transaction/);
      assembler.dispose();
      assembler = make();
      feed(pgoutput.streamStart(12, true));
      expect(() => feed(pgoutput.begin(0x200n, TS, 11))).toThrow(/Begin inside a transaction/);
      expect(() => feed(pgoutput.streamStart(12, false))).toThrow(/Stream Start inside a transaction/);
      expect(() => feed(pgoutput.streamCommit(12, 0x300n, 0x328n, TS))).toThrow(
        /Stream Commit inside a transaction/,
      );
    });

    it('refuses unknown and truncated messages', () => {
      expect(() => feed(new Msg('Z').build())).toThrow(/unknown pgoutput message type 'Z' \(0x5a\)/);
      expect(() => feed(Buffer.alloc(0))).toThrow(PgoutputProtocolError);
      expect(() => feed(new Msg('B').u64(1n).build())).toThrow(/truncated pgoutput message 'B'/);
      expect(() => feed(new Msg('R').u32(1).str('s').build())).toThrow(PgoutputProtocolError);
      feed(pgoutput.begin(0x100n, TS, 10));
      expect(() => feed(new Msg('C').u8(0).u64(0x100n).build())).toThrow(/truncated/);
    });

    it('refuses a change of a relation with no Relation message before it', () => {
      feed(pgoutput.begin(0x100n, TS, 10));
      expect(() => feed(pgoutput.insert(9, ['1']))).toThrow(
        /change for relation 9 before its Relation message/,
      );
    });
  });

  describe('streamed transactions', () => {
    it('spools stream blocks and replays the transaction whole at its Stream Commit, subtransactions included', () => {
      const streamed = feed(
        pgoutput.streamStart(700, true),
        pgoutput.relation(ITEMS, 700),
        pgoutput.type(90000, 'public', 'mood', 700),
        pgoutput.insert(7, ['1', 'a'], 700),
        pgoutput.message(true, 0x2000n, 'p', Buffer.alloc(0), 700),
        pgoutput.insert(7, ['2', 'é'], 701),
        pgoutput.streamStop(),
        // A transaction committed while 700 is in progress is handed over at once.
        pgoutput.begin(0x400n, TS2, 800),
        pgoutput.relation(OTHER),
        pgoutput.insert(8, ['x']),
        pgoutput.commit(0x400n, 0x428n, TS2),
        pgoutput.streamStart(700, false),
        pgoutput.update(7, ['2', 'b'], undefined, 701),
        pgoutput.delete(7, { kind: 'K', values: ['1', null] }, 700),
        pgoutput.truncate([7, 8], 0, 700),
        pgoutput.streamStop(),
      );
      expect(streamed).toEqual([]);
      expect(kinds(taken())).toEqual(['begin', 'relation', 'change', 'commit']);

      const replayed = feed(pgoutput.streamCommit(700, 0x5000n, 0x5030n, TS));
      expect(taken()).toEqual([]);
      const tx = { xid: 700, commitLsn: 0x5000n, commitTime: TS_ISO };
      expect(replayed[0]).toEqual({
        kind: 'begin',
        xid: 700,
        commitTimeMs: T1.getTime(),
        commitLsn: 0x5000n,
      });
      expect(replayed[1]).toMatchObject({ kind: 'relation', relation: { relationId: 7, table: 'items' } });
      expect(changes(replayed)).toEqual([
        { op: 'insert', table: ITEMS_TABLE, ...tx, after: { id: '1', v: 'a' } },
        { op: 'insert', table: ITEMS_TABLE, ...tx, after: { id: '2', v: 'é' } },
        { op: 'update', table: ITEMS_TABLE, ...tx, after: { id: '2', v: 'b' } },
        { op: 'delete', table: ITEMS_TABLE, ...tx, key: { id: '1' } },
        {
          op: 'truncate',
          table: ITEMS_TABLE,
          tables: [ITEMS_TABLE, { schema: 'public', table: 'other' }],
          ...tx,
        },
      ]);
      expect(replayed.at(-1)).toEqual({ kind: 'commit', xid: 700, endLsn: 0x5030n });
      expect(kinds(replayed)).toHaveLength(8);
      expect(assembler.stats()).toEqual({
        transactions: 2,
        streamedTransactions: 1,
        abortedStreamedTransactions: 0,
        abortedSubtransactions: 0,
        spilledTransactions: 0,
        arrivingSinceMs: null,
      });
      expect(logged).toEqual([
        { level: 'debug', fields: { xid: 700 }, message: 'spooling a streamed in-progress transaction' },
      ]);
      // The transaction is gone: a later segment of it is unknown.
      expect(() => feed(pgoutput.streamStart(700, false))).toThrow(/Stream Start of unknown transaction 700/);
    });

    it('tells since when the oldest transaction not handed over yet has been arriving: its first message, then its commit time while it replays', () => {
      expect(assembler.stats().arrivingSinceMs).toBeNull();
      const before = Date.now();
      feed(
        pgoutput.streamStart(700, true),
        pgoutput.relation(ITEMS, 700),
        pgoutput.insert(7, ['1', 'a'], 700),
      );
      const first = assembler.stats().arrivingSinceMs as number;
      expect(first).toBeGreaterThanOrEqual(before);
      expect(first).toBeLessThanOrEqual(Date.now());
      feed(pgoutput.streamStop(), pgoutput.streamStart(701, true), pgoutput.insert(7, ['2', 'b'], 701));
      feed(pgoutput.streamStop(), pgoutput.streamStart(700, false), pgoutput.streamStop());
      expect(assembler.stats().arrivingSinceMs).toBe(first);
      const replay = assembler.accept(pgoutput.streamCommit(700, 0x5000n, 0x5030n, TS));
      if (!replay) throw new Error('no replay');
      replay.next();
      // Committed at T1 (long ago): the lag counts from its commit until it is handed over whole.
      expect(assembler.stats().arrivingSinceMs).toBe(T1.getTime());
      Array.from(replay);
      const second = assembler.stats().arrivingSinceMs as number;
      expect(second).toBeGreaterThanOrEqual(first);
      feed(pgoutput.streamAbort(701, 701));
      expect(assembler.stats().arrivingSinceMs).toBeNull();
    });

    it('decodes a replay lazily, item by item, and takes no message before it ends', () => {
      feed(
        pgoutput.streamStart(700, true),
        pgoutput.relation(ITEMS, 700),
        pgoutput.insert(7, ['1', 'a'], 700),
        pgoutput.insert(7, ['2', 'b'], 700),
        pgoutput.streamStop(),
      );
      const replay = assembler.accept(pgoutput.streamCommit(700, 0x5000n, 0x5030n, TS));
      if (!replay) throw new Error('no replay');
      expect(replay.next().value).toMatchObject({ kind: 'begin' });
      expect(replay.next().value).toMatchObject({ kind: 'relation' });
      expect(() => assembler.accept(pgoutput.begin(0x6000n, TS, 701))).toThrow(/replays/);
      expect(() => assembler.keepalive(0x7000n)).toThrow(/replays/);
      expect(Array.from(replay, (item) => item.kind)).toEqual(['change', 'change', 'commit']);
      expect(replay.next().done).toBe(true);
      feed(
        pgoutput.begin(0x6000n, TS, 701),
        pgoutput.insert(7, ['3', 'c']),
        pgoutput.commit(0x6000n, 0x6028n, TS),
      );
      expect(changes(taken())[0]?.after).toEqual({ id: '3', v: 'c' });
    });

    it('refuses a replayed change of a relation never described, when the replay reaches it', () => {
      feed(pgoutput.streamStart(700, true), pgoutput.insert(9, ['1'], 700), pgoutput.streamStop());
      const replay = assembler.accept(pgoutput.streamCommit(700, 0x5000n, 0x5030n, TS));
      expect(replay?.next().value).toMatchObject({ kind: 'begin' });
      expect(() => replay?.next()).toThrow(/change for relation 9 before its Relation message/);
    });

    it('drops a streamed transaction aborted whole', () => {
      feed(
        pgoutput.relation(ITEMS),
        pgoutput.streamStart(800, true),
        pgoutput.insert(7, ['1', 'a'], 800),
        pgoutput.insert(7, ['2', 'b'], 801),
        pgoutput.streamStop(),
        pgoutput.streamAbort(800, 800),
      );
      expect(kinds(taken())).toEqual(['relation']);
      expect(assembler.stats()).toMatchObject({ abortedStreamedTransactions: 1, transactions: 0 });
      expect(() => feed(pgoutput.streamStart(800, false))).toThrow(/Stream Start of unknown transaction 800/);
    });

    it('skips the changes of an aborted subtransaction', () => {
      const replayed = feed(
        pgoutput.relation(ITEMS),
        pgoutput.streamStart(900, true),
        pgoutput.insert(7, ['1', 'a'], 900),
        pgoutput.insert(7, ['2', 'b'], 901),
        pgoutput.insert(7, ['3', 'c'], 902),
        pgoutput.streamStop(),
        pgoutput.streamStart(900, false),
        pgoutput.update(7, ['2', 'z'], undefined, 901),
        pgoutput.insert(7, ['4', 'd'], 900),
        pgoutput.streamStop(),
        pgoutput.streamAbort(900, 901),
        pgoutput.streamCommit(900, 0x5000n, 0x5030n, TS),
      );
      expect(changes(replayed).map((c) => c.after?.id)).toEqual(['1', '3', '4']);
      expect(assembler.stats()).toMatchObject({
        streamedTransactions: 1,
        abortedSubtransactions: 1,
        abortedStreamedTransactions: 0,
      });
    });

    it('refuses a later segment of a streamed transaction it never saw start', () => {
      expect(() => feed(pgoutput.streamStart(1000, false))).toThrow(
        new PgoutputProtocolError('Stream Start of unknown transaction 1000'),
      );
    });

    it('replays an empty transaction at a Stream Commit of a transaction that streamed no change', () => {
      expect(feed(pgoutput.streamCommit(1100, 0x5000n, 0x5030n, TS))).toEqual([
        { kind: 'begin', xid: 1100, commitTimeMs: T1.getTime(), commitLsn: 0x5000n },
        { kind: 'commit', xid: 1100, endLsn: 0x5030n },
      ]);
      expect(logged).toEqual([
        {
          level: 'warn',
          fields: { xid: 1100 },
          message: 'Stream Commit of a transaction that streamed no change',
        },
      ]);
    });

    it('spills a large streamed transaction to a spool file and deletes it after the replay', () => {
      assembler.dispose();
      assembler = make(0);
      const big = 'é'.repeat(400_000);
      feed(pgoutput.relation(ITEMS), pgoutput.streamStart(1200, true));
      for (let i = 0; i < 5; i++) feed(pgoutput.insert(7, [`${i}`, big], 1200));
      feed(pgoutput.streamStop());
      expect(spoolFiles()).toHaveLength(1);
      const replayed = feed(pgoutput.streamCommit(1200, 0x5000n, 0x5030n, TS));
      expect(changes(replayed).map((c) => [c.after?.id, c.after?.v === big])).toEqual(
        ['0', '1', '2', '3', '4'].map((id) => [id, true]),
      );
      expect(assembler.stats()).toMatchObject({ spilledTransactions: 1, streamedTransactions: 1 });
      expect(spoolFiles()).toEqual([]);
    });

    it('deletes the spools of pending transactions and of an unfinished replay on dispose', () => {
      assembler.dispose();
      assembler = make(0);
      const big = 'x'.repeat(600_000);
      feed(pgoutput.relation(ITEMS));
      for (const xid of [1300, 1400]) {
        feed(pgoutput.streamStart(xid, true));
        for (let i = 0; i < 3; i++) feed(pgoutput.insert(7, [`${i}`, big], xid));
        feed(pgoutput.streamStop());
      }
      expect(spoolFiles()).toHaveLength(2);
      const replay = assembler.accept(pgoutput.streamCommit(1300, 0x5000n, 0x5030n, TS));
      replay?.next();
      replay?.next();
      assembler.dispose();
      expect(readdirSync(parent)).toEqual([]);
      replay?.return();
      assembler.dispose();
    });
  });

  describe('keepalives', () => {
    it('emit an idle item only outside transactions and stream blocks, when walEnd advanced', () => {
      assembler.keepalive(0x100n);
      assembler.keepalive(0x100n);
      assembler.keepalive(0x80n);
      expect(taken()).toEqual([{ kind: 'idle', walEnd: 0x100n }]);

      feed(pgoutput.begin(0x200n, TS, 10));
      assembler.keepalive(0x300n);
      expect(kinds(taken())).toEqual(['begin']);
      feed(pgoutput.commit(0x200n, 0x228n, TS));
      assembler.keepalive(0x300n);
      expect(taken()).toEqual([
        { kind: 'commit', xid: 10, endLsn: 0x228n },
        { kind: 'idle', walEnd: 0x300n },
      ]);

      feed(pgoutput.streamStart(20, true));
      assembler.keepalive(0x400n);
      expect(taken()).toEqual([]);
      // A streamed transaction pending between its blocks does not hold idle back.
      feed(pgoutput.streamStop());
      assembler.keepalive(0x400n);
      expect(taken()).toEqual([{ kind: 'idle', walEnd: 0x400n }]);
      feed(pgoutput.streamAbort(20, 20));
    });
  });
});
