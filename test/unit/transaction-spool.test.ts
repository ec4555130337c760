import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoundedQueue } from '../../src/source/postgres/bounded-queue.js';
import {
  SpoolDirectory,
  type SpoolEntry,
  TransactionSpool,
} from '../../src/source/postgres/transaction-spool.js';

const insert = (id: number, xid: number, text = 'v'): SpoolEntry => ({
  lsn: `0/${(id * 16).toString(16).toUpperCase()}`,
  xid,
  message: {
    tag: 'insert',
    relationId: 1,
    values: [{ kind: 'text', value: `${id}:${text}` }, { kind: 'null' }],
  },
});

async function collect(spool: TransactionSpool): Promise<SpoolEntry[]> {
  const entries: SpoolEntry[] = [];
  for await (const e of spool.replay()) entries.push(e);
  return entries;
}

describe('transaction spool', () => {
  let parent: string;
  let directory: SpoolDirectory;

  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'spool-test-'));
    directory = new SpoolDirectory(parent);
  });

  afterEach(async () => {
    await directory.remove();
    expect(readdirSync(parent)).toEqual([]);
    rmSync(parent, { recursive: true });
  });

  it('keeps a small transaction in memory', async () => {
    const spool = new TransactionSpool(directory, 'small', 1 << 20);
    for (let i = 1; i <= 10; i++) await spool.append(insert(i, 100));
    expect(spool.spilled).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
    expect((await collect(spool)).map((e) => e.lsn)).toEqual(
      Array.from({ length: 10 }, (_, i) => insert(i + 1, 0).lsn),
    );
    await spool.dispose();
  });

  it('spills past its memory limit and replays everything in order, multi-byte text and long lines included', async () => {
    const spool = new TransactionSpool(directory, 'big', 4096);
    const long = 'é€😀'.repeat(200_000);
    const expected: SpoolEntry[] = [];
    for (let i = 1; i <= 3000; i++) {
      const entry = insert(i, 100, i === 1500 ? long : 'ü');
      expected.push(entry);
      await spool.append(entry);
    }
    expect(spool.spilled).toBe(true);
    expect(spool.size).toBe(3000);
    const [dir] = readdirSync(parent);
    expect(readdirSync(join(parent, dir as string))).toHaveLength(1);
    expect(await collect(spool)).toEqual(expected);
    // A second replay sees the same entries (the file is only deleted by dispose()).
    expect((await collect(spool)).length).toBe(3000);
    await spool.dispose();
    await spool.dispose();
    expect(readdirSync(join(parent, dir as string))).toEqual([]);
  });

  it('skips the changes of aborted subtransactions, in memory and on disk', async () => {
    for (const limit of [0, 1 << 20]) {
      const spool = new TransactionSpool(directory, `sub-${limit}`, limit);
      await spool.append(insert(1, 100));
      await spool.append(insert(2, 101));
      await spool.append(insert(3, 102));
      await spool.append(insert(4, 101));
      await spool.append(insert(5, 100));
      spool.abortSubtransaction(101);
      expect(spool.spilled).toBe(limit === 0);
      expect((await collect(spool)).map((e) => e.message.tag === 'insert' && e.message.values[0])).toEqual([
        { kind: 'text', value: '1:v' },
        { kind: 'text', value: '3:v' },
        { kind: 'text', value: '5:v' },
      ]);
      await spool.dispose();
    }
  });

  it('removes its directory with every file', async () => {
    const spool = new TransactionSpool(directory, 'left', 0);
    await spool.append(insert(1, 1));
    const [dir] = readdirSync(parent);
    await directory.remove();
    expect(existsSync(join(parent, dir as string))).toBe(false);
    await spool.dispose();
  });
});

describe('bounded queue', () => {
  it('makes the producer wait while full and delivers in order', async () => {
    const queue = new BoundedQueue<number>(2);
    let produced = 0;
    const producer = (async () => {
      for (let i = 0; i < 10; i++) {
        await queue.push(i);
        produced++;
      }
      queue.end();
    })();
    await new Promise((r) => setTimeout(r, 20));
    expect(produced).toBe(1);
    expect(queue.length).toBe(2);
    const seen: number[] = [];
    for await (const n of queue) seen.push(n);
    await producer;
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('delivers queued items before the failure, and releases a waiting producer', async () => {
    const queue = new BoundedQueue<string>(2);
    await queue.push('a');
    const blocked = queue.push('b');
    queue.fail(new Error('boom'));
    await expect(blocked).resolves.toBe(false);
    await expect(queue.push('c')).resolves.toBe(false);
    await expect(queue.next()).resolves.toEqual({ value: 'a', done: false });
    await expect(queue.next()).resolves.toEqual({ value: 'b', done: false });
    await expect(queue.next()).rejects.toThrow('boom');
    await expect(queue.next()).rejects.toThrow('boom');
  });

  it('ends a waiting consumer and may discard what is queued', async () => {
    const queue = new BoundedQueue<number>(5);
    const waiting = queue.next();
    queue.end();
    await expect(waiting).resolves.toEqual({ value: undefined, done: true });
    const other = new BoundedQueue<number>(5);
    await other.push(1);
    other.end({ discard: true });
    await expect(other.next()).resolves.toMatchObject({ done: true });
    await expect(other.push(2)).resolves.toBe(false);
  });

  it('stays open when a loop breaks out', async () => {
    const queue = new BoundedQueue<number>(5);
    await queue.push(1);
    await queue.push(2);
    for await (const n of queue) {
      expect(n).toBe(1);
      break;
    }
    await expect(queue.next()).resolves.toEqual({ value: 2, done: false });
  });
});
