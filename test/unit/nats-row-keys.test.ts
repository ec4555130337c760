import { describe, expect, it } from 'vitest';
import { changeEnvelopes } from '../../src/sinks/change-envelope.js';
import { rowsOf } from '../../src/sinks/nats/row-keys.js';
import { ev, orders, tx } from '../support/message-sink-fixtures.js';

const t1 = tx(1);
const rowsOfChanges = (...changes: Parameters<typeof ev>[1][]) =>
  changeEnvelopes(
    changes.map((c) => ev(t1, c)),
    () => orders,
    new Map(),
  ).envelopes.map(({ envelope }) => rowsOf(orders, envelope));

describe('nats sink, the rows a message is about', () => {
  it('names a row by its table and key, whatever the change', () => {
    const [insert, update, remove] = rowsOfChanges(
      { op: 'insert', after: { id: '7', total: '1', note: 'a' } },
      { op: 'update', after: { id: '7', total: '2', note: 'a' } },
      { op: 'delete', key: { id: '7' } },
    );
    expect(insert).toHaveLength(1);
    expect(update).toEqual(insert);
    expect(remove).toEqual(insert);
    expect(rowsOfChanges({ op: 'insert', after: { id: '8' } })[0]).not.toEqual(insert);
  });

  it("names both keys of an update that moved the row, the new one as the row's next change names it", () => {
    const [moved, next] = rowsOfChanges(
      { op: 'update', key: { id: '7' }, after: { id: '9', total: '1', note: 'a' } },
      { op: 'update', after: { id: '9', total: '2', note: 'a' } },
    );
    const [old] = rowsOfChanges({ op: 'delete', key: { id: '7' } });
    expect(moved).toEqual([...(old ?? []), ...(next ?? [])]);
  });

  it('names the whole table for a truncate', () => {
    expect(rowsOfChanges({ op: 'truncate' })).toEqual([null]);
  });
});
