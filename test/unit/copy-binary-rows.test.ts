import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { CopyBinaryScanner } from '../../src/core/copy-binary.js';
import { RowCounter } from '../../src/runtime/snapshot/row-counter.js';
import { binaryCopy, chunksOf, int32, int64 } from '../support/copy-binary.js';

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

describe('a binary COPY stream', () => {
  it('has its tuples counted whatever its chunks, and passes through unchanged', async () => {
    const data = binaryCopy(tuples(500));
    for (const size of [1, 2, 3, 7, 19, 20, 64, 4096, data.length]) {
      const { rows, reported, out } = await counted(chunksOf(data, size));
      expect({ size, rows, reported }).toEqual({ size, rows: 500, reported: 500 });
      expect(out.equals(data)).toBe(true);
    }
  });

  it('is complete only with its trailer: one cut short fails the counter', async () => {
    const data = binaryCopy(tuples(10), { trailer: false });
    await expect(counted(chunksOf(data, 5))).rejects.toThrow(/ended after 10 tuples, without its trailer/);
    // Cut inside a tuple: the tuples read whole are counted, the stream still fails.
    const whole = binaryCopy(tuples(10));
    await expect(counted([whole.subarray(0, whole.length - 9)])).rejects.toThrow(/without its trailer/);
  });

  it('is refused when it is not binary COPY, or goes on after its trailer', async () => {
    await expect(counted([Buffer.from('1\tabc\n2\tdef\n3\tghi\n4\tjkl\n')])).rejects.toThrow(/signature/);
    const data = Buffer.concat([binaryCopy(tuples(2)), int32(0)]);
    await expect(counted(chunksOf(data, 3))).rejects.toThrow(/after the trailer/);
  });

  it('skips a header extension, and tells where the first tuple begun in each chunk starts', () => {
    const plain = binaryCopy([[int32(7)], [null]]);
    const extension = Buffer.from('ext!');
    const withExtension = Buffer.concat([
      plain.subarray(0, 15),
      int32(extension.length),
      extension,
      plain.subarray(19),
    ]);
    const starts: [number, number][] = [];
    const scanner = new CopyBinaryScanner();
    let total = 0;
    for (const chunk of chunksOf(withExtension, 3)) {
      total += scanner.feed(chunk);
      if (scanner.firstStart) starts.push([scanner.firstStart.index, scanner.firstStart.position]);
    }
    expect(total).toBe(2);
    expect(scanner.ended).toBe(true);
    // Header 19 bytes and the extension 4; the first tuple is 2 + 4 + 4 bytes long; the trailer is a third start.
    expect(starts).toEqual([
      [0, 23],
      [1, 33],
      [2, 39],
    ]);
  });

  it('counts a tuple of no fields', async () => {
    const { rows } = await counted([binaryCopy([[], [], []])]);
    expect(rows).toBe(3);
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
