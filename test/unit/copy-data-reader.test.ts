import { describe, expect, it } from 'vitest';
import { messageAt } from '../../src/core/copy-binary.js';
import { CopyDataMessages } from '../../src/source/postgres/copy-data-messages.js';
import { CopyDataReader } from '../../src/source/postgres/copy-data-reader.js';
import { chunksOf, message } from '../support/copy-binary.js';

const rows = Array.from({ length: 200 }, (_, i) => `${i}\t${'x'.repeat(i % 13)}\n`);
// What a server sends for a COPY TO STDOUT: the announcement, a row per CopyData (a notice in
// between), CopyDone, then what pg's own parser must read.
const copy = Buffer.concat([
  message('H', Buffer.from([0, 0, 2, 0, 0, 0, 0])),
  ...rows.slice(0, 100).map((r) => message('d', r)),
  message('N', 'SNOTICE\0\0'),
  ...rows.slice(100).map((r) => message('d', r)),
  message('c', ''),
]);
const after = Buffer.concat([message('C', 'COPY 200\0'), message('Z', 'I')]);

function readAll(
  chunks: Buffer[],
  reader: CopyDataReader | CopyDataMessages = new CopyDataReader(),
): { data: Buffer; rest: Buffer; overAt: number; pieces: Buffer[] } {
  const data: Buffer[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const read = reader.read(chunk);
    data.push(...read.data);
    if (read.over)
      return {
        data: Buffer.concat(data),
        rest: Buffer.concat([read.rest, ...chunks.slice(i + 1)]),
        overAt: i,
        pieces: data,
      };
  }
  return { data: Buffer.concat(data), rest: Buffer.alloc(0), overAt: -1, pieces: data };
}

describe("the rows of a COPY TO STDOUT in the server's messages", () => {
  it('are taken out whole from chunks cut anywhere, and what follows the copy is handed back', () => {
    const stream = Buffer.concat([copy, after]);
    for (const size of [1, 2, 4, 5, 6, 7, 64, 1000, stream.length]) {
      const { data, rest, overAt } = readAll(chunksOf(stream, size));
      expect({ size, over: overAt >= 0 }).toEqual({ size, over: true });
      expect(data.toString()).toBe(rows.join(''));
      expect(rest.equals(after)).toBe(true);
    }
  });

  it('end at an error, which is left for the connection to read', () => {
    const error = message('E', 'SERROR\0Mboom\0\0');
    const stream = Buffer.concat([message('d', rows[0] as string), error, message('Z', 'I')]);
    for (const size of [3, 9, stream.length]) {
      const { data, rest } = readAll(chunksOf(stream, size));
      expect(data.toString()).toBe(rows[0]);
      expect(rest.subarray(0, error.length).equals(error)).toBe(true);
    }
  });
});

/** How many CopyData messages `piece` holds; throws unless it is whole messages. */
function wholeMessages(piece: Buffer): number {
  let count = 0;
  for (let at = 0; at < piece.length; at = messageAt(piece, at).end) count++;
  return count;
}

describe('the CopyData messages of a COPY TO STDOUT, passed on as they are', () => {
  const dataMessages = rows.map((r) => message('d', r));

  it('come in pieces of whole messages from chunks cut anywhere, others dropped, what follows handed back', () => {
    const stream = Buffer.concat([copy, after]);
    for (const size of [1, 2, 4, 5, 6, 7, 64, 1000, stream.length]) {
      const { data, rest, overAt, pieces } = readAll(chunksOf(stream, size), new CopyDataMessages());
      expect({ size, over: overAt >= 0 }).toEqual({ size, over: true });
      expect(data.equals(Buffer.concat(dataMessages))).toBe(true);
      expect(pieces.reduce((n, piece) => n + wholeMessages(piece), 0)).toBe(rows.length);
      expect(rest.equals(after)).toBe(true);
    }
  });

  it('keep a message longer than many chunks whole, and stop at an error left for the connection', () => {
    const big = message('d', 'x'.repeat(100_000));
    const error = message('E', 'SERROR\0Mboom\0\0');
    const stream = Buffer.concat([dataMessages[0] as Buffer, big, error, message('Z', 'I')]);
    for (const size of [3, 4096, stream.length]) {
      const { data, rest, pieces } = readAll(chunksOf(stream, size), new CopyDataMessages());
      expect(data.equals(Buffer.concat([dataMessages[0] as Buffer, big]))).toBe(true);
      expect(pieces.reduce((n, piece) => n + wholeMessages(piece), 0)).toBe(2);
      expect(rest.subarray(0, error.length).equals(error)).toBe(true);
    }
  });

  it('are views of the chunk read, not copies, when no message is cut', () => {
    const chunk = Buffer.concat(dataMessages.slice(0, 10));
    const { data } = new CopyDataMessages().read(chunk);
    expect(data).toHaveLength(1);
    expect((data[0] as Buffer).buffer).toBe(chunk.buffer);
  });
});
