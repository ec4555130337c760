import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/commands/status.js';
import { formatAgo, formatDuration } from '../../src/cli/output/durations.js';
import { formatPlan } from '../../src/cli/output/plan.js';
import { progressBar } from '../../src/cli/output/progress-bar.js';
import { formatTable } from '../../src/cli/output/table.js';
import { formatVerification } from '../../src/cli/output/verification.js';

describe('CLI output', () => {
  it('prints a plan: + create, ~ update with its fields, - delete, then the counts', () => {
    const plan = {
      dry_run: true,
      connections: [
        { name: 'src', result: 'created' as const },
        { name: 'dst', result: 'unchanged' as const },
        {
          name: 'replica',
          result: 'updated' as const,
          changes: ['secrets'],
          notes: ['password supplied: will be replaced'],
        },
      ],
      pipelines: [
        { name: 'orders', result: 'updated' as const, changes: ['source.tables', 'sink.properties'] },
        { name: 'old', result: 'deleted' as const },
      ],
    };
    expect(formatPlan(plan)).toBe(
      [
        '+ connection src',
        '~ connection replica (secrets)',
        '    password supplied: will be replaced',
        '~ pipeline orders (source.tables, sink.properties)',
        '- pipeline old',
        'Dry run, nothing changed: 1 to create, 2 to update, 1 to delete, 1 unchanged.',
        '',
      ].join('\n'),
    );
    expect(formatPlan({ ...plan, dry_run: false })).toContain(
      'Applied: 1 created, 2 updated, 1 deleted, 1 unchanged.',
    );
    expect(formatPlan({ dry_run: false, connections: [], pipelines: [] })).toBe(
      'Applied: an empty document.\n',
    );
  });

  it('aligns tables, numbers to the right', () => {
    expect(
      formatTable(
        [{ heading: 'name' }, { heading: 'events/s', numeric: true }],
        [
          ['orders', '1.5'],
          ['a', '1200.0'],
        ],
      ),
    ).toBe(['NAME    EVENTS/S', 'orders       1.5', 'a         1200.0', ''].join('\n'));
  });

  it('draws progress and durations', () => {
    expect(progressBar(50, 10)).toBe('[#####-----]  50%');
    expect(progressBar(140, 4)).toBe('[####] 100%');
    expect(progressBar(0, 4, true)).toBe('[░░░░]   0%');
    expect([850, 12_400, 3_200, 600_000, 9_000_000].map(formatDuration)).toEqual([
      '850 ms',
      '12 s',
      '3.2 s',
      '10 min',
      '2.5 h',
    ]);
    expect(formatAgo(null)).toBe('never');
    expect(formatAgo('2026-01-01T00:00:00.000Z', Date.parse('2026-01-01T00:00:03.500Z'))).toBe('3 s ago');
  });

  it("shows a pipeline's state, lag, and a bar for each table being copied", () => {
    const text = formatStatus(
      {
        pipeline: {
          name: 'orders',
          state: 'running',
          desired_state: 'running',
          error: null,
          warning: 'the slot keeps 3 GB of WAL',
        } as never,
        metrics: {
          name: 'orders',
          state: 'running',
          events_per_second: 12.34,
          replication_lag_seconds: 0.25,
          replication_lag_bytes: 3 * 1024 * 1024,
          retained_wal_bytes: 5 * 1024 ** 3,
          last_checkpoint_at: null,
          events_total: 12345,
          sink_errors_total: 0,
        },
        progress: {
          phase: 'snapshot',
          tables: [
            {
              table: 'public.orders',
              status: 'snapshot',
              partitions_total: 4,
              partitions_done: 1,
              rows_total: 2000,
              rows_done: 500,
              percent: 25,
              eta_seconds: 30,
              reason: null,
              dropped_at: null,
              partitions: [],
            },
            {
              table: 'public.lines',
              status: 'streaming',
              partitions_total: 1,
              partitions_done: 1,
              rows_total: 10,
              rows_done: 10,
              percent: 100,
              eta_seconds: null,
              reason: null,
              dropped_at: null,
              partitions: [],
            },
          ],
        },
      },
      false,
    );
    expect(text).toContain('pipeline orders: running\n');
    expect(text).toContain('  lag              250 ms (3.0 MiB of source WAL behind)\n');
    expect(text).toContain('  retained WAL     5.0 GiB\n');
    expect(text).toContain('  events           12,345');
    expect(text).toContain('  warning          the slot keeps 3 GB of WAL');
    expect(text).toMatch(
      /public\.orders\s+snapshot\s+\[######------------------\]\s+25%\s+500 \/ 2,000\s+30 s/,
    );
    expect(text).toMatch(/public\.lines\s+streaming\s+10\n/);
  });
  it('prints a verification per table, with the reason, the columns left out and at most 10 keys', () => {
    const key = (id: number) => ({ kind: 'changed' as const, key: { region: 'eu', id: String(id) } });
    const text = formatVerification(
      {
        id: 'v1',
        pipeline: 'shop',
        status: 'completed',
        result: 'differs',
        trigger: 'request',
        tables_requested: [],
        rows_read: 2_400,
        source_share: 1,
        error: null,
        repair: { status: 'running', error: null, verification_id: null },
        repair_of: null,
        created_at: '2026-01-01T00:00:00Z',
        started_at: '2026-01-01T00:00:00Z',
        finished_at: '2026-01-01T00:00:01.5Z',
        duration_ms: 1_500,
        tables: [
          {
            table: 'public.orders',
            status: 'differs',
            columns_not_verified: [{ column: 'doc', reason: 'json is compared as text by neither side' }],
            source_rows: 1_000,
            sink_rows: 1_000,
            missing: 0,
            extra: 0,
            changed: 12,
            unsettled: 0,
            sample_keys: Array.from({ length: 12 }, (_, i) => key(i + 1)),
            rows_read: 2_000,
          },
          {
            table: 'public.geo',
            status: 'not_verified',
            reason: 'its key type has no order both sides share',
            columns_not_verified: [],
            source_rows: 0,
            sink_rows: 0,
            missing: 0,
            extra: 0,
            changed: 0,
            unsettled: 0,
            sample_keys: [],
            rows_read: 0,
          },
        ],
      },
      Date.parse('2026-01-01T00:00:05Z'),
    );
    expect(text).toBe(
      [
        'verification v1 of pipeline shop: completed, differs',
        '  asked            5 s ago (request, every table)',
        '  duration         1.5 s',
        '  rows read        2,400',
        '  repair           running',
        'TABLE          STATUS        MISSING  EXTRA  CHANGED  UNSETTLED  ROWS READ',
        'public.orders  differs             0      0       12          0      2,000',
        'public.geo     not_verified        0      0        0          0          0',
        '  public.orders: column doc not verified: json is compared as text by neither side',
        `  public.orders: keys: ${Array.from({ length: 10 }, (_, i) => `changed (region=eu, id=${i + 1})`).join(', ')}, and 2 more`,
        '  public.geo: its key type has no order both sides share',
        '',
      ].join('\n'),
    );
  });
});
