import { describe, expect, it, vi } from 'vitest';
import type { ChangeEvent, TableRef } from '../../src/core/change.js';
import type {
  ChangeStream,
  ChangeStreamStats,
  StreamedItem,
  StreamItem,
} from '../../src/core/change-stream.js';
import type { SlotClaim, Source, StreamOptions } from '../../src/core/source.js';
import { StreamVerdict } from '../../src/core/stream-verdict.js';
import type { Logger } from '../../src/log/logger.js';
import { isSharedStreamName, sharedStreamName } from '../../src/runtime/shared-stream/shared-streams.js';
import { type ParkedMember, StreamGroup } from '../../src/runtime/shared-stream/stream-group.js';
import type { StreamSubscription } from '../../src/runtime/shared-stream/stream-subscription.js';

const t1: TableRef = { schema: 'public', table: 't1' };
const t2: TableRef = { schema: 'public', table: 't2' };
const t3: TableRef = { schema: 'public', table: 't3' };
const keys = (...tables: TableRef[]) => new Set(tables.map((t) => `${t.schema}.${t.table}`));

const change = (table: TableRef, xid: number, commitLsn: bigint): ChangeEvent => ({
  op: 'insert',
  table,
  after: { id: String(xid) },
  xid,
  commitLsn,
  commitTime: '2024-05-06T07:08:09Z',
});
const begin = (xid: number, commitLsn: bigint): StreamItem => ({
  kind: 'begin',
  xid,
  commitTimeMs: 1_000,
  commitLsn,
});
const changeItem = (table: TableRef, xid: number, commitLsn: bigint): StreamItem => ({
  kind: 'change',
  change: change(table, xid, commitLsn),
});
const commit = (xid: number, endLsn: bigint): StreamItem => ({ kind: 'commit', xid, endLsn });
const idle = (walEnd: bigint): StreamItem => ({ kind: 'idle', walEnd });
/** A whole transaction committed at [commitLsn, endLsn) with one insert per table given. */
const txn = (xid: number, commitLsn: bigint, endLsn: bigint, ...tables: TableRef[]): StreamItem[] => [
  begin(xid, commitLsn),
  ...tables.map((table) => changeItem(table, xid, commitLsn)),
  commit(xid, endLsn),
];
const streamChange = (xid: number, table: TableRef): StreamItem => ({
  kind: 'stream-change',
  xid,
  change: change(table, xid, 0n),
});
type StreamCommit = StreamedItem & { kind: 'stream-commit' };
const streamCommit = (xid: number, endLsn: bigint): StreamCommit => ({
  kind: 'stream-commit',
  xid,
  endLsn,
  commitTimeMs: 2_000,
  verdict: new StreamVerdict(),
});
/** Items as short words, to compare what a pipeline got. */
const words = (items: StreamItem[] | null): string[] =>
  (items ?? []).map((item) => {
    switch (item.kind) {
      case 'begin':
        return `begin ${item.xid}`;
      case 'change':
        return `change ${item.change.xid} ${item.change.table.table}`;
      case 'commit':
        return `commit ${item.xid} ${item.endLsn}`;
      case 'idle':
        return `idle ${item.walEnd}`;
      case 'stream-commit':
        return `stream-commit ${item.xid}`;
      case 'stream-change':
        return `stream-change ${item.xid} ${item.change.table.table}`;
      default:
        return item.kind;
    }
  });

/** Lets every microtask (and the promise chains they start) run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

function deferred<T>() {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** An upstream the test scripts: items pushed, then read by next(); acks and close recorded. */
class ScriptedStream implements ChangeStream {
  readonly acks: bigint[] = [];
  closed = false;
  /** Set to hold close() open until the test settles it. */
  closeGate: Promise<void> | undefined;
  private readonly batches: StreamItem[][] = [];
  private waiter: { resolve: (items: StreamItem[] | null) => void; reject: (e: unknown) => void } | undefined;
  private failure: { error: unknown } | undefined;

  constructor(
    readonly name: string,
    readonly options: StreamOptions,
  ) {}

  push(...items: StreamItem[]): void {
    if (this.closed) throw new Error('pushed to a closed upstream');
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter) waiter.resolve(items);
    else this.batches.push(items);
  }

  fail(error: unknown): void {
    this.failure = { error };
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
  }

  next(): Promise<StreamItem[] | null> {
    const batch = this.batches.shift();
    if (batch) return Promise.resolve(batch);
    if (this.failure) return Promise.reject(this.failure.error);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  ack(lsn: bigint): void {
    this.acks.push(lsn);
  }

  close(): Promise<void> {
    this.closed = true;
    this.batches.length = 0;
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve(null);
    return this.closeGate ?? Promise.resolve();
  }

  stats(): ChangeStreamStats {
    return {
      transactions: 0,
      streamedTransactions: 0,
      spilledTransactions: 0,
      queuedItems: this.batches.length,
      queuedBytes: 0,
      arrivingSinceMs: null,
      failedStatusUpdates: 0,
    };
  }
}

