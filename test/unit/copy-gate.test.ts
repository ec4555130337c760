import { describe, expect, it } from 'vitest';
import type { ChangeEvent, TableSchema } from '../../src/core/change.js';
import { CopyGate } from '../../src/runtime/snapshot/copy-gate.js';
import { keyOrderOf } from '../../src/runtime/snapshot/key-order.js';
import type { PartitionRow } from '../../src/store/snapshot-partitions-store.js';

const table = (typeName: string, keyColumns = ['id']): TableSchema => ({
  schema: 'public',
  table: 'items',
  columns: [
    { name: 'id', typeName, typeOid: 0, nullable: false, isKey: true },
    { name: 'k2', typeName: 'integer', typeOid: 23, nullable: false, isKey: keyColumns.includes('k2') },
    { name: 'v', typeName: 'text', typeOid: 25, nullable: true, isKey: false },
  ],
  keyColumns,
});

// Snapshot A sees transactions before 100; snapshot B (a later resume) those before 200 but 150.
const A = { visibility: '100:100:', lsn: '0/5000' };
const B = { visibility: '150:200:150', lsn: '0/9000' };

const partition = (
  id: number,
  lower: string | null,
  upper: string | null,
  stamp: { visibility: string; lsn: string } | null,
): PartitionRow => ({
  table_name: 'public.items',
  partition_id: String(id),
  lower_bound: lower,
  upper_bound: upper,
  rows_done: 10,
  done_at: null,
  copied_in_visibility: stamp?.visibility ?? null,
  copied_in_lsn: stamp?.lsn ?? null,
});

const change = (xid: number, op: ChangeEvent['op'], id: string | null, old?: string): ChangeEvent => ({
  op,
  table: { schema: 'public', table: 'items' },
  ...(op === 'delete' ? { key: { id } } : { after: { id, k2: '1', v: 'x' } }),
  ...(old !== undefined ? { key: { id: old } } : {}),
  commitLsn: 0xa000n,
  xid,
  commitTime: '2026-01-01T00:00:00Z',
});

describe('the copy gate', () => {
  // Keys below 1000 copied in the new slot's snapshot (sees nothing streamed), 1000-1999 in A, 2000 up in B.
  const mixed = [
    partition(0, null, '1000', null),
    partition(1, '1000', '2000', A),
    partition(2, '2000', null, B),
  ];

  it('skips a change only where the copy of its row holds it', () => {
    const gate = CopyGate.of([table('integer')], mixed, 0x1000n);
    expect(gate.route(change(90, 'update', '5'))).toBe('apply'); // copied before it
    expect(gate.route(change(90, 'update', '1500'))).toBe('skip'); // A sees 90
    expect(gate.route(change(120, 'update', '1500'))).toBe('apply'); // A does not see 120
    expect(gate.route(change(120, 'delete', '2500'))).toBe('skip'); // B sees 120
    expect(gate.route(change(150, 'insert', '2500'))).toBe('apply'); // in progress in B
    expect(gate.route(change(250, 'insert', '999999999999'))).toBe('apply'); // after every snapshot
    // Keys compare as numbers, not as text ('300' > '2000' as text).
    expect(gate.route(change(120, 'update', '300'))).toBe('apply');
    expect(gate.route(change(120, 'update', '-5'))).toBe('apply');
  });

  it('skips a key change only when both rows lie in partitions that hold it', () => {
    const gate = CopyGate.of([table('bigint')], mixed, 0x1000n);
    expect(gate.route(change(90, 'update', '1600', '1500'))).toBe('skip');
    expect(gate.route(change(90, 'update', '1600', '5'))).toBe('apply');
  });

  it('asks for a copy again for a truncate that part of the copy holds', () => {
    const gate = CopyGate.of([table('integer')], mixed, 0x1000n);
    expect(gate.route(change(120, 'truncate', null))).toBe('copy-again');
    expect(gate.route(change(250, 'truncate', null))).toBe('apply');
  });

  it('skips by visibility alone when the whole table was copied in one snapshot', () => {
    const uniform = [partition(0, null, 'm', B), partition(1, 'm', null, B)];
    const gate = CopyGate.of([table('text')], uniform, 0x1000n);
    expect(gate.route(change(120, 'update', 'zebra'))).toBe('skip');
    expect(gate.route(change(120, 'truncate', null))).toBe('skip');
    expect(gate.route(change(150, 'update', 'zebra'))).toBe('apply');
  });

  it('applies, never skips, where it cannot tell the partition of a key', () => {
    const text = [partition(0, null, 'm', null), partition(1, 'm', null, B)];
    expect(CopyGate.of([table('text')], text, 0x1000n).route(change(120, 'update', 'zebra'))).toBe('apply');
  });

  it('ignores snapshots stamped at or before the stream start', () => {
    const gate = CopyGate.of([table('integer')], mixed, 0x9000n);
    expect(gate.route(change(120, 'delete', '2500'))).toBe('apply');
    expect(gate.active).toBe(false);
    expect(CopyGate.of([table('integer')], mixed, 0x6000n).route(change(90, 'update', '1500'))).toBe('apply');
  });

  it('lets a backfilled table go', () => {
    const gate = CopyGate.of([table('integer')], mixed, 0x1000n);
    gate.forget('public.items');
    expect(gate.route(change(90, 'update', '1500'))).toBe('apply');
    expect(gate.active).toBe(false);
  });
});

describe('key order', () => {
  it('orders integers as numbers and uuids as bytes, and knows no collation', () => {
    const int = keyOrderOf('bigint');
    expect(int?.('9', '10')).toBeLessThan(0);
    expect(int?.('-10', '-9')).toBeLessThan(0);
    expect(int?.('9223372036854775807', '9223372036854775806')).toBeGreaterThan(0);
    const uuid = keyOrderOf('uuid');
    expect(
      uuid?.('0a000000-0000-0000-0000-000000000000', 'A0000000-0000-0000-0000-000000000000'),
    ).toBeLessThan(0);
    expect(keyOrderOf('text')).toBeUndefined();
    expect(keyOrderOf('numeric')).toBeUndefined();
  });
});
