import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChangeEvent, Row, TableSchema } from '../../src/core/change.js';
import { type ChangeBatch, FencedError, type Sink } from '../../src/core/sink.js';
import { notCompared } from '../../src/core/table-comparison.js';
import {
  copyLines,
  copyText,
  ev,
  lines,
  orderRows,
  orders,
  type Tx,
  tx,
} from '../support/message-sink-fixtures.js';
import type { ContractPipeline } from '../support/sink-contract/contract-kind.js';
import { contractKinds } from '../support/sink-contract/index.js';
import { col, tableOf } from '../support/table-schemas.js';

/** The one place a batch is made: the changes of whole transactions, checkpointed at the end of `upTo`. */
const batchOf = (changes: ChangeEvent[], upTo: Tx, epoch = 1): ChangeBatch => ({
  changes,
  commitLsn: upTo.end,
  epoch,
});
/** The checkpoint a sink reports after `upTo`. */
const checkpointAt = (upTo: Tx, epoch = 1) => ({ lsn: upTo.end, epoch });

const order = (id: number, total: string, note: string | null = 'n'): Row => ({
  id: String(id),
  total,
  note,
});
const line = (id: number, sku: string): Row => ({ id: String(id), sku });
const partition = (table: TableSchema, partitionId: string) => ({
  table: { schema: table.schema, table: table.table },
  partitionId,
});

/** A case that needs what `missing` says the kind lacks: skipped, with the reason in its title, when it does. */
const itNeeding = (missing: string | undefined, title: string, test: () => Promise<void>) =>
  it.skipIf(missing !== undefined)(missing === undefined ? title : `${title} (skipped: ${missing})`, test);

/**
 * The sink contract (`core/sink.ts`), run over every kind of sink, each read back through its own
 * reader (`test/support/sink-contract/`): fencing, checkpoints, resumable snapshots, unchanged
 * TOAST columns, replays and schema changes.
 */