/** A source session whose streams are scripted, recording claims, position reads and close. */
class FakeSource {
  readonly streams: ScriptedStream[] = [];
  readonly claims: string[] = [];
  readonly positionReads: string[][] = [];
  closes = 0;
  claimPosition = 0n;
  /** Set: the next claims make the slot anew, with this snapshot. */
  claimSnapshot: SlotClaim['snapshot'];
  confirmedLsn: bigint | null = 0n;

  readonly source = {
    startStream: (name: string, options: StreamOptions): ChangeStream => {
      const stream = new ScriptedStream(name, options);
      this.streams.push(stream);
      return stream;
    },
    claimSlot: async (pipelineId: string): Promise<SlotClaim> => {
      this.claims.push(pipelineId);
      return this.claimSnapshot
        ? { position: this.claimPosition, snapshot: this.claimSnapshot }
        : { position: this.claimPosition };
    },
    positions: async (pipelineIds: readonly string[]) => {
      this.positionReads.push([...pipelineIds]);
      return {
        walEnd: 0n,
        slots: new Map(
          pipelineIds.map((id) => [
            id,
            { confirmedLsn: this.confirmedLsn, retainedWalBytes: null, walStatus: null },
          ]),
        ),
      };
    },
    close: async () => {
      this.closes++;
    },
  } as unknown as Source;

  /** The `i`th upstream, once the group started it. */
  async stream(i: number): Promise<ScriptedStream> {
    return vi.waitFor(() => {
      const stream = this.streams[i];
      if (!stream) throw new Error(`upstream ${i} not started (${this.streams.length} started)`);
      return stream;
    });
  }
}

function harness(options: { members?: () => Promise<ParkedMember[]>; holdWalBytes?: number } = {}) {
  const fake = new FakeSource();
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (fields: Record<string, unknown>, message: string) => warnings.push({ fields, message }),
    error: () => undefined,
    child: () => logger,
  };
  let opened = 0;
  const released: string[] = [];
  const saved: [string, bigint][] = [];
  /** Set to make the store's notes wait. */
  const store: { slow?: () => Promise<void> } = {};
  const group = new StreamGroup({
    name: 'replicator_s_0123456789abcdef01234567',
    openSource: async () => {
      opened++;
      return fake.source;
    },
    members: options.members ?? (async () => []),
    release: async (pipelineId) => {
      released.push(pipelineId);
    },
    savePositions: async (positions) => {
      await store.slow?.();
      for (const [id, lsn] of positions) saved.push([id, lsn]);
    },
    logger: logger as unknown as Logger,
    holdWalBytes: options.holdWalBytes ?? 1 << 30,
  });
  const claim = (pipelineId: string) =>
    group.claim(pipelineId, fake.source, { mayCreate: false, logger: logger as unknown as Logger });
  return { group, fake, warnings, released, saved, store, claim, opened: () => opened };
}

/** The next items the pipeline reads. */
const read = async (subscription: StreamSubscription) => words(await subscription.next());

