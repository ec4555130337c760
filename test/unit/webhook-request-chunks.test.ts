import { describe, expect, it } from 'vitest';
import type { AddressedEnvelope } from '../../src/sinks/change-envelope.js';
import { detailOf, postedBefore, unfinishedAt, unfinishedOf } from '../../src/sinks/webhook/delivered.js';
import { RequestChunks } from '../../src/sinks/webhook/request-chunks.js';

describe('webhook request chunks', () => {
  it('cuts at batch_max_events and batch_max_bytes, a larger event alone', () => {
    const chunks = new RequestChunks(3, 30);
    const requests = [];
    for (const [i, json] of [
      '{"a":1}',
      '{"a":2}',
      '{"a":3}',
      '{"a":4}',
      `{"big":"${'x'.repeat(40)}"}`,
      '{"a":6}',
    ].entries()) {
      const ready = chunks.add(json, `id${i}`);
      if (ready) requests.push(ready);
    }
    const last = chunks.take();
    if (last) requests.push(last);
    expect(requests.map((r) => JSON.parse(r.body).events.length)).toEqual([3, 1, 1, 1]);
    expect(requests[0]?.body).toBe('{"events":[{"a":1},{"a":2},{"a":3}]}');
    expect(chunks.take()).toBeUndefined();
  });

  it('keys a request by its event ids: the same events, the same key', () => {
    const key = (ids: string[]) => {
      const chunks = new RequestChunks(10, 10_000);
      for (const id of ids) chunks.add('{}', id);
      return chunks.take()?.key;
    };
    expect(key(['a', 'b'])).toBe(key(['a', 'b']));
    expect(key(['a', 'b'])).not.toBe(key(['a', 'c']));
    expect(key(['a', 'b'])).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('what a webhook has posted past its checkpoint', () => {
  const event = (lsn: string, sequence: number, table = 'orders'): AddressedEnvelope => ({
    table: { schema: 'public', table },
    sequence,
    envelope: {
      id: `${lsn}/${sequence}`,
      op: 'insert',
      table: `public.${table}`,
      key: null,
      before: null,
      after: {},
      lsn,
      commit_time: null,
    },
  });

  it('counts each table of each transaction past the checkpoint, and forgets the finished ones', () => {
    const note = unfinishedAt(0x2000n, new Map(), [
      event('0/1000', 0),
      event('0/3000', 0),
      event('0/3000', 1),
      event('0/4000', 0, 'lines'),
    ]);
    expect(detailOf(note)).toEqual({
      posted: [
        { table: 'public/orders', commit_lsn: '0/3000', count: 2 },
        { table: 'public/lines', commit_lsn: '0/4000', count: 1 },
      ],
    });
    const read = unfinishedOf(detailOf(note));
    expect(postedBefore(event('0/3000', 1), read)).toBe(true);
    expect(postedBefore(event('0/3000', 2), read)).toBe(false);
    expect(postedBefore(event('0/4000', 0), read)).toBe(false);
    expect(postedBefore(event('0/4000', 0, 'lines'), read)).toBe(true);
    // Past a later checkpoint, the note is empty again.
    expect(detailOf(unfinishedAt(0x5000n, read, []))).toEqual({});
  });

  it('reads a missing or malformed note as nothing posted', () => {
    expect(unfinishedOf(undefined).size).toBe(0);
    expect(unfinishedOf({ posted: 'x' }).size).toBe(0);
    expect(
      unfinishedOf({ posted: [{ table: 1 }, null, { table: 't', commit_lsn: '0/1', count: 2 }] }).size,
    ).toBe(1);
  });
});