describe.each(contractKinds())('the sink contract: $name', (kind) => {
  let server: Awaited<ReturnType<typeof kind.start>>;
  const opened: Sink[] = [];

  beforeAll(async () => {
    server = await kind.start();
  });
  afterEach(async () => {
    for (const sink of opened.splice(0)) await sink.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A scenario run once for the cases that each read a different part of its outcome. */
  const once = <T>(run: () => Promise<T>) => {
    let outcome: Promise<T> | undefined;
    return () => {
      outcome ??= run();
      return outcome;
    };
  };

  /** A fresh pipeline whose sinks the suite closes. */
  async function pipeline(): Promise<ContractPipeline> {
    const p = await server.pipeline();
    return {
      ...p,
      open: async (tables) => {
        const sink = await p.open(tables);
        opened.push(sink);
        return sink;
      },
    };
  }

  describe('fencing', () => {
    it('refuses a batch from an older epoch, writing nothing of it, while the newer writer goes on', async () => {
      const p = await pipeline();
      const older = await p.open([orders, lines]);
      const newer = await p.open([orders, lines]);
      await older.applyBatch(batchOf([ev(tx(1), { op: 'insert', after: order(1, '1.00') })], tx(1), 1));
      await newer.applyBatch(batchOf([ev(tx(2), { op: 'insert', after: order(2, '2.00') })], tx(2), 2));
      const refused = older.applyBatch(
        batchOf([ev(tx(3), { op: 'insert', after: order(3, '3.00') })], tx(3), 1),
      );
      await expect(refused).rejects.toBeInstanceOf(FencedError);
      await expect(refused).rejects.toMatchObject({ storedEpoch: 2, writerEpoch: 1 });
      expect(await p.rows(orders)).toEqual([order(1, '1.00'), order(2, '2.00')]);
      expect(await older.readCheckpoint()).toEqual(checkpointAt(tx(2), 2));

      await newer.applyBatch(batchOf([ev(tx(4), { op: 'insert', after: order(4, '4.00') })], tx(4), 2));
      expect(await newer.readCheckpoint()).toEqual(checkpointAt(tx(4), 2));
      expect((await p.rows(orders)).map((r) => r.id)).toEqual(['1', '2', '4']);
    });
  });

  describe('checkpoint', () => {
    it('stores the checkpoint with the batch, and another sink of the pipeline reads it back', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      expect(await sink.readCheckpoint()).toBeNull();
      const stored = await sink.applyBatch(
        batchOf([ev(tx(1), { op: 'insert', after: order(1, '1.00') })], tx(1)),
      );
      expect(stored).toEqual(checkpointAt(tx(1)));
      expect(await (await p.open([orders, lines])).readCheckpoint()).toEqual(checkpointAt(tx(1)));
      expect(await (await (await pipeline()).open([orders, lines])).readCheckpoint()).toBeNull();
    });

    it('writes changes held back while their table was copied again, older than the checkpoint', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      await sink.applyBatch(batchOf([ev(tx(2), { op: 'insert', after: order(2, '2.00') })], tx(2)));
      // The held changes come after, under the position acknowledged since.
      const held = await sink.applyBatch(
        batchOf([ev(tx(1), { op: 'insert', table: lines, after: line(1, 'held') })], tx(2)),
      );
      expect(held).toEqual(checkpointAt(tx(2)));
      expect(await sink.readCheckpoint()).toEqual(checkpointAt(tx(2)));
      expect(await p.rows(lines)).toEqual([line(1, 'held')]);
    });
  });

  describe('snapshot partitions', () => {
    /** Partition 0 written, partition 1 failing after `rows` of its rows, then a restart writing it whole. */
    async function resumed(p: ContractPipeline, rows: number) {
      const sink = await p.open([orders, lines]);
      expect(await sink.snapshotPartitionsDone()).toEqual([]);
      expect(
        await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 3))),
      ).toBe(3);
      async function* failing() {
        yield copyLines(orderRows(4, 3 + rows));
        throw new Error('source connection lost');
      }
      await expect(
        sink.writeSnapshotPartition(orders, partition(orders, '1'), Readable.from(failing())),
      ).rejects.toThrow('source connection lost');
      await sink.close(); // a crash mid-partition

      const again = await p.open([orders, lines]);
      expect(await again.snapshotPartitionsDone()).toEqual([partition(orders, '0')]);
      expect(
        await again.writeSnapshotPartition(orders, partition(orders, '1'), copyText(orderRows(4, 3 + rows))),
      ).toBe(rows);
      await again.finishSnapshot(orders);
      expect((await again.snapshotPartitionsDone()).map((d) => d.partitionId).sort()).toEqual(['0', '1']);
    }

    it('marks each partition done with its rows; a restarted sink skips the done ones and converges', async () => {
      const p = await pipeline();
      await resumed(p, 10);
      expect(await p.rows(orders)).toEqual(orderRows(1, 13));
      // Another pipeline's markers are its own.
      expect(await (await (await pipeline()).open([orders, lines])).snapshotPartitionsDone()).toEqual([]);
    });

    itNeeding(
      kind.cannot.messageIds,
      'sends the rows of a partition that failed midway again under the ids they had',
      async () => {
        const p = await pipeline();
        // Rows enough for some to go out before the failure, whatever the kind's chunk.
        await resumed(p, 1000);
        const ids = (await p.messageIds?.(orders)) ?? [];
        expect(new Set(ids).size).toBe(1003);
        expect(ids.every((id) => /^snapshot\/public\/orders\/\["\d+"\]$/.test(id))).toBe(true);
        expect(await p.rows(orders)).toEqual(orderRows(1, 1003));
      },
    );

    itNeeding(
      kind.cannot.rewritesDonePartition,
      'converges when a done partition is written again',
      async () => {
        const p = await pipeline();
        const sink = await p.open([orders, lines]);
        await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 3)));
        await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 3)));
        await sink.finishSnapshot(orders);
        expect(await p.rows(orders)).toEqual(orderRows(1, 3));
        expect(await sink.snapshotPartitionsDone()).toEqual([partition(orders, '0')]);
      },
    );

    it("forgets only the reset table's partition markers", async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 2)));
      await sink.writeSnapshotPartition(orders, partition(orders, '1'), copyText(orderRows(3, 4)));
      await sink.writeSnapshotPartition(lines, partition(lines, '0'), copyText([line(1, 'A')], lines));
      await sink.resetTable(orders);
      expect(await sink.snapshotPartitionsDone()).toEqual([partition(lines, '0')]);
      expect(await (await p.open([orders, lines])).snapshotPartitionsDone()).toEqual([partition(lines, '0')]);
    });

    itNeeding(kind.cannot.emptiesTargetOnReset, "empties the reset table's target, and only it", async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 2)));
      await sink.writeSnapshotPartition(lines, partition(lines, '0'), copyText([line(1, 'A')], lines));
      await sink.resetTable(orders);
      expect(await p.rows(orders)).toEqual([]);
      expect(await p.rows(lines)).toEqual([line(1, 'A')]);
    });

    itNeeding(
      kind.cannot.emptiesTargetOnReset ? undefined : 'its target is its own, emptied on reset (case above)',
      'leaves what was written of a reset table to its readers',
      async () => {
        const p = await pipeline();
        const sink = await p.open([orders, lines]);
        await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 2)));
        await sink.resetTable(orders);
        expect(await p.rows(orders)).toEqual(orderRows(1, 2));
      },
    );
  });

  describe('unchanged TOAST columns', () => {
    it('keeps the stored value of a column the change left out, in place and on a key change', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      const long = 'long '.repeat(10_000);
      await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText([order(1, '1.00', long)]));
      await sink.applyBatch(batchOf([ev(tx(1), { op: 'insert', after: order(2, '2.00', 'short') })], tx(1)));
      await sink.applyBatch(
        batchOf(
          [
            ev(tx(2), { op: 'update', after: { id: '1', total: '1.50' }, unchangedToast: ['note'] }),
            ev(tx(2), {
              op: 'update',
              key: { id: '2' },
              after: { id: '20', total: '2.50' },
              unchangedToast: ['note'],
            }),
          ],
          tx(2),
        ),
      );
      expect(await p.rows(orders)).toEqual([order(1, '1.50', long), order(20, '2.50', 'short')]);
    });
  });

  describe('replay', () => {
    /** One transaction with every trap a replay meets: a key inserted, deleted and inserted again, a key change, a partial update. */
    const traps = (t: Tx): ChangeEvent[] => [
      ev(t, { op: 'insert', after: order(10, '1.00', 'a') }),
      ev(t, { op: 'delete', key: { id: '10' } }),
      ev(t, { op: 'insert', after: order(10, '2.00', 'b') }),
      ev(t, { op: 'update', after: { id: '1', total: '9.99' }, unchangedToast: ['note'] }),
      ev(t, { op: 'update', key: { id: '2' }, after: order(20, '7.00', 'moved') }),
      ev(t, { op: 'delete', key: { id: '3' } }),
      ev(t, { op: 'insert', table: lines, after: line(7, 'x') }),
    ];
    const afterTraps = [
      order(1, '9.99'),
      order(4, '4.50'),
      order(10, '2.00', 'b'),
      order(20, '7.00', 'moved'),
    ];

    it('ends where it ended when a batch is applied twice', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 4)));
      const once = batchOf(traps(tx(1)), tx(1));
      await sink.applyBatch(once);
      expect(await p.rows(orders)).toEqual(afterTraps);
      // A crash before the source heard of the commit: the same batch comes again.
      await (await p.open([orders, lines])).applyBatch(once);
      expect(await p.rows(orders)).toEqual(afterTraps);
      expect(await p.rows(lines)).toEqual([line(7, 'x')]);
      expect(await sink.readCheckpoint()).toEqual(checkpointAt(tx(1)));
    });

    itNeeding(
      kind.cannot.messageIds,
      'sends the messages of a batch applied twice again under the ids they had (at least once)',
      async () => {
        const p = await pipeline();
        const sink = await p.open([orders, lines]);
        const once = batchOf(traps(tx(1)), tx(1));
        await sink.applyBatch(once);
        const ids = new Set(await p.messageIds?.(orders));
        expect(ids.size).toBe(6);
        await (await p.open([orders, lines])).applyBatch(once);
        expect(new Set(await p.messageIds?.(orders))).toEqual(ids);
      },
    );

    /** A transaction too large for one batch, written in pieces under the checkpoint before it, then replayed whole after two crashes. */
    async function pieces(p: ContractPipeline) {
      const [t1, t2] = [tx(1), tx(2)];
      const first = await p.open([orders, lines]);
      await first.applyBatch(batchOf([ev(t1, { op: 'insert', after: order(1, '1.00') })], t1));
      const t2changes = [
        ...[11, 12, 13].map((id) => ev(t2, { op: 'insert', after: order(id, `${id}.00`) })),
        ev(t2, { op: 'insert', table: lines, after: line(1, 'A') }),
        ...[14, 15].map((id) => ev(t2, { op: 'insert', after: order(id, `${id}.00`) })),
      ];
      await first.applyBatch(batchOf(t2changes.slice(0, 2), t1));
      await first.applyBatch(batchOf(t2changes.slice(2, 4), t1));
      expect(await first.readCheckpoint()).toEqual(checkpointAt(t1));
      await first.close(); // a crash before the rest of t2
      // The stream starts again at the checkpoint: t2 comes whole, cut otherwise.
      const second = await p.open([orders, lines]);
      await second.applyBatch(batchOf(t2changes.slice(0, 1), t1));
      await second.close(); // and a crash again, having got less far than the first run
      const third = await p.open([orders, lines]);
      await third.applyBatch(batchOf(t2changes.slice(0, 5), t1));
      await third.applyBatch(batchOf(t2changes.slice(5), t2));
      expect(await third.readCheckpoint()).toEqual(checkpointAt(t2));
    }

    const piecesWritten = once(async () => {
      const p = await pipeline();
      await pieces(p);
      return p;
    });

    it('ends a transaction written in pieces and replayed whole after crashes as if written once', async () => {
      const p = await piecesWritten();
      expect((await p.rows(orders)).map((r) => r.id)).toEqual(['1', '11', '12', '13', '14', '15']);
      expect(await p.rows(lines)).toEqual([line(1, 'A')]);
    });

    itNeeding(
      kind.cannot.messageIds,
      'sends each message of a transaction written in pieces once, even when it is replayed whole',
      async () => {
        const p = await piecesWritten();
        const [t1, t2] = [tx(1), tx(2)];
        expect(await p.messageIds?.(orders)).toEqual([
          `${t1.lsnText}/public/orders/0`,
          ...[0, 1, 2, 3, 4].map((n) => `${t2.lsnText}/public/orders/${n}`),
        ]);
        expect(await p.messageIds?.(lines)).toEqual([`${t2.lsnText}/shop/lines/0`]);
      },
    );

    it('empties a truncated table in its place in the batch, and only it', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      const t = tx(1);
      await sink.applyBatch(
        batchOf(
          [
            ev(t, { op: 'insert', after: order(1, '1.00') }),
            ev(t, { op: 'insert', table: lines, after: line(1, 'a') }),
            ev(t, { op: 'insert', after: order(2, '2.00') }),
            ev(t, { op: 'truncate', tables: [orders, lines] }),
            ev(t, { op: 'insert', after: order(3, '3.00') }),
            ev(t, { op: 'insert', table: lines, after: line(2, 'b') }),
            ev(t, { op: 'truncate', table: lines, tables: [lines] }),
            ev(t, { op: 'insert', table: lines, after: line(3, 'c') }),
          ],
          t,
        ),
      );
      expect(await p.rows(orders)).toEqual([order(3, '3.00')]);
      expect(await p.rows(lines)).toEqual([line(3, 'c')]);
    });
  });

  describe('schema changes', () => {
    /** `orders` after the change: `note` renamed `remark`, `total` dropped, `added` added (42 in the rows before). */
    const reshaped = tableOf(
      [col('id', 'integer', { isKey: true }), col('remark', 'text'), col('added', 'bigint')],
      ['id'],
      { schema: 'public', table: 'orders' },
    );
    async function reshape(p: ContractPipeline) {
      const sink = await p.open([orders]);
      await sink.writeSnapshotPartition(orders, partition(orders, '0'), copyText(orderRows(1, 2)));
      const plan = sink.planSchemaChange(orders, [
        { kind: 'add_column', column: 'added', type: 'bigint', nullable: true, existing_value: '42' },
        { kind: 'rename_column', from: 'note', to: 'remark' },
        { kind: 'drop_column', column: 'total' },
      ]);
      expect(await sink.applySchemaChange(reshaped, plan)).toEqual({ skipped: [] });
      // Applied again (a retry after a crash part way): what is made already is skipped.
      const again = await sink.applySchemaChange(reshaped, plan);
      expect(again.skipped.every((s) => plan.includes(s))).toBe(true);
      expect(again.skipped.length > 0).toBe(plan.length > 0);
      await sink.applyBatch(
        batchOf(
          [{ ...ev(tx(1), { op: 'insert', after: { id: '3', remark: 'r', added: '7' } }), table: reshaped }],
          tx(1),
        ),
      );
      return sink;
    }

    const reshapedPipeline = once(async () => {
      const p = await pipeline();
      await reshape(p);
      return p;
    });

    it('writes changes of the approved new shape, and applying the plan again skips what it made', async () => {
      const p = await reshapedPipeline();
      expect((await p.rows(reshaped)).filter((r) => r.id === '3')).toEqual([
        { id: '3', remark: 'r', added: '7' },
      ]);
    });

    itNeeding(
      kind.cannot.reshapesWrittenRows,
      'brings the rows written before to the new shape',
      async () => {
        const p = await reshapedPipeline();
        expect(await p.rows(reshaped)).toEqual([
          { id: '1', remark: 'n', added: '42' },
          { id: '2', remark: 'n', added: '42' },
          { id: '3', remark: 'r', added: '7' },
        ]);
      },
    );
  });

  describe('verification', () => {
    itNeeding(kind.cannot.comparison, 'reads back through its comparison what its reader reads', async () => {
      const p = await pipeline();
      const sink = await p.open([orders, lines]);
      await sink.writeSnapshotPartition(
        orders,
        partition(orders, '0'),
        copyText([...orderRows(1, 3), order(4, '4.00', null)]),
      );
      expect(sink.comparison).toBeDefined();
      const comparison = await (sink.comparison as NonNullable<Sink['comparison']>)();
      const { dialect } = comparison;
      const parts = orders.columns.map((c) => {
        const compared = c.isKey ? comparison.key(c) : comparison.column(c);
        if (notCompared(compared)) throw new Error(`${c.name} is not compared: ${compared.reason}`);
        return dialect.tagged(dialect.ident(c.name), compared.sql);
      });
      const reader = await comparison.open();
      try {
        const read = await reader.query(
          `SELECT ${parts.join(', ')} FROM ${dialect.table(comparison.target(orders))}`,
        );
        const rows = read.map((values) =>
          Object.fromEntries(
            orders.columns.map((c, i) => [c.name, values[i] === 'N' ? null : (values[i] as string).slice(1)]),
          ),
        );
        expect(rows.sort((a, b) => Number(a.id) - Number(b.id))).toEqual(await p.rows(orders));
      } finally {
        await reader.close();
      }
    });
  });
});
