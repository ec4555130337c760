import { describe, expect, it } from 'vitest';
import type { ChangeEvent, TableRef } from '../../src/core/change.js';
import type { SourceRelation, StreamedItem, StreamItem } from '../../src/core/change-stream.js';
import { StreamVerdict } from '../../src/core/stream-verdict.js';
import {
  StreamSubscription,
  type SubscriptionOwner,
} from '../../src/runtime/shared-stream/stream-subscription.js';

const t1: TableRef = { schema: 'public', table: 't1' };
const t2: TableRef = { schema: 'public', table: 't2' };
const t3: TableRef = { schema: 'public', table: 't3' };

const change = (table: TableRef, xid: number, commitLsn: bigint, id = '1'): ChangeEvent => ({
  op: 'insert',
  table,
  after: { id },
  xid,
  commitLsn,
  commitTime: '2024-05-06T07:08:09Z',
});
const truncate = (tables: TableRef[], xid: number, commitLsn: bigint): ChangeEvent => ({
  op: 'truncate',
  table: tables[0] as TableRef,
  tables,
  xid,
  commitLsn,
  commitTime: '2024-05-06T07:08:09Z',
});
const begin = (xid: number, commitLsn?: bigint): StreamItem => ({
  kind: 'begin',
  xid,
  commitTimeMs: 1_000,
  ...(commitLsn === undefined ? {} : { commitLsn }),
});
const commit = (xid: number, endLsn: bigint): StreamItem => ({ kind: 'commit', xid, endLsn });
const changeItem = (table: TableRef, xid: number, commitLsn: bigint, id = '1'): StreamItem => ({
  kind: 'change',
  change: change(table, xid, commitLsn, id),
});
const idle = (walEnd: bigint): StreamItem => ({ kind: 'idle', walEnd });
const relationOf = (table: TableRef, relationId: number): SourceRelation => ({
  ...table,
  relationId,
  columns: [{ name: 'id', typeOid: 23, typeMod: -1, isKey: true }],
});
const relation = (table: TableRef, relationId: number): StreamItem & { kind: 'relation' } => ({
  kind: 'relation',
  relation: relationOf(table, relationId),
});
/** A whole transaction committed at [commitLsn, endLsn) with one insert per table given. */
const txn = (xid: number, commitLsn: bigint, endLsn: bigint, ...tables: TableRef[]): StreamItem[] => [
  begin(xid, commitLsn),
  ...tables.map((table) => changeItem(table, xid, commitLsn)),
  commit(xid, endLsn),
];
const streamChange = (xid: number, table: TableRef, sub = xid): StreamItem => ({
  kind: 'stream-change',
  xid,
  change: change(table, sub, 0n),
});
const streamCommit = (xid: number, endLsn: bigint): StreamedItem & { kind: 'stream-commit' } => ({
  kind: 'stream-commit',
  xid,
  endLsn,
  commitTimeMs: 2_000,
  verdict: new StreamVerdict(),
});

/** An owner that records what the subscription asks of it. */
class RecordingOwner implements SubscriptionOwner {
  readonly calls: string[] = [];
  readonly left: StreamSubscription[] = [];
  acknowledged(): void {
    this.calls.push('acknowledged');
  }
  drained(): void {
    this.calls.push('drained');
  }
  async leave(subscription: StreamSubscription): Promise<void> {
    this.calls.push('leave');
    this.left.push(subscription);
  }
  upstreamStats() {
    return undefined;
  }
  count(call: string): number {
    return this.calls.filter((c) => c === call).length;
  }
}

function subscription(options: { from?: bigint; tables?: TableRef[]; live?: boolean } = {}) {
  const owner = new RecordingOwner();
  const tables = new Set((options.tables ?? [t1]).map((t) => `${t.schema}.${t.table}`));
  const sub = new StreamSubscription('p1', tables, options.from ?? 100n, owner, options.live ?? false);
  const route = (...items: StreamItem[]) => {
    for (const item of items) sub.route(item);
  };
  /** Everything queued for the pipeline now (resolves at once when something waits). */
  const take = async (): Promise<StreamItem[]> => {
    expect(sub.queued).toBeGreaterThan(0);
    return (await sub.next()) ?? [];
  };
  return { owner, sub, route, take };
}

/** Whether `promise` settled by the time every queued microtask ran. */
async function settled<T>(promise: Promise<T>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  return done;
}