describe('a stream group', () => {
  describe('fan-out', () => {
    it('starts the upstream from the first subscriber’s position, and hands each subscriber its tables', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      expect(upstream.name).toBe(group.name);
      expect(upstream.options).toMatchObject({ from: 100n, live: false });
      const b = group.subscribe('b', keys(t2), 100n);
      upstream.push(...txn(1, 150n, 200n, t1), ...txn(2, 250n, 300n, t2), ...txn(3, 350n, 400n, t1, t2));
      expect(await read(a)).toEqual([
        'begin 1',
        'change 1 t1',
        'commit 1 200',
        'idle 300',
        'begin 3',
        'change 3 t1',
        'commit 3 400',
      ]);
      expect(await read(b)).toEqual([
        'idle 200',
        'begin 2',
        'change 2 t2',
        'commit 2 300',
        'begin 3',
        'change 3 t2',
        'commit 3 400',
      ]);
      expect(fake.streams).toHaveLength(1);
      await a.close();
      await b.close();
    });

    it('starts the upstream live when a subscriber takes large transactions as they arrive', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n, { live: true });
      expect((await fake.stream(0)).options.live).toBe(true);
      await a.close();
    });

    it('announces the shapes seen in this session to a subscriber joining later', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      const relation: StreamItem = {
        kind: 'relation',
        relation: { ...t2, relationId: 12, columns: [{ name: 'id', typeOid: 23, typeMod: -1, isKey: true }] },
      };
      upstream.push(begin(1, 150n), relation, changeItem(t2, 1, 150n), commit(1, 200n));
      expect(await read(a)).toEqual(['idle 200']);
      const b = group.subscribe('b', keys(t2), 200n);
      expect(await b.next()).toEqual([relation]);
      await a.close();
      await b.close();
    });
  });

  describe('shapes', () => {
    const shape = (columns: string[]): StreamItem => ({
      kind: 'relation',
      relation: {
        ...t1,
        relationId: 11,
        columns: columns.map((name, i) => ({ name, typeOid: 23, typeMod: -1, isKey: i === 0 })),
      },
    });

    it('announces no shape of this session to a subscriber joining behind: the restarted session announces its own', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      // A column dropped at 250: the session announced the shape without it.
      upstream.push(begin(1, 150n), shape(['id', 'a']), changeItem(t1, 1, 150n), commit(1, 200n));
      upstream.push(begin(2, 260n), shape(['id']), changeItem(t1, 2, 260n), commit(2, 300n));
      await read(a);
      // A pipeline coming back from 200 gets what the restarted session announces, not ['id'] now.
      const b = group.subscribe('b', keys(t1), 200n);
      const restarted = await fake.stream(1);
      expect(restarted.options.from).toBe(200n);
      restarted.push(begin(2, 260n), shape(['id']), changeItem(t1, 2, 260n), commit(2, 300n));
      expect(await read(b)).toEqual(['begin 2', 'relation', 'change 2 t1', 'commit 2 300']);
      await a.close();
      await b.close();
    });

    it('announces none of an ending session to the next reader: its own session announces them', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      upstream.push(begin(1, 150n), shape(['id', 'a']), changeItem(t1, 1, 150n), commit(1, 200n));
      await read(a);
      await a.close();
      const b = group.subscribe('b', keys(t1), 200n);
      const next = await fake.stream(1);
      next.push(begin(2, 260n), shape(['id']), changeItem(t1, 2, 260n), commit(2, 300n));
      const items = await b.next();
      expect(items?.filter((i) => i.kind === 'relation')).toEqual([shape(['id'])]);
      await b.close();
    });
  });

  describe('acknowledgement', () => {
    it('acknowledges the smallest position its subscribers acknowledged', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const b = group.subscribe('b', keys(t2), 100n);
      const upstream = await fake.stream(0);
      upstream.push(...txn(1, 150n, 200n, t1));
      await read(a);
      expect(upstream.acks).toEqual([100n]);
      a.ack(200n);
      expect(upstream.acks).toEqual([100n]);
      b.ack(200n);
      expect(upstream.acks).toEqual([100n, 200n]);
      upstream.push(idle(300n));
      await read(a);
      b.ack(300n);
      expect(upstream.acks).toEqual([100n, 200n]);
      a.ack(300n);
      expect(upstream.acks).toEqual([100n, 200n, 300n]);
      await a.close();
      await b.close();
    });

    it('holds the position a starting pipeline claimed until it reads or lets go', async () => {
      const { group, fake, claim } = harness();
      fake.claimPosition = 80n;
      // Nothing streams yet: the slot is claimed.
      expect(await claim('c')).toEqual({ position: 80n });
      expect(fake.claims).toEqual(['c']);
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      expect(upstream.options.from).toBe(100n);
      // Only acknowledgements move the slot: a pipeline not reading yet may need what is before.
      expect(upstream.options.acknowledgeFrom).toBe(false);
      upstream.push(...txn(1, 150n, 200n, t1));
      await read(a);
      expect(upstream.acks).toEqual([80n]);
      a.ack(200n);
      expect(upstream.acks).toEqual([80n]);
      // The stream runs: the slot is only read, not claimed (that would end the stream).
      fake.confirmedLsn = 90n;
      expect(await claim('d')).toEqual({ position: 90n });
      expect(fake.claims).toEqual(['c']);
      expect(fake.positionReads).toEqual([['d']]);
      // A pipeline that claimed and stopped before reading still needs what follows its claim.
      group.release('c');
      group.release('d');
      upstream.push(idle(300n));
      await read(a);
      expect(upstream.acks).toEqual([80n]);
      await a.close();
    });

    it('holds a reading pipeline at the position noted in the store until a newer one is noted', async () => {
      const { group, fake, saved } = harness({ members: async () => [{ pipelineId: 'a', lsn: 50n }] });
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      upstream.push(...txn(1, 150n, 200n, t1));
      await read(a);
      // An instance taking over after a crash would only know 50.
      expect(upstream.acks).toEqual([50n]);
      a.ack(200n);
      await vi.waitFor(() => expect(saved).toContainEqual(['a', 200n]));
      await vi.waitFor(() => expect(upstream.acks).toEqual([50n, 200n]));
      await a.close();
    });

    it('holds a parked member’s checkpoint until it is more than holdWalBytes behind, then lets it go once the store notes it', async () => {
      const { group, fake, warnings, released } = harness({
        holdWalBytes: 1_000,
        members: async () => [
          { pipelineId: 'p', lsn: 150n },
          { pipelineId: 'q', lsn: null },
          // Reading, and never noted.
          { pipelineId: 'a', lsn: null },
        ],
      });
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      upstream.push(...txn(1, 150n, 200n, t1));
      await read(a);
      expect(upstream.acks).toEqual([100n]);
      a.ack(200n);
      expect(upstream.acks).toEqual([100n, 150n]);
      // Exactly holdWalBytes behind: still held.
      upstream.push(idle(1_150n));
      await read(a);
      a.ack(1_150n);
      expect(upstream.acks).toEqual([100n, 150n]);
      expect(warnings).toEqual([]);
      upstream.push(idle(1_151n));
      await read(a);
      // Noted in the store first (its next start must copy again): held until then.
      expect(upstream.acks).toEqual([100n, 150n]);
      await vi.waitFor(() => expect(warnings).toHaveLength(1));
      expect(released).toEqual(['p']);
      expect(warnings[0]?.fields).toMatchObject({ pipelineId: 'p', heldWalBytes: 1_001 });
      upstream.push(idle(2_000n));
      await read(a);
      a.ack(2_000n);
      expect(upstream.acks).toEqual([100n, 150n, 1_150n, 2_000n]);
      expect(released).toEqual(['p']);
      expect(warnings).toHaveLength(1);
      await a.close();
    });

    it('acknowledges nothing before the store told it the stream’s members', async () => {
      const second = deferred<ParkedMember[]>();
      let calls = 0;
      const { group, fake, warnings } = harness({
        members: () => {
          calls++;
          return calls === 1 ? Promise.reject(new Error('store down')) : second.promise;
        },
      });
      const a = group.subscribe('a', keys(t1), 100n);
      const upstream = await fake.stream(0);
      expect(warnings.map((w) => w.message)).toEqual(['cannot read the shared stream’s pipelines']);
      upstream.push(...txn(1, 150n, 200n, t1));
      await read(a);
      a.ack(200n);
      await flush();
      expect(upstream.acks).toEqual([]);
      // Asked again (the first read failed), answered now.
      expect(calls).toBe(2);
      second.resolve([]);
      await flush();
      upstream.push(idle(300n));
      await read(a);
      expect(upstream.acks).toEqual([200n]);
      await a.close();
    });

    it('does not start the upstream before the store told it the stream’s members', async () => {
      const members = deferred<ParkedMember[]>();
      const { group, fake } = harness({ members: () => members.promise });
      const a = group.subscribe('a', keys(t1), 100n);
      await flush();
      a.ack(150n);
      expect(fake.streams).toHaveLength(0);
      members.resolve([]);
      const upstream = await fake.stream(0);
      upstream.push(idle(200n));
      await read(a);
      expect(upstream.acks).toEqual([150n]);
      await a.close();
    });

    // Without it: `acknowledged()` raises `lastAck` even when no upstream is there to tell (between two
    // upstream sessions of a restart), so the position is never sent: the next session is only
    // told of a position above it.
    it('tells the upstream of a position acknowledged while the stream restarts', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(...txn(1, 250n, 300n, t1));
      await read(a);
      expect(first.acks).toEqual([100n]);
      const closing = deferred<void>();
      first.closeGate = closing.promise;
      const b = group.subscribe('b', keys(t1), 200n);
      expect(first.closed).toBe(true);
      await flush();
      // Between the two sessions: the smallest position rises to b's, 200.
      a.ack(300n);
      closing.resolve();
      const second = await fake.stream(1);
      expect(second.options.from).toBe(200n);
      second.push(idle(350n));
      await read(b);
      expect([...first.acks, ...second.acks]).toContain(200n);
      await a.close();
      await b.close();
    });
  });

  describe('restart for a subscriber behind', () => {
    it('restarts the upstream from the smallest position, and the earlier subscriber skips what it has', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(...txn(1, 150n, 200n, t1), ...txn(2, 250n, 300n, t2));
      expect(await read(a)).toEqual(['begin 1', 'change 1 t1', 'commit 1 200', 'idle 300']);
      const b = group.subscribe('b', keys(t1, t2), 150n);
      expect(first.closed).toBe(true);
      const second = await fake.stream(1);
      expect(second.options.from).toBe(150n);
      second.push(...txn(1, 150n, 200n, t1), ...txn(2, 250n, 300n, t2), ...txn(3, 350n, 400n, t1));
      expect(await read(b)).toEqual([
        'begin 1',
        'change 1 t1',
        'commit 1 200',
        'begin 2',
        'change 2 t2',
        'commit 2 300',
        'begin 3',
        'change 3 t1',
        'commit 3 400',
      ]);
      expect(await read(a)).toEqual(['begin 3', 'change 3 t1', 'commit 3 400']);
      expect(fake.streams).toHaveLength(2);
      await a.close();
      await b.close();
    });

    it('lets a pipeline that copies its tables join where the stream is, without a restart', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(...txn(1, 150n, 200n, t1), begin(2, 250n), changeItem(t1, 2, 250n));
      await read(a);
      // Claimed at 100, joins at 200; in the middle of transaction 2, which its copy holds.
      const from = group.joinPosition(100n);
      expect(from).toBe(200n);
      const c = group.subscribe('c', keys(t1), from, { copying: true });
      first.push(commit(2, 300n), ...txn(3, 350n, 400n, t1));
      await flush();
      expect(first.closed).toBe(false);
      // What came while it copied waits for it, and the stream did not wait for it.
      expect(await read(a)).toEqual(['commit 2 300', 'begin 3', 'change 3 t1', 'commit 3 400']);
      group.copied(c);
      expect(await read(c)).toEqual(['begin 3', 'change 3 t1', 'commit 3 400']);
      expect(fake.streams).toHaveLength(1);
      await a.close();
      await c.close();
    });

    it('restarts at its position for a copying pipeline that overflowed, once its copy ends', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      const c = group.subscribe('c', keys(t1), 100n, { copying: true });
      const many: StreamItem[] = [];
      for (let i = 0; i < 2_600; i++)
        many.push(...txn(i + 1, 200n + BigInt(i) * 10n, 205n + BigInt(i) * 10n, t1));
      first.push(...many);
      await flush();
      // Not waited for: a reads on, and c dropped what it had.
      expect(c.queued).toBeLessThan(5_000);
      expect((await a.next())?.length).toBeGreaterThan(5_000);
      expect(first.closed).toBe(false);
      group.copied(c);
      expect(first.closed).toBe(true);
      const second = await fake.stream(1);
      expect(second.options.from).toBe(100n);
      second.push(...txn(1, 200n, 205n, t1));
      expect(await read(c)).toEqual(['begin 1', 'change 1 t1', 'commit 1 205']);
      await a.close();
      await c.close();
    });

    it('does not restart for a subscriber at or after what the stream delivered', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(...txn(1, 150n, 200n, t1));
      await read(a);
      const b = group.subscribe('b', keys(t1), 200n);
      expect(first.closed).toBe(false);
      first.push(...txn(2, 250n, 300n, t1));
      expect(await read(b)).toEqual(['begin 2', 'change 2 t1', 'commit 2 300']);
      expect(fake.streams).toHaveLength(1);
      await a.close();
      await b.close();
    });

    it('restarts after the commit of the transaction a subscriber joined in the middle of', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(begin(2, 250n), changeItem(t1, 2, 250n));
      expect(await read(a)).toEqual(['begin 2', 'change 2 t1']);
      const b = group.subscribe('b', keys(t1), 150n);
      expect(first.closed).toBe(false);
      first.push(changeItem(t1, 2, 250n), commit(2, 300n));
      expect(await read(a)).toEqual(['change 2 t1', 'commit 2 300']);
      const second = await fake.stream(1);
      expect(first.closed).toBe(true);
      expect(second.options.from).toBe(150n);
      second.push(
        begin(2, 250n),
        changeItem(t1, 2, 250n),
        changeItem(t1, 2, 250n),
        commit(2, 300n),
        idle(350n),
      );
      expect(await read(b)).toEqual(['begin 2', 'change 2 t1', 'change 2 t1', 'commit 2 300', 'idle 350']);
      // The replay is skipped for the subscriber that had the transaction.
      expect(await read(a)).toEqual(['idle 350']);
      await a.close();
      await b.close();
    });

    it('waits for a batch that ends between transactions before it restarts', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(begin(2, 250n), changeItem(t1, 2, 250n));
      await read(a);
      const b = group.subscribe('b', keys(t1), 150n);
      // The transaction commits and the next one starts in the same batch: still inside one.
      first.push(commit(2, 300n), begin(3, 350n), changeItem(t1, 3, 350n));
      expect(await read(a)).toEqual(['commit 2 300', 'begin 3', 'change 3 t1']);
      await flush();
      expect(first.closed).toBe(false);
      expect(fake.streams).toHaveLength(1);
      first.push(commit(3, 400n));
      expect(await read(a)).toEqual(['commit 3 400']);
      await fake.stream(1);
      expect(first.closed).toBe(true);
      await a.close();
      await b.close();
    });

    // Without it: a subscriber the stream restarts for is routed the items that come before the restart.
    // Joined in the middle of transaction 2, it skips it, but takes transaction 3 that follows in
    // the same batch: its position jumps to 3's commit end, the restart starts from there, and
    // transaction 2 is never handed over to it.
    it('hands over the transaction a subscriber joined in the middle of when the next one follows in the same batch', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(begin(2, 250n), changeItem(t1, 2, 250n));
      await read(a);
      const b = group.subscribe('b', keys(t1), 150n);
      first.push(commit(2, 300n), ...txn(3, 350n, 400n, t1));
      expect(await read(a)).toEqual(['commit 2 300', 'begin 3', 'change 3 t1', 'commit 3 400']);
      const second = await fake.stream(1);
      expect(b.position).toBe(150n);
      expect(second.options.from).toBe(150n);
      second.push(...txn(2, 250n, 300n, t1), ...txn(3, 350n, 400n, t1));
      expect(await read(b)).toEqual([
        'begin 2',
        'change 2 t1',
        'commit 2 300',
        'begin 3',
        'change 3 t1',
        'commit 3 400',
      ]);
      await a.close();
      await b.close();
    });

    // Without it (as above): a batch the upstream handed over just before the restart closed it is still
    // routed to the subscriber joining behind, which takes it; its position jumps past what it
    // needs from before that batch, and the restart starts after it.
    it('hands a subscriber joining behind nothing of a batch already on its way before the restart', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(...txn(1, 150n, 200n, t1));
      await read(a);
      // The upstream hands over transaction 2; b joins before the group routes it.
      first.push(...txn(2, 250n, 300n, t1));
      const b = group.subscribe('b', keys(t1), 150n);
      expect(first.closed).toBe(true);
      expect(await read(a)).toEqual(['begin 2', 'change 2 t1', 'commit 2 300']);
      const second = await fake.stream(1);
      expect(second.options.from).toBe(150n);
      second.push(...txn(1, 150n, 200n, t1), ...txn(2, 250n, 300n, t1));
      expect((await read(b)).slice(0, 3)).toEqual(['begin 1', 'change 1 t1', 'commit 1 200']);
      await a.close();
      await b.close();
    });

    it('does not restart for a subscriber joining a transaction committed before its position', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const first = await fake.stream(0);
      first.push(begin(2, 250n), changeItem(t1, 2, 250n));
      await read(a);
      const b = group.subscribe('b', keys(t1), 260n);
      first.push(commit(2, 300n), ...txn(3, 350n, 400n, t1));
      expect(await read(b)).toEqual(['begin 3', 'change 3 t1', 'commit 3 400']);
      expect(first.closed).toBe(false);
      await a.close();
      await b.close();
    });
  });

  describe('lifetime', () => {
    it('lets go of a reader that takes nothing for a while, so that the others go on', async () => {
      const { group, fake, warnings } = harness();
      const slow = group.subscribe('slow', keys(t1), 100n);
      const b = group.subscribe('b', keys(t2), 100n);
      const upstream = await fake.stream(0);
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        // A queue's worth for the slow one, which never reads; b reads what comes.
        const many: StreamItem[] = [];
        for (let i = 0; i < 2_600; i++)
          many.push(...txn(i + 1, 200n + BigInt(i) * 10n, 205n + BigInt(i) * 10n, t1));
        upstream.push(...many);
        await flush();
        expect(slow.queued).toBeGreaterThanOrEqual(5_000);
        upstream.push(...txn(9_000, 90_000n, 90_005n, t2));
        await flush();
        // The stream waits for the slow reader...
        expect(b.queued).toBeLessThanOrEqual(1);
        await vi.advanceTimersByTimeAsync(5_000);
      } finally {
        vi.useRealTimers();
      }
      // ...then goes on without it: it fails, with what it had first.
      await vi.waitFor(async () => expect(await read(b)).toContain('commit 9000 90005'));
      expect(warnings.map((w) => w.message)).toContainEqual(
        expect.stringMatching(/took nothing from the shared stream/),
      );
      const items = await slow.next();
      expect(items?.length).toBeGreaterThan(0);
      await expect(slow.next()).rejects.toThrow(/took nothing from the shared source stream/);
      await b.close();
    });

    it('closes the upstream and the source when the last subscriber closes', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const b = group.subscribe('b', keys(t2), 100n);
      const upstream = await fake.stream(0);
      expect(group.busy).toBe(true);
      await a.close();
      expect(upstream.closed).toBe(false);
      await b.close();
      expect(upstream.closed).toBe(true);
      await vi.waitFor(() => expect(fake.closes).toBe(1));
      await vi.waitFor(() => expect(group.busy).toBe(false));
      // Where they left off, until the store says they are gone.
      expect(group.memberPositions()).toEqual(
        new Map([
          ['a', 100n],
          ['b', 100n],
        ]),
      );
    });

    it('fails every subscriber with the upstream’s error, and starts afresh for a later one', async () => {
      const { group, fake, opened } = harness();
      const a = group.subscribe('a', keys(t1), 100n);
      const b = group.subscribe('b', keys(t2), 100n);
      const upstream = await fake.stream(0);
      const waiting = a.next();
      const error = new Error('the walsender went away');
      upstream.fail(error);
      await expect(waiting).rejects.toBe(error);
      await expect(b.next()).rejects.toBe(error);
      await vi.waitFor(() => expect(fake.closes).toBe(1));
      await vi.waitFor(() => expect(group.busy).toBe(false));
      const c = group.subscribe('c', keys(t1), 100n);
      const fresh = await fake.stream(1);
      expect(opened()).toBe(2);
      expect(fresh.options.from).toBe(100n);
      fresh.push(...txn(1, 150n, 200n, t1));
      expect(await read(c)).toEqual(['begin 1', 'change 1 t1', 'commit 1 200']);
      await c.close();
    });
  });

  describe('streamed transactions', () => {
    /** Two live subscribers reading t1 and t2, one reading t3, and a streamed transaction of t1 and t2 committing. */
    async function streamedOverTwo() {
      const h = harness();
      const a = h.group.subscribe('a', keys(t1), 100n, { live: true });
      const b = h.group.subscribe('b', keys(t2), 100n, { live: true });
      const c = h.group.subscribe('c', keys(t3), 100n, { live: true });
      const upstream = await h.fake.stream(0);
      expect(upstream.options.live).toBe(true);
      const item = streamCommit(9, 500n);
      upstream.push(streamChange(9, t1), streamChange(9, t2), item);
      const verdictOf = async (s: StreamSubscription) => {
        const items = (await s.next()) ?? [];
        expect(words(items).slice(-1)).toEqual(['stream-commit 9']);
        return (items[items.length - 1] as StreamCommit).verdict;
      };
      const va = await verdictOf(a);
      const vb = await verdictOf(b);
      // Never touched it: told at once it passed by.
      expect(await read(c)).toEqual(['idle 500']);
      let decided: boolean | undefined;
      void item.verdict.decided.then((delivered) => {
        decided = delivered;
      });
      const close = async () => {
        await a.close();
        await b.close();
        await c.close();
      };
      return { ...h, a, b, c, upstream, item, va, vb, decided: () => decided, close };
    }

    it('settles the upstream verdict as delivered only once every subscriber that touched it delivered it', async () => {
      const s = await streamedOverTwo();
      s.va.settle(true);
      await flush();
      expect(s.decided()).toBeUndefined();
      s.vb.settle(true);
      expect(await s.item.verdict.decided).toBe(true);
      expect(s.a.position).toBe(500n);
      expect(s.b.position).toBe(500n);
      await s.close();
    });

    it('settles the upstream verdict as not delivered when one subscriber did not deliver it', async () => {
      const s = await streamedOverTwo();
      s.va.settle(true);
      s.vb.settle(false);
      expect(await s.item.verdict.decided).toBe(false);
      // The replay goes to the one that did not deliver it only.
      s.upstream.push(...txn(9, 480n, 500n, t1, t2), idle(600n));
      expect(await read(s.b)).toEqual(['begin 9', 'change 9 t2', 'commit 9 500', 'idle 600']);
      expect(await read(s.a)).toEqual(['idle 600']);
      await s.close();
    });

    it('settles the upstream verdict as not delivered when a subscriber that touched it leaves', async () => {
      const s = await streamedOverTwo();
      s.va.settle(true);
      await s.b.close();
      expect(await s.item.verdict.decided).toBe(false);
      await s.close();
    });

    it('settles as not delivered when a subscriber that is not live touched it', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n, { live: true });
      const b = group.subscribe('b', keys(t1), 100n);
      const upstream = await fake.stream(0);
      const item = streamCommit(9, 500n);
      upstream.push(streamChange(9, t1), item);
      const items = (await a.next()) ?? [];
      (items[1] as StreamCommit).verdict.settle(true);
      expect(await item.verdict.decided).toBe(false);
      expect(b.queued).toBe(0);
      await a.close();
      await b.close();
    });

    // Without it: a subscriber joining while a streamed transaction arrives missed its first changes, yet
    // the group treats it as any other subscriber: at the commit it says it never touched the
    // transaction (it saw none of its changes), its position jumps past it, and the upstream is
    // told every pipeline had it, so it is never replayed for the newcomer.
    it('replays a streamed transaction for a subscriber that joined while it arrived', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n, { live: true });
      const upstream = await fake.stream(0);
      upstream.push(idle(200n));
      expect(await read(a)).toEqual(['idle 200']);
      // A large transaction of b's table starts arriving before b reads the stream.
      upstream.push(streamChange(9, t2));
      await flush();
      const b = group.subscribe('b', keys(t2), 200n);
      expect(upstream.closed).toBe(false);
      const item = streamCommit(9, 500n);
      upstream.push(item);
      expect(await item.verdict.decided).toBe(false);
      await a.close();
      await b.close();
    });

    // Without it: `route` does not move `delivered` past a streamed transaction the upstream does not
    // replay (every pipeline delivered it), so a subscriber joining right after, from before its
    // commit, does not make the stream restart and never gets it.
    it('restarts for a subscriber behind a streamed transaction that was not replayed', async () => {
      const { group, fake } = harness();
      const a = group.subscribe('a', keys(t1), 100n, { live: true });
      const upstream = await fake.stream(0);
      const item = streamCommit(9, 500n);
      upstream.push(streamChange(9, t1), item);
      const items = (await a.next()) ?? [];
      (items[1] as StreamCommit).verdict.settle(true);
      expect(await item.verdict.decided).toBe(true);
      // b stood where the stream started: it needs transaction 9.
      const b = group.subscribe('b', keys(t1), 100n);
      expect(upstream.closed).toBe(true);
      await a.close();
      await b.close();
    });
  });
});

