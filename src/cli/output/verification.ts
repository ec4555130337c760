import type { Schemas } from '../../client/api-client.js';
import { formatAgo, formatDuration } from './durations.js';
import { formatTable } from './table.js';

type Verification = Schemas['Verification'];
type TableVerdict = Verification['tables'][number];

/** How many differing keys a summary shows per table; the API keeps up to 100. */
const SAMPLE_KEYS_SHOWN = 10;

const count = (n: number) => n.toLocaleString('en-US');

/** `id=7`, or `(region=eu, id=7)` for a composite key. */
const formatKey = (key: Record<string, string>) => {
  const parts = Object.entries(key).map(([column, value]) => `${column}=${value}`);
  return parts.length === 1 ? (parts[0] as string) : `(${parts.join(', ')})`;
};

/** "completed, differs", "running", "failed: why". */
function verificationState(v: Verification): string {
  if (v.status === 'completed') return `completed, ${v.result ?? 'no result'}`;
  return v.error ? `${v.status}: ${v.error}` : v.status;
}

function repairLine(v: Verification): string | undefined {
  if (v.repair) {
    const follow = v.repair.verification_id ? `, verified again by ${v.repair.verification_id}` : '';
    return `  repair           ${v.repair.status}${v.repair.error ? `: ${v.repair.error}` : ''}${follow}`;
  }
  return v.repair_of ? `  repair of        ${v.repair_of}` : undefined;
}

/** The notes under the table: why a table was not verified, the columns left out, the keys that differ. */
function tableNotes(t: TableVerdict): string[] {
  const notes: string[] = [];
  if (t.reason) notes.push(`  ${t.table}: ${t.reason}`);
  for (const c of t.columns_not_verified)
    notes.push(`  ${t.table}: column ${c.column} not verified: ${c.reason}`);
  const keys = t.sample_keys;
  if (keys.length > 0) {
    const shown = keys.slice(0, SAMPLE_KEYS_SHOWN).map((k) => `${k.kind} ${formatKey(k.key)}`);
    const more = keys.length > SAMPLE_KEYS_SHOWN ? `, and ${keys.length - SAMPLE_KEYS_SHOWN} more` : '';
    notes.push(`  ${t.table}: keys: ${shown.join(', ')}${more}`);
  }
  return notes;
}

/** A verification: its state and totals, then a row per table and notes on what differs. */
export function formatVerification(v: Verification, now = Date.now()): string {
  const lines = [
    `verification ${v.id} of pipeline ${v.pipeline}: ${verificationState(v)}`,
    `  asked            ${formatAgo(v.created_at, now)} (${v.trigger}${v.tables_requested.length ? `: ${v.tables_requested.join(', ')}` : ', every table'})`,
    `  duration         ${v.duration_ms === null ? 'not ended' : formatDuration(v.duration_ms)}`,
    `  rows read        ${count(v.rows_read)}`,
  ];
  const repair = repairLine(v);
  if (repair) lines.push(repair);
  if (v.tables.length === 0) return `${lines.join('\n')}\n`;
  const table = formatTable(
    [
      { heading: 'table' },
      { heading: 'status' },
      { heading: 'missing', numeric: true },
      { heading: 'extra', numeric: true },
      { heading: 'changed', numeric: true },
      { heading: 'unsettled', numeric: true },
      { heading: 'rows read', numeric: true },
    ],
    v.tables.map((t) => [
      t.table,
      t.status,
      count(t.missing),
      count(t.extra),
      count(t.changed),
      count(t.unsettled),
      count(t.rows_read),
    ]),
  );
  const notes = v.tables.flatMap(tableNotes);
  return `${lines.join('\n')}\n${table}${notes.length ? `${notes.join('\n')}\n` : ''}`;
}

/** Verifications one a line, newest first. */
export function formatVerificationList(list: readonly Verification[], now = Date.now()): string {
  return formatTable(
    [
      { heading: 'id' },
      { heading: 'asked' },
      { heading: 'trigger' },
      { heading: 'status' },
      { heading: 'result' },
      { heading: 'tables', numeric: true },
      { heading: 'rows read', numeric: true },
      { heading: 'duration', numeric: true },
      { heading: 'repair' },
    ],
    list.map((v) => [
      v.id,
      formatAgo(v.created_at, now),
      v.trigger,
      v.status,
      v.result ?? '',
      String(v.tables.length),
      count(v.rows_read),
      v.duration_ms === null ? '' : formatDuration(v.duration_ms),
      v.repair?.status ?? '',
    ]),
  );
}
