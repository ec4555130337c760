import { describe, expect, it } from 'vitest';
import { MessageFramer } from '../../src/source/postgres/message-framer.js';

const message = (type: string, body: Buffer): Buffer => {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
};

/** Frames `reads` and returns what came out, as `type:body`. */
const framed = (reads: Buffer[]): string[] => {
  const out: string[] = [];
  const framer = new MessageFramer((type, buffer, start, end) => {
    out.push(`${String.fromCharCode(type)}:${buffer.toString('latin1', start, end)}`);
  });
  for (const read of reads) framer.push(read);
  return out;
};

const stream = Buffer.concat([
  message('d', Buffer.from('first')),
  message('Z', Buffer.alloc(0)),
  message('d', Buffer.from('x'.repeat(300))),
  message('C', Buffer.from('COPY 0')),
]);
const expected = ['d:first', 'Z:', `d:${'x'.repeat(300)}`, 'C:COPY 0'];

describe('framing protocol messages', () => {
  it('splits one read into its messages, an empty body included', () => {
    expect(framed([stream])).toEqual(expected);
  });

  it('gives the same messages however the stream is cut into reads', () => {
    for (let cut = 1; cut < stream.length; cut++) {
      expect(framed([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(expected);
    }
    const bytes = Array.from({ length: stream.length }, (_, i) => stream.subarray(i, i + 1));
    expect(framed(bytes)).toEqual(expected);
  });

  it('gathers a large message over many reads into one buffer of its size', () => {
    const big = message('d', Buffer.alloc(1_000_000, 'y'));
    const sizes: number[] = [];
    const framer = new MessageFramer((_type, buffer, start, end) => {
      sizes.push(end - start, buffer.length);
    });
    for (let at = 0; at < big.length; at += 65_536) framer.push(big.subarray(at, at + 65_536));
    expect(sizes).toEqual([1_000_000, 1_000_005]);
  });

  it('keeps a view of a message valid after the next read', () => {
    const views: Buffer[] = [];
    const framer = new MessageFramer((_type, buffer, start, end) => views.push(buffer.subarray(start, end)));
    const whole = message('d', Buffer.from('kept'));
    framer.push(whole.subarray(0, 7));
    framer.push(whole.subarray(7));
    framer.push(message('d', Buffer.from('next')));
    expect(views.map((v) => v.toString())).toEqual(['kept', 'next']);
  });

  it('refuses a length shorter than the length field itself', () => {
    const bad = Buffer.from([0x64, 0, 0, 0, 3]);
    expect(() => framed([bad])).toThrow(/malformed protocol message: length 3/);
  });
});