describe('shared stream names', () => {
  it('is the same for the same connection id, and differs for another', () => {
    const id = '5f0c2a47-7a54-4b7e-9a39-0d0b6f1e2c11';
    const name = sharedStreamName(id);
    expect(sharedStreamName(id)).toBe(name);
    expect(sharedStreamName('5f0c2a47-7a54-4b7e-9a39-0d0b6f1e2c12')).not.toBe(name);
  });

  it('is a shared stream’s name, a valid PostgreSQL identifier of at most 63 characters', () => {
    for (const id of ['c', '00000000-0000-0000-0000-000000000000', 'x'.repeat(500)]) {
      const name = sharedStreamName(id);
      expect(isSharedStreamName(name)).toBe(true);
      expect(name).toMatch(/^[a-z_][a-z0-9_]*$/);
      expect(name.length).toBeLessThanOrEqual(63);
      // SourceOptions.stream: at most 40 characters.
      expect(name.length).toBeLessThanOrEqual(40);
    }
  });

  it('tells other slot names apart', () => {
    expect(isSharedStreamName('replicator_0123456789abcdef01234567')).toBe(false);
    expect(isSharedStreamName('replicator_s_0123456789ABCDEF01234567')).toBe(false);
    expect(isSharedStreamName('replicator_s_0123456789abcdef0123456')).toBe(false);
    expect(isSharedStreamName('replicator_s_0123456789abcdef012345678')).toBe(false);
    expect(isSharedStreamName('xreplicator_s_0123456789abcdef01234567')).toBe(false);
    expect(isSharedStreamName('replicator_s_0123456789abcdef01234567')).toBe(true);
  });
});

