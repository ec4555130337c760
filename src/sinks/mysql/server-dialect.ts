/**
 * How an upsert names the row it would have inserted: MySQL 8.0.19 and later take a row alias
 * (`INSERT ... AS new ON DUPLICATE KEY UPDATE c = new.c`) and warn that `VALUES(c)` is deprecated;
 * MariaDB and older MySQL have `VALUES(c)` alone.
 */
export type UpsertStyle = 'row-alias' | 'values';

/** The alias of the inserted row, a name no target column or table of the sink's is likely to have. */
export const ROW_ALIAS = '_replicator_new';

/** The upsert style of a server from its `VERSION()`, e.g. `8.0.36` or `10.11.6-MariaDB-0+deb12u1`. */
export function upsertStyleOf(version: string): UpsertStyle {
  if (/mariadb/i.test(version)) return 'values';
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!match) return 'values';
  const [major, minor, patch] = match.slice(1, 4).map(Number) as [number, number, number];
  const atLeast = major > 8 || (major === 8 && (minor > 0 || patch >= 19));
  return atLeast ? 'row-alias' : 'values';
}

/**
 * The `ON DUPLICATE KEY UPDATE` of an `INSERT ... VALUES` (quoted column names), and what goes
 * between its VALUES rows and that clause: the row alias, where the server has it.
 */
export function duplicateKeyUpdate(style: UpsertStyle, columns: readonly string[]): string {
  const inserted = (c: string) => (style === 'row-alias' ? `${ROW_ALIAS}.${c}` : `VALUES(${c})`);
  const alias = style === 'row-alias' ? ` AS ${ROW_ALIAS}` : '';
  return `${alias} ON DUPLICATE KEY UPDATE ${columns.map((c) => `${c} = ${inserted(c)}`).join(', ')}`;
}