describe('a stream subscription', () => {
  describe('routing transactions', () => {
    it('hands over a transaction touching its table as begin, its items in order, commit', async () => {
      const { sub, route, take } = subscription();
      const items: StreamItem[] = [
        begin(7, 150n),
        changeItem(t2, 7, 150n, 'a'),
        relation(t1, 11),
        changeItem(t1, 7, 150n, 'b'),
        relation(t2, 12),
        changeItem(t2, 7, 150n, 'c'),
        changeItem(t1, 7, 150n, 'd'),
        commit(7, 200n),
      ];
      route(...items);
      expect(await take()).toEqual([items[0], items[2], items[3], items[6], items[7]]);
      expect(sub.position).toBe(200n);
    });

    it('hands over the begin once, before the first item kept, even when it is a relation', async () => {
      const { route, take } = subscription();
      route(begin(7, 150n), relation(t1, 11), changeItem(t1, 7, 150n), commit(7, 200n));
      const kinds = (await take()).map((i) => i.kind);
      expect(kinds).toEqual(['begin', 'relation', 'change', 'commit']);
    });

    it('turns a transaction of other tables into one idle item at its commit end', async () => {
      const { sub, route, take } = subscription();
      route(...txn(7, 150n, 200n, t2, t3));
      expect(await take()).toEqual([idle(200n)]);
      expect(sub.position).toBe(200n);
    });

    it('coalesces consecutive idle items into the last one', async () => {
      const { sub, route, take } = subscription();
      route(...txn(7, 150n, 200n, t2), ...txn(8, 250n, 300n, t3), idle(350n), ...txn(9, 400n, 450n, t2));
      expect(await take()).toEqual([idle(450n)]);
      expect(sub.position).toBe(450n);
    });

    it('does not coalesce an idle item with a transaction it keeps', async () => {
      const { route, take } = subscription();
      route(...txn(7, 150n, 200n, t2), ...txn(8, 250n, 300n, t1), ...txn(9, 350n, 400n, t2));
      expect((await take()).map((i) => (i.kind === 'idle' ? `idle ${i.walEnd}` : i.kind))).toEqual([
        'idle 200',
        'begin',
        'change',
        'commit',
        'idle 400',
      ]);
    });

    it('skips whole a transaction committed before its position, keeps one committed at or after it', async () => {
      const { sub, owner, route, take } = subscription({ from: 300n });
      route(...txn(5, 250n, 299n, t1));
      expect(sub.queued).toBe(0);
      expect(sub.position).toBe(300n);
      route(...txn(6, 299n, 300n, t1));
      expect(sub.queued).toBe(0);
      expect(sub.position).toBe(300n);
      const kept = txn(7, 300n, 350n, t1);
      route(...kept);
      expect(await take()).toEqual(kept);
      expect(sub.position).toBe(350n);
      expect(owner.count('drained')).toBe(1);
    });

    it('skips a relation that comes inside a skipped transaction', () => {
      const { sub, route } = subscription({ from: 300n });
      route(begin(5, 250n), relation(t1, 11), changeItem(t1, 5, 250n), commit(5, 280n));
      expect(sub.queued).toBe(0);
    });

    it('keeps a transaction whose begin does not know its commit position', async () => {
      const { route, take } = subscription({ from: 300n });
      const items: StreamItem[] = [begin(5), changeItem(t1, 5, 0n), commit(5, 400n)];
      route(...items);
      expect(await take()).toEqual(items);
    });

    it('drops idle items at or before its position and moves on with later ones', async () => {
      const { sub, route, take } = subscription({ from: 300n });
      route(idle(200n), idle(300n));
      expect(sub.queued).toBe(0);
      expect(sub.position).toBe(300n);
      route(idle(301n));
      expect(sub.position).toBe(301n);
      route(idle(250n));
      expect(sub.position).toBe(301n);
      expect(await take()).toEqual([idle(301n)]);
    });

    it('keeps a truncate of several tables one of which it reads', async () => {
      const { route, take } = subscription({ tables: [t2] });
      const items: StreamItem[] = [
        begin(7, 150n),
        { kind: 'change', change: truncate([t1, t2], 7, 150n) },
        commit(7, 200n),
      ];
      route(...items);
      expect(await take()).toEqual(items);
    });

    it('drops a truncate of tables it does not read', async () => {
      const { route, take } = subscription({ tables: [t3] });
      route(begin(7, 150n), { kind: 'change', change: truncate([t1, t2], 7, 150n) }, commit(7, 200n));
      expect(await take()).toEqual([idle(200n)]);
    });

    it('drops the rest of the transaction it joined in the middle of, and keeps its position', async () => {
      // Made while the stream is inside transaction 7: its begin went by.
      const { sub, route, take } = subscription({ from: 100n });
      sub.joinMidTransaction();
      route(relation(t1, 11), changeItem(t1, 7, 150n, '2'), commit(7, 200n));
      expect(sub.queued).toBe(0);
      expect(sub.position).toBe(100n);
      const next = txn(8, 250n, 300n, t1);
      route(...next);
      expect(await take()).toEqual(next);
    });
  });

  describe('announce', () => {
    it('hands over the relation of its table, and not another table’s', async () => {
      const { sub, take } = subscription();
      sub.announce(relation(t2, 12));
      expect(sub.queued).toBe(0);
      sub.announce(relation(t1, 11));
      expect(await take()).toEqual([relation(t1, 11)]);
    });
  });

  describe('reading', () => {
    it('resolves a waiting next() with everything routed in one synchronous burst, as one array', async () => {
      const { sub, owner, route } = subscription();
      const waiting = sub.next();
      const items = txn(7, 150n, 200n, t1);
      route(...items);
      route(idle(250n));
      expect(await waiting).toEqual([...items, idle(250n)]);
      expect(owner.count('drained')).toBe(1);
      expect(sub.queued).toBe(0);
    });

    it('keeps a next() waiting while nothing of its tables arrived', async () => {
      const { sub, route } = subscription({ from: 300n });
      const waiting = sub.next();
      route(...txn(5, 200n, 250n, t1), idle(280n));
      expect(await settled(waiting)).toBe(false);
      route(idle(320n));
      expect(await waiting).toEqual([idle(320n)]);
    });

    it('gives what is queued at once, and calls drained() for each take', async () => {
      const { sub, owner, route } = subscription();
      route(...txn(7, 150n, 200n, t1));
      expect(await sub.next()).toHaveLength(3);
      route(idle(300n));
      expect(await sub.next()).toEqual([idle(300n)]);
      expect(owner.count('drained')).toBe(2);
    });

    it('resolves a waiting next() with null on close(), and gives null after', async () => {
      const { sub, owner } = subscription();
      const waiting = sub.next();
      await sub.close();
      expect(await waiting).toBeNull();
      expect(await sub.next()).toBeNull();
      expect(owner.left).toEqual([sub]);
      expect(sub.ended).toBe(true);
    });

    it('drops what is queued on close(), and routes nothing after', async () => {
      const { sub, owner, route } = subscription();
      route(...txn(7, 150n, 200n, t1));
      await sub.close();
      route(...txn(8, 250n, 300n, t1));
      expect(sub.queued).toBe(0);
      expect(await sub.next()).toBeNull();
      await sub.close();
      expect(owner.count('leave')).toBe(1);
    });

    it('resolves a next() waiting when close() comes in the same burst as items with null', async () => {
      const { sub, route } = subscription();
      const waiting = sub.next();
      route(...txn(7, 150n, 200n, t1));
      void sub.close();
      expect(await waiting).toBeNull();
    });

    it('rejects next() with the failure once the items queued before it were taken', async () => {
      const { sub, route } = subscription();
      const items = txn(7, 150n, 200n, t1);
      route(...items);
      const error = new Error('the source went away');
      sub.fail(error);
      expect(sub.ended).toBe(true);
      expect(await sub.next()).toEqual(items);
      await expect(sub.next()).rejects.toBe(error);
      route(...txn(8, 250n, 300n, t1));
      await expect(sub.next()).rejects.toBe(error);
    });

    it('rejects a waiting next() with the failure', async () => {
      const { sub } = subscription();
      const waiting = sub.next();
      const error = new Error('boom');
      sub.fail(error);
      await expect(waiting).rejects.toBe(error);
    });

    it('hands over items routed in the burst before a failure to the waiting next() first', async () => {
      const { sub, route } = subscription();
      const waiting = sub.next();
      const items = txn(7, 150n, 200n, t1);
      route(...items);
      const error = new Error('boom');
      sub.fail(error);
      expect(await waiting).toEqual(items);
      await expect(sub.next()).rejects.toBe(error);
    });

    it('raises acked only upward, telling the owner each time', () => {
      const { sub, owner } = subscription({ from: 100n });
      expect(sub.acked).toBe(100n);
      sub.ack(100n);
      sub.ack(50n);
      expect(owner.count('acknowledged')).toBe(0);
      sub.ack(200n);
      expect(sub.acked).toBe(200n);
      sub.ack(150n);
      expect(sub.acked).toBe(200n);
      sub.ack(300n);
      expect(sub.acked).toBe(300n);
      expect(owner.count('acknowledged')).toBe(2);
    });
  });

  describe('streamed transactions', () => {
    it('hands a live subscription the streamed items of its tables only', async () => {
      const { route, take } = subscription({ live: true, tables: [t1] });
      const items: StreamItem[] = [
        { kind: 'stream-relation', xid: 9, relation: relationOf(t1, 11) },
        { kind: 'stream-relation', xid: 9, relation: relationOf(t2, 12) },
        streamChange(9, t1),
        streamChange(9, t2),
        streamChange(9, t1, 10),
        { kind: 'stream-abort', xid: 9, subxid: 10 },
        { kind: 'stream-abort', xid: 8, subxid: 8 },
      ];
      route(...items);
      expect(await take()).toEqual([items[0], items[2], items[4], items[5]]);
    });

    it('hands a subscription that is not live no streamed item', () => {
      const { sub, route } = subscription({ live: false });
      route(streamChange(9, t1), { kind: 'stream-abort', xid: 9, subxid: 10 });
      expect(sub.queued).toBe(0);
    });

    it('answers the verdict of the stream-commit it was handed: delivered', async () => {
      const { sub, route, take } = subscription({ live: true, from: 100n });
      route(streamChange(9, t1));
      await take();
      const item = streamCommit(9, 500n);
      const answer = sub.streamCommit(item);
      expect(answer).toBeInstanceOf(Promise);
      const handed = await take();
      expect(handed).toHaveLength(1);
      const given = handed[0] as StreamedItem & { kind: 'stream-commit' };
      expect(given).toMatchObject({ kind: 'stream-commit', xid: 9, endLsn: 500n, commitTimeMs: 2_000 });
      // The pipeline's verdict is its own: the stream's waits for every pipeline's.
      expect(given.verdict).not.toBe(item.verdict);
      expect(await settled(Promise.resolve(answer))).toBe(false);
      expect(sub.position).toBe(100n);
      given.verdict.settle(true);
      expect(await answer).toBe(true);
      expect(sub.position).toBe(500n);
      // The replay that follows when another pipeline did not deliver it is skipped here.
      route(...txn(9, 480n, 500n, t1));
      expect(sub.queued).toBe(0);
    });

    it('answers the verdict of the stream-commit it was handed: not delivered, the replay is kept', async () => {
      const { sub, route, take } = subscription({ live: true, from: 100n });
      route(streamChange(9, t1));
      await take();
      const answer = sub.streamCommit(streamCommit(9, 500n));
      const [given] = (await take()) as (StreamedItem & { kind: 'stream-commit' })[];
      given?.verdict.settle(false);
      expect(await answer).toBe(false);
      expect(sub.position).toBe(100n);
      const replay = txn(9, 480n, 500n, t1);
      route(...replay);
      expect(await take()).toEqual(replay);
      expect(sub.position).toBe(500n);
    });

    it('says at once that a streamed transaction it never touched passed, as an idle item', async () => {
      const { sub, route, take } = subscription({ live: true, from: 100n });
      route(streamChange(9, t2));
      expect(sub.queued).toBe(0);
      expect(sub.streamCommit(streamCommit(9, 500n))).toBe(true);
      expect(sub.position).toBe(500n);
      expect(await take()).toEqual([idle(500n)]);
    });

    it('forgets a streamed transaction rolled back whole', () => {
      const { sub, route } = subscription({ live: true });
      route(streamChange(9, t1), { kind: 'stream-abort', xid: 9, subxid: 9 });
      expect(sub.streamCommit(streamCommit(9, 500n))).toBe(true);
    });

    it('says a streamed transaction it touched was not delivered when it is not live', () => {
      const { sub, route } = subscription({ live: false, from: 100n });
      route(streamChange(9, t1));
      expect(sub.streamCommit(streamCommit(9, 500n))).toBe(false);
      expect(sub.queued).toBe(0);
      expect(sub.position).toBe(100n);
    });

    it('gives the verdict as not delivered when closed while it is pending', async () => {
      const { sub, route, take } = subscription({ live: true });
      route(streamChange(9, t1));
      await take();
      const answer = sub.streamCommit(streamCommit(9, 500n));
      await take();
      await sub.close();
      expect(await answer).toBe(false);
      expect(sub.position).toBe(100n);
    });

    it('gives the verdict as not delivered when failed while it is pending', async () => {
      const { sub, route, take } = subscription({ live: true });
      route(streamChange(9, t1));
      await take();
      const answer = sub.streamCommit(streamCommit(9, 500n));
      sub.fail(new Error('boom'));
      expect(await answer).toBe(false);
    });
  });
});
