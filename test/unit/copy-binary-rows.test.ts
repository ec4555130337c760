import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { RowCounter } from '../../src/runtime/snapshot/row-counter.js';
import {
  binaryCopyMessages,
  chunksOf,
  int32,
  int64,
  message,
  messageChunks,
} from '../support/copy-binary.js';

const tuple = (i: number): (Buffer | null)[] => [
  int64(BigInt(i)),
  i % 3 === 0 ? null : Buffer.from('x'.repeat(i % 11)),
  int32(i),
  i % 5 === 0 ? Buffer.alloc(0) : Buffer.from([1, 2, 3]),
];
const tuples = (n: number) => Array.from({ length: n }, (_, i) => tuple(i + 1));

/** The rows a RowCounter counts in `chunks`, and what it passed on. */
async function counted(chunks: Buffer[]): Promise<{ rows: number; reported: number; out: Buffer }> {
  let reported = 0;
  const counter = new RowCounter('binary', (added) => {
    reported += added;
  });
  const out: Buffer[] = [];
  await pipeline(
    Readable.from(chunks),
    counter,
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        out.push(chunk);
        done();
      },
    }),
  );
  return { rows: counter.rows, reported, out: Buffer.concat(out) };
}

describe('a binary COPY stream in CopyData messages', () => {
  it('has its tuples counted however many messages a chunk holds, and passes through unchanged', async () => {
    const messages = binaryCopyMessages(tuples(500));
    const data = Buffer.concat(messages);
    for (const perChunk of [1, 2, 3, 7, 64, messages.length]) {
      const { rows, reported, out } = await counted(messageChunks(messages, perChunk));
      expect({ perChunk, rows, reported }).toEqual({ perChunk, rows: 500, reported: 500 });
      expect(out.equals(data)).toBe(true);
    }
  });

  it('is complete only with its trailer: one cut short fails the counter', async () => {
    const messages = binaryCopyMessages(tuples(10), { trailer: false });
    await expect(counted(messageChunks(messages, 3))).rejects.toThrow(
      /ended after 10 tuples, without its trailer/,
    );
  });

  it('is refused when a chunk is not whole messages', async () => {
    const data = Buffer.concat(binaryCopyMessages(tuples(10)));
    await expect(counted([data.subarray(0, 40), data.subarray(40)])).rejects.toThrow(
      /not whole CopyData messages|cut short/,
    );
    const open = Buffer.concat(binaryCopyMessages(tuples(10), { trailer: false }));
    await expect(counted([Buffer.concat([open, Buffer.from([0x64, 0, 0])])])).rejects.toThrow(
      /not whole CopyData messages/,
    );
  });

  it('is refused when it is not binary COPY, or goes on after its trailer', async () => {
    await expect(counted([message('d', '1\tabc\n'), message('d', '2\tdef\n')])).rejects.toThrow(/signature/);
    const after = [...binaryCopyMessages(tuples(2)), message('d', int32(0))];
    await expect(counted(messageChunks(after, 2))).rejects.toThrow(/after the trailer/);
  });

  it('skips a header extension, and counts tuples of no fields and an empty copy', async () => {
    const extension = Buffer.from('ext!');
    const header = Buffer.concat([
      Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'),
      int32(0),
      int32(extension.length),
      extension,
    ]);
    expect((await counted(binaryCopyMessages([[int32(7)], [null]], { header }))).rows).toBe(2);
    expect((await counted(binaryCopyMessages([[], [], []]))).rows).toBe(3);
    // No tuple: the server sends the header and the trailer in one message.
    const empty = binaryCopyMessages([]);
    expect(empty).toHaveLength(1);
    expect((await counted(empty)).rows).toBe(0);
  });
});

describe('a text COPY stream', () => {
  it('has its rows counted by their newlines', async () => {
    let reported = 0;
    const counter = new RowCounter('text', (added) => {
      reported += added;
    });
    await pipeline(
      Readable.from(chunksOf(Buffer.from('1\ta\\nb\n2\tc\n3\td\n'), 4)),
      counter,
      new Writable({ write: (_chunk, _encoding, done) => done() }),
    );
    expect([counter.rows, reported]).toEqual([3, 3]);
  });
});
