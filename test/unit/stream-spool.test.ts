import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SpoolWriteError } from '../../src/source/postgres/spool-write-error.js';
import { SpoolDirectory, StreamSpool } from '../../src/source/postgres/stream-spool.js';

/** A streamed Insert message as the server sends it: tag, xid, relation id, one text and one null column. */
function insert(xid: number, text: string): Buffer {
  const value = Buffer.from(text, 'utf8');
  const head = Buffer.alloc(1 + 4 + 4 + 1 + 2 + 1 + 4);
  let at = head.write('I', 0, 'latin1');
  at = head.writeUInt32BE(xid, at);
  at = head.writeUInt32BE(1, at);
  at += head.write('N', at, 'latin1');
  at = head.writeInt16BE(2, at);
  at += head.write('t', at, 'latin1');
  head.writeInt32BE(value.length, at);
  return Buffer.concat([head, value, Buffer.from('n', 'latin1')]);
}

/** The text column of each replayed message, copied (a replayed message is only a view). */
const texts = (spool: StreamSpool): string[] =>
  Array.from(spool.messages(), (m) => m.toString('utf8', 17, m.length - 1));

describe('stream spool', () => {
  let parent: string;
  let directory: SpoolDirectory;

  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'spool-test-'));
    directory = new SpoolDirectory(parent);
  });

  afterEach(() => {
    directory.remove();
    expect(readdirSync(parent)).toEqual([]);
    rmSync(parent, { recursive: true });
  });

  it('keeps a small transaction in memory, byte for byte', () => {
    const spool = new StreamSpool(directory, 'small', 1 << 20);
    const sent = Array.from({ length: 10 }, (_, i) => insert(100, `row ${i}`));
    for (const message of sent) spool.append(message);
    expect(spool.spilled).toBe(false);
    expect(readdirSync(parent)).toEqual([]);
    expect(Array.from(spool.messages(), (m) => Buffer.from(m))).toEqual(sent);
    spool.dispose();
  });

  it('spills past its memory limit and replays everything in order, multi-byte text and messages larger than a block included', () => {
    const spool = new StreamSpool(directory, 'big', 4096);
    const long = 'é€😀'.repeat(200_000); // 2.2 MB: larger than a spool block
    const expected: string[] = [];
    // Several blocks' worth on disk, each block written out and filled again.
    for (let i = 1; i <= 150_000; i++) {
      const text = i === 75_000 ? long : `${i}:ü`;
      expected.push(text);
      spool.append(insert(100, text));
    }
    expect(spool.spilled).toBe(true);
    expect(spool.size).toBe(150_000);
    const [dir] = readdirSync(parent);
    expect(readdirSync(join(parent, dir as string))).toHaveLength(1);
    expect(texts(spool)).toEqual(expected);
    // A second replay sees the same messages (the file is only deleted by dispose()).
    expect(texts(spool)).toHaveLength(150_000);
    spool.dispose();
    spool.dispose();
    expect(readdirSync(join(parent, dir as string))).toEqual([]);
  });

  it('skips the changes of aborted subtransactions, in memory and on disk', () => {
    const filler = 'x'.repeat(400_000);
    for (const limit of [0, 64 << 20]) {
      const spool = new StreamSpool(directory, `sub-${limit}`, limit);
      spool.append(insert(100, `1${filler}`));
      spool.append(insert(101, `2${filler}`));
      spool.append(insert(102, `3${filler}`));
      spool.append(insert(101, `4${filler}`));
      spool.append(insert(100, `5${filler}`));
      spool.abortSubtransaction(101);
      expect(spool.spilled).toBe(limit === 0);
      expect(texts(spool).map((t) => t[0])).toEqual(['1', '3', '5']);
      spool.dispose();
    }
  });

  it('removes its directory with every file', () => {
    const spool = new StreamSpool(directory, 'left', 0);
    for (let i = 0; i < 5; i++) spool.append(insert(1, 'y'.repeat(500_000)));
    expect(spool.spilled).toBe(true);
    const [dir] = readdirSync(parent);
    directory.remove();
    expect(existsSync(join(parent, dir as string))).toBe(false);
    spool.dispose();
  });

  it.each([
    ['ENOSPC', 'is full (ENOSPC) writing a transaction of 2 changes: free space or set spool_dir'],
    ['EDQUOT', 'is full (EDQUOT) writing a transaction of 2 changes: free space or set spool_dir'],
    ['EIO', 'cannot be written (EIO) writing a transaction of 2 changes: check the disk or set spool_dir'],
  ])('names its directory and the transaction when the disk refuses a write (%s)', (code, problem) => {
    const refuse = () => {
      throw Object.assign(new Error(`${code}: refused`), { code });
    };
    const spool = new StreamSpool(directory, 'full', 0, refuse);
    spool.append(insert(1, 'y'.repeat(600_000)));
    let thrown: unknown;
    try {
      // The second fills the first 1 MiB block, which goes to the file.
      spool.append(insert(1, 'y'.repeat(600_000)));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SpoolWriteError);
    expect((thrown as Error).message).toBe(`spool directory ${parent} ${problem}`);
    expect((thrown as SpoolWriteError).code).toBe(code === 'EIO' ? 'EIO' : 'SPOOL_FULL');
    spool.dispose();
  });
});