describe('a stream group’s slot made anew', () => {
  it('lets go of the pipelines that claimed the slot before, not of those that never claimed it, nor of the claimer', async () => {
    const { fake, claim, released } = harness({
      members: async () => [
        { pipelineId: 'a', lsn: null },
        { pipelineId: 'b', lsn: 40n },
        { pipelineId: 'c', lsn: null },
        { pipelineId: 'd', lsn: 30n, released: true },
      ],
    });
    fake.claimPosition = 100n;
    fake.claimSnapshot = { id: 'snap' } as unknown as SlotClaim['snapshot'];
    await claim('a');
    expect(released).toEqual(['b']);
  });

  it('lets go of no one when the slot was there', async () => {
    const { fake, claim, released } = harness({ members: async () => [{ pipelineId: 'b', lsn: 40n }] });
    fake.claimPosition = 100n;
    await claim('a');
    expect(released).toEqual([]);
  });
});

describe('a claim of a stream group’s slot', () => {
  it('says where the pipeline last acknowledged, as the store noted it', async () => {
    const { fake, claim } = harness({ members: async () => [{ pipelineId: 'a', lsn: 240n }] });
    fake.claimPosition = 100n;
    expect(await claim('a')).toEqual({ position: 100n, acknowledged: 240n });
  });

  it('says where a pipeline that left in this process acknowledged, before the store has it', async () => {
    const noted = deferred<void>();
    const { group, fake, claim, saved, store } = harness();
    const a = group.subscribe('a', keys(t1), 100n);
    const upstream = await fake.stream(0);
    upstream.push(...txn(1, 150n, 200n, t2));
    expect(await read(a)).toEqual(['idle 200']);
    a.ack(200n);
    await vi.waitFor(() => expect(saved).toContainEqual(['a', 200n]));
    // The store is slow to note where it left, and knows nothing of it meanwhile.
    let saves = 0;
    store.slow = () => (saves++ === 0 ? noted.promise : Promise.resolve());
    await a.close();
    expect(await claim('a')).toMatchObject({ acknowledged: 200n });
    noted.resolve();
  });

  it('says nothing for a pipeline let go, one never noted, or a slot made anew', async () => {
    const { fake, claim } = harness({
      members: async () => [
        { pipelineId: 'a', lsn: 240n, released: true },
        { pipelineId: 'b', lsn: null },
        { pipelineId: 'c', lsn: 240n },
      ],
    });
    fake.claimPosition = 100n;
    expect(await claim('a')).toEqual({ position: 100n });
    expect(await claim('b')).toEqual({ position: 100n });
    fake.claimSnapshot = { id: 'snap' } as unknown as SlotClaim['snapshot'];
    expect(await claim('c')).toEqual({ position: 100n, snapshot: fake.claimSnapshot });
  });
});

