import { describe, expect, it } from 'vitest';
import { CopyDataReader } from '../../src/source/postgres/copy-data-reader.js';
import { chunksOf } from '../support/copy-binary.js';

const message = (code: string, payload: Buffer | string) => {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(5);
  header.write(code, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};

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

function readAll(chunks: Buffer[]): { data: Buffer; rest: Buffer; overAt: number } {
  const reader = new CopyDataReader();
  const data: Buffer[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const read = reader.read(chunk);
    if (read.data) data.push(read.data);
    if (read.over)
      return {
        data: Buffer.concat(data),
        rest: Buffer.concat([read.rest, ...chunks.slice(i + 1)]),
        overAt: i,
      };
  }
  return { data: Buffer.concat(data), rest: Buffer.alloc(0), overAt: -1 };
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
