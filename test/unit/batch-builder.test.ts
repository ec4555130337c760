import { describe, expect, it } from 'vitest';
import type { ChangeEvent } from '../../src/core/change.js';
import { valueBytes } from '../../src/core/change.js';
import { BatchBuilder, BEHIND_WAIT_MS } from '../../src/runtime/apply/batch-builder.js';

const change = (id: string, value = ''): ChangeEvent => ({
  op: 'insert',
  table: { schema: 'public', table: 't' },
  after: { id, value },
  commitLsn: 0x1n,
  xid: 1,
  commitTime: '',
});
const ids = (changes: readonly ChangeEvent[] | undefined) => changes?.map((c) => c.after?.id);
const limits = (maxEvents: number, maxBytes = 1 << 30, maxWaitMs = 0) => ({ maxEvents, maxBytes, maxWaitMs });

/** Adds one transaction of `count` changes named `name1`… and commits it at `endLsn`. */
function transaction(builder: BatchBuilder, name: string, count: number, endLsn: bigint) {
  builder.begin();
  for (let i = 1; i <= count; i++) builder.add(change(`${name}${i}`));
  return builder.commit(endLsn);
}

describe('BatchBuilder', () => {
  it('takes the committed transactions with the position of the last commit, and is empty after', () => {
    const builder = new BatchBuilder(limits(100));
    expect(builder.take()).toBeNull();
    expect(transaction(builder, 'a', 2, 100n)).toBe('with-changes');
    expect(transaction(builder, 'b', 1, 200n)).toBe('with-changes');
    const taken = builder.take();
    expect(ids(taken?.changes)).toEqual(['a1', 'a2', 'b1']);
    expect(taken?.position).toBe(200n);
    expect(builder.size).toBe(0);
    expect(builder.hasCommitted).toBe(false);
    expect(builder.take()).toBeNull();
  });

  it('leaves the open transaction in the batch, and a taken batch is not changed by what comes after', () => {
    const builder = new BatchBuilder(limits(100));
    transaction(builder, 'a', 2, 100n);
    builder.begin();
    builder.add(change('b1'));
    const taken = builder.take();
    expect(ids(taken?.changes)).toEqual(['a1', 'a2']);
    expect(builder.size).toBe(1);
    builder.add(change('b2'));
    expect(builder.commit(200n)).toBe('with-changes');
    expect(ids(taken?.changes)).toEqual(['a1', 'a2']);
    const next = builder.take();
    expect(ids(next?.changes)).toEqual(['b1', 'b2']);
    expect(next?.position).toBe(200n);
    // With everything committed, the taken batch is the gathered array itself: later changes go elsewhere.
    builder.begin();
    builder.add(change('c1'));
    expect(ids(next?.changes)).toEqual(['b1', 'b2']);
  });

  it('carries the position of a commit or idle position with nothing of its own on the batch before it', () => {
    const builder = new BatchBuilder(limits(100));
    builder.begin();
    expect(builder.commit(50n)).toBe('nothing-waits');
    expect(builder.idle(60n)).toBe('nothing-waits');
    transaction(builder, 'a', 1, 100n);
    expect(transaction(builder, 'empty', 0, 150n)).toBe('with-batch');
    expect(builder.idle(300n)).toBe('with-batch');
    expect(builder.take()?.position).toBe(300n);
  });

  it('ignores an idle position while a transaction is open or has changes waiting', () => {
    const builder = new BatchBuilder(limits(100));
    builder.begin();
    expect(builder.idle(10n)).toBe('ignored');
    builder.add(change('a1'));
    expect(builder.idle(10n)).toBe('ignored');
    builder.commit(100n);
    expect(builder.idle(500n)).toBe('with-batch');
    builder.begin();
    expect(builder.idle(600n)).toBe('ignored');
    expect(builder.take()?.position).toBe(500n);
  });

  it('is full at a batch of events or bytes, `times` over', () => {
    const builder = new BatchBuilder(limits(3));
    transaction(builder, 'a', 2, 100n);
    expect(builder.full()).toBe(false);
    builder.begin();
    builder.add(change('b1'));
    expect(builder.full()).toBe(true);
    expect(builder.full(2)).toBe(false);
    for (let i = 2; i <= 4; i++) builder.add(change(`b${i}`));
    expect(builder.full(2)).toBe(true);

    const big = change('x', 'v'.repeat(100));
    const bytes = new BatchBuilder(limits(1000, valueBytes(big) * 2));
    bytes.begin();
    bytes.add(big);
    expect(bytes.full()).toBe(false);
    bytes.add(big);
    expect(bytes.full()).toBe(true);
    expect(bytes.full(2)).toBe(false);
  });

  it('measures the open transaction alone for its pieces, by events', () => {
    const builder = new BatchBuilder(limits(2));
    transaction(builder, 'a', 3, 100n);
    builder.begin();
    builder.add(change('b1'));
    expect(builder.openFull(1)).toBe(false);
    builder.add(change('b2'));
    expect(builder.openFull(1)).toBe(true);
    expect(builder.openFull(2)).toBe(false);
  });

  it('takes the open transaction for a piece once nothing committed is before it', () => {
    const builder = new BatchBuilder(limits(100));
    transaction(builder, 'a', 1, 100n);
    builder.begin();
    builder.add(change('b1'));
    builder.add(change('b2'));
    expect(builder.takeOpen()).toBeNull();
    builder.take();
    expect(ids(builder.takeOpen() ?? undefined)).toEqual(['b1', 'b2']);
    expect(builder.size).toBe(0);
    expect(builder.full()).toBe(false);
    builder.add(change('b3'));
    // All of the transaction but b3 went in pieces: the commit carries b3.
    expect(builder.commit(200n)).toBe('with-changes');
    expect(ids(builder.take()?.changes)).toEqual(['b3']);
  });

  it('drops the open transaction and keeps the committed ones', () => {
    const builder = new BatchBuilder(limits(3));
    transaction(builder, 'a', 2, 100n);
    builder.begin();
    builder.add(change('b1'));
    builder.add(change('b2'));
    expect(builder.full()).toBe(true);
    builder.dropOpen();
    expect(builder.size).toBe(2);
    expect(builder.full()).toBe(false);
    const taken = builder.take();
    expect(ids(taken?.changes)).toEqual(['a1', 'a2']);
    expect(taken?.position).toBe(100n);
  });

  it('filters its committed and open changes apart, the committed ones first', () => {
    const builder = new BatchBuilder(limits(4));
    transaction(builder, 'a', 3, 100n);
    builder.begin();
    builder.add(change('b1'));
    builder.add(change('b2'));
    expect(builder.full()).toBe(true);
    const seen: string[][] = [];
    builder.keep((changes) => {
      seen.push(ids(changes) as string[]);
      return changes.filter((c) => c.after?.id !== 'a2' && c.after?.id !== 'b1');
    });
    expect(seen).toEqual([
      ['a1', 'a2', 'a3'],
      ['b1', 'b2'],
    ]);
    expect(builder.size).toBe(3);
    expect(builder.full()).toBe(false);
    expect(ids(builder.take()?.changes)).toEqual(['a1', 'a3']);
    expect(builder.size).toBe(1);

    // Nothing committed left: nothing to take, the next commit carries its own position.
    const emptied = new BatchBuilder(limits(4));
    transaction(emptied, 'a', 1, 100n);
    emptied.keep(() => []);
    expect(emptied.take()).toBeNull();
    expect(emptied.commit(200n)).toBe('nothing-waits');
  });

  it('is due at once without a wait, and after batch_max_wait_ms from its first change with one', () => {
    let now = 1_000;
    const clock = () => now;
    const eager = new BatchBuilder(limits(100, 1 << 30, 0), clock);
    expect(eager.due()).toBe(false);
    transaction(eager, 'a', 1, 100n);
    expect(eager.due()).toBe(true);

    const waiting = new BatchBuilder(limits(2, 1 << 30, 50), clock);
    waiting.begin();
    waiting.add(change('a1'));
    now += 20;
    waiting.commit(100n);
    expect(waiting.due()).toBe(false);
    expect(waiting.msUntilDue()).toBe(30);
    now += 30;
    expect(waiting.due()).toBe(true);
    expect(waiting.msUntilDue()).toBe(0);

    // A full batch is due before its wait is over.
    now = 5_000;
    const full = new BatchBuilder(limits(2, 1 << 30, 50), clock);
    transaction(full, 'a', 1, 100n);
    expect(full.due()).toBe(false);
    transaction(full, 'b', 1, 200n);
    expect(full.due()).toBe(true);
  });

  it('gathers to BEHIND_FILL of a batch, or for BEHIND_WAIT_MS, while a backlog is on its way', () => {
    let now = 1_000;
    const clock = () => now;
    const builder = new BatchBuilder(limits(4, 1 << 30, 0), clock);
    transaction(builder, 'a', 1, 100n);
    expect(builder.due()).toBe(true);
    expect(builder.due(true)).toBe(false);
    transaction(builder, 'b', 1, 200n);
    // Half of a batch of four.
    expect(builder.due(true)).toBe(true);
    builder.take();
    transaction(builder, 'c', 1, 300n);
    expect(builder.due(true)).toBe(false);
    expect(builder.msUntilDue(true)).toBe(BEHIND_WAIT_MS);
    now += BEHIND_WAIT_MS;
    expect(builder.due(true)).toBe(true);
    // A longer batch_max_wait_ms stays the wait.
    const patient = new BatchBuilder(limits(4, 1 << 30, 500), clock);
    transaction(patient, 'a', 1, 100n);
    expect(patient.waitMs(true)).toBe(500);
    expect(patient.due(true)).toBe(false);
    transaction(patient, 'b', 1, 200n);
    expect(patient.due(true)).toBe(true);
  });
});
