import { describe, expect, it } from 'vitest';
import type { PostgresStreamItem as StreamItem } from '../../src/source/postgres/change-stream.js';
import { liveAssemblerEachTest } from '../support/live-assembler.js';
import { pgMicros, pgoutput, type RelationInput } from '../support/pgoutput-messages.js';

const TS = pgMicros(new Date('2024-05-06T07:08:09Z'));
const ITEMS: RelationInput = {
  relationId: 7,
  table: 'items',
  columns: [{ name: 'id', key: true, typeOid: 23 }, { name: 'v' }],
};

/** Each item as a short text: its kind and what tells it apart. */
const shown = (item: StreamItem): string => {
  switch (item.kind) {
    case 'stream-change':
      return `stream-change ${item.xid}/${item.change.xid} ${item.change.after?.id}`;
    case 'change':
      return `change ${item.change.after?.id}`;
    case 'stream-abort':
      return `stream-abort ${item.xid}/${item.subxid}`;
    case 'stream-commit':
      return `stream-commit ${item.xid} ${item.endLsn}`;
    case 'stream-relation':
      return `stream-relation ${item.relation.table}`;
    default:
      return item.kind;
  }
};

describe('transaction assembler handing over a streamed transaction as it arrives', () => {
  const live = liveAssemblerEachTest('assembler-live');
  const emitted = live.emitted;

  const feed = (...messages: Buffer[]) => {
    for (const message of messages) {
      const replay = live.assembler().accept(message);
      if (replay) throw new Error('an unexpected replay');
    }
  };
  const taken = () => emitted.splice(0).map(shown);

  it('emits the first streamed transaction as it arrives, another one interleaved only at its commit', () => {
    feed(
      pgoutput.relation(ITEMS),
      pgoutput.streamStart(700, true),
      pgoutput.relation(ITEMS, 700),
      pgoutput.insert(7, ['1', 'a'], 700),
      pgoutput.insert(7, ['2', 'b'], 701),
      pgoutput.streamStop(),
      pgoutput.streamStart(800, true),
      pgoutput.insert(7, ['9', 'z'], 800),
      pgoutput.streamStop(),
      pgoutput.begin(0x100n, TS, 50),
      pgoutput.insert(7, ['5', 'c']),
      pgoutput.commit(0x100n, 0x110n, TS),
      pgoutput.streamStart(700, false),
      pgoutput.insert(7, ['3', 'd'], 700),
      pgoutput.streamStop(),
      pgoutput.streamAbort(700, 701),
    );
    expect(taken()).toEqual([
      'relation',
      'stream-relation items',
      'stream-change 700/700 1',
      'stream-change 700/701 2',
      'begin',
      'change 5',
      'commit',
      'stream-change 700/700 3',
      'stream-abort 700/701',
    ]);
  });

  it('waits at the Stream Commit for the verdict: nothing replayed once delivered, the whole transaction otherwise', () => {
    feed(
      pgoutput.relation(ITEMS),
      pgoutput.streamStart(700, true),
      pgoutput.insert(7, ['1', 'a'], 700),
      pgoutput.streamStop(),
      pgoutput.streamStart(800, true),
      pgoutput.insert(7, ['9', 'z'], 800),
      pgoutput.streamStop(),
    );
    taken();
    const delivered = live.assembler().accept(pgoutput.streamCommit(700, 0x200n, 0x230n, TS));
    const first = delivered?.next();
    const marker = first?.value as StreamItem;
    expect(shown(marker)).toBe('stream-commit 700 560');
    if (marker.kind !== 'stream-commit') throw new Error('not a marker');
    marker.verdict.settle(true);
    expect(delivered?.next().done).toBe(true);
    expect(live.assembler().stats().transactions).toBe(1);

    // The next streamed transaction is handed over as it arrives once the first is done; one that
    // began before (800) keeps waiting for its commit.
    feed(pgoutput.streamStart(900, true), pgoutput.insert(7, ['4', 'x'], 900), pgoutput.streamStop());
    expect(taken()).toEqual(['stream-change 900/900 4']);
    const replayed = live.assembler().accept(pgoutput.streamCommit(800, 0x300n, 0x330n, TS));
    expect([...(replayed ?? [])].map(shown)).toEqual(['begin', 'change 9', 'commit']);

    const refused = live.assembler().accept(pgoutput.streamCommit(900, 0x400n, 0x430n, TS));
    const items: string[] = [];
    for (const item of refused ?? []) {
      items.push(shown(item));
      if (item.kind === 'stream-commit') item.verdict.settle(false);
    }
    expect(items).toEqual(['stream-commit 900 1072', 'begin', 'change 4', 'commit']);
  });

  it('ends the live hand-over at a Stream Abort of the whole transaction', () => {
    feed(
      pgoutput.relation(ITEMS),
      pgoutput.streamStart(700, true),
      pgoutput.insert(7, ['1', 'a'], 700),
      pgoutput.streamStop(),
      pgoutput.streamAbort(700, 700),
      pgoutput.streamStart(701, true),
      pgoutput.insert(7, ['2', 'b'], 701),
      pgoutput.streamStop(),
    );
    expect(taken()).toEqual([
      'relation',
      'stream-change 700/700 1',
      'stream-abort 700/700',
      'stream-change 701/701 2',
    ]);
  });

  it('decodes a streamed change with the shape its own stream announced, not the committed one', () => {
    const wider: RelationInput = { ...ITEMS, columns: [...ITEMS.columns, { name: 'w' }] };
    feed(
      pgoutput.relation(ITEMS),
      pgoutput.streamStart(700, true),
      pgoutput.relation(wider, 700),
      pgoutput.insert(7, ['1', 'a', 'x'], 700),
      pgoutput.streamStop(),
      pgoutput.begin(0x100n, TS, 50),
      pgoutput.insert(7, ['5', 'c']),
      pgoutput.commit(0x100n, 0x110n, TS),
    );
    const items = emitted.splice(0);
    const streamed = items.find((i) => i.kind === 'stream-change');
    const committed = items.find((i) => i.kind === 'change');
    expect(streamed?.kind === 'stream-change' && streamed.change.after).toEqual({ id: '1', v: 'a', w: 'x' });
    expect(committed?.kind === 'change' && committed.change.after).toEqual({ id: '5', v: 'c' });
  });
});