describe('the pace of a copy beside a shared stream', () => {
  it('is none when unlimited', () => {
    const { group } = harness();
    expect(group.copyPace('a', 0)).toBeUndefined();
  });

  it('holds the copy to its rate only while another pipeline streams changes from the stream', async () => {
    const { group, fake } = harness();
    const pace = group.copyPace('a', 1_000);
    if (!pace) throw new Error('a pace for a limited rate');
    // Nothing else reads the stream: chunks go at once, however many rows.
    expect(pace.turn(10_000)).toBeUndefined();
    expect(pace.turn(10_000)).toBeUndefined();
    const b = group.subscribe('b', keys(t1), 100n);
    const upstream = await fake.stream(0);
    // Another pipeline reads, but the stream carries no change: as fast as it goes.
    expect(pace.turn(10_000)).toBeUndefined();
    upstream.push(...txn(1, 150n, 200n, t1));
    expect(await read(b)).toEqual(['begin 1', 'change 1 t1', 'commit 1 200']);
    // Now it streams changes: the first chunk goes, the next waits for its turn at 1,000 rows/s.
    expect(pace.turn(10)).toBeUndefined();
    const next = pace.turn(50);
    expect(next).toBeInstanceOf(Promise);
    await next;
    // A copy of the pipeline itself or of one still copying does not count as another streaming.
    const alone = group.copyPace('b', 1_000);
    expect(alone?.turn(10)).toBeUndefined();
    expect(alone?.turn(50)).toBeUndefined();
  });
});
