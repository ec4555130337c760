import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { RecentCopyText, refusedCopyLine } from '../../src/sinks/postgres/refused-copy-line.js';
import { col, tableOf } from '../support/table-schemas.js';

const table = tableOf(
  [col('id', 'integer', { isKey: true }), col('at', 'timestamp(0) without time zone'), col('note', 'text')],
  ['id'],
  { schema: 'public', table: 'events' },
);

/** Sends `lines` through a RecentCopyText in chunks of `size` bytes, cut anywhere. */
async function sent(lines: string[], size: number): Promise<RecentCopyText> {
  const text = Buffer.from(lines.map((l) => `${l}\n`).join(''));
  const chunks: Buffer[] = [];
  for (let at = 0; at < text.length; at += size) chunks.push(text.subarray(at, at + size));
  const source = Readable.from(chunks);
  const recent = new RecentCopyText().watch(source);
  const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
  await pipeline(source, sink);
  return recent;
}

const line = (n: number) => `${n}\t2024-01-01 00:00:00\t${'x'.repeat(n % 97)}`;

describe('a snapshot line the server refuses', () => {
  it('is found by number among the last megabytes sent, never a wrong one once let go', async () => {
    const lines = Array.from({ length: 300_000 }, (_, i) => line(i + 1));
    const recent = await sent(lines, 65_531);
    for (const n of [300_000, 299_999, 250_000]) expect(recent.line(n)).toBe(line(n));
    for (const n of [1, 1000, 50_000]) expect(recent.line(n)).toBeUndefined();
  });

  it('names the table, the key and the column the server names', async () => {
    const recent = await sent([line(1), `42\t294277-01-01 00:00:00\t\\N`, line(3)], 7);
    const error = Object.assign(new Error('timestamp out of range: "294277-01-01 00:00:00"'), {
      code: '22008',
      where: 'COPY events, line 2, column at: "294277-01-01 00:00:00"',
    });
    expect(refusedCopyLine(table, recent, error)?.message).toBe(
      'the sink refused the change of public.events with key (id)=(42): column "at": timestamp out of range: "294277-01-01 00:00:00"',
    );
    // A line no longer at hand is named by its number; an error that may heal is no refusal.
    const gone = Object.assign(new Error('null value'), {
      code: '23502',
      where: 'COPY events, line 900: "…"',
    });
    expect(refusedCopyLine(table, recent, gone)?.message).toBe(
      'the sink refused the change of public.events: null value (line 900 of the snapshot partition)',
    );
    expect(
      refusedCopyLine(table, recent, Object.assign(new Error('gone'), { code: '57P01' })),
    ).toBeUndefined();
  });
});
