import pg from 'pg';
import type { TableRef } from '../../core/change.js';

/** An identifier as a person would type it: bare when it can be, else quoted. */
export function ident(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) && !RESERVED.has(name) ? name : pg.escapeIdentifier(name);
}

// Reserved words that a role, database, schema or table name needs quotes for.
const RESERVED = new Set([
  'all',
  'analyse',
  'analyze',
  'and',
  'any',
  'array',
  'as',
  'asc',
  'both',
  'case',
  'cast',
  'check',
  'collate',
  'column',
  'constraint',
  'create',
  'current_role',
  'current_user',
  'default',
  'do',
  'else',
  'end',
  'from',
  'grant',
  'group',
  'in',
  'limit',
  'not',
  'null',
  'offset',
  'on',
  'only',
  'or',
  'order',
  'select',
  'session_user',
  'table',
  'to',
  'user',
  'using',
  'where',
  'with',
]);

/** `schema.table` as a person would type it. */
export const tableText = (t: TableRef) => `${ident(t.schema)}.${ident(t.table)}`;
