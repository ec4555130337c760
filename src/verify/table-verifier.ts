import { setTimeout as sleep } from 'node:timers/promises';
import type { TableSchema } from '../core/change.js';
import {
  type ComparedKey,
  type ComparisonReader,
  notCompared,
  type SinkComparison,
  type SourceComparison,
  type SourceComparisonReader,
} from '../core/table-comparison.js';
import { type DifferenceKind, emptyVerdict, type TableVerdict } from '../core/verdict.js';
import { type PositionedReads, TableBusyError } from '../runtime/backfill/backfill-coordinator.js';
import {
  type ComparedTable,
  checksumSql,
  comparedTable,
  type KeyRange,
  keyColumnsOf,
  keysCondition,
  rangeCondition,
  rowHashesSql,
  splitPointsSql,
  WHOLE_TABLE,
} from './comparison-sql.js';

/** How a verification reads, and how much it keeps. */
export interface VerifyLimits {
  /** Rows of a range compared by one checksum at first. */
  segmentRows: number;
  /** A differing range of at most this many rows is read row by row; a larger one is cut in parts. */
  downloadRows: number;
  /** Parts a large differing range is cut into. */
  bisectParts: number;
  /** Ranges whose source checksums are read before waiting for the sink once. */
  waveRanges: number;
  /** Differing keys kept per table (for the samples and a repair); past it the table is counted, not listed. */
  maxKeys: number;
  /** Sample keys shown per table. */
  sampleKeys: number;
  /** Times a differing key is read again before it is called a difference or left unsettled. */
  recheckRounds: number;
  /** Share of the source's time (of one session) the verification may take, 0.01 <= share <= 1. */
  sourceShare: number;
}

export const DEFAULT_VERIFY_LIMITS: VerifyLimits = {
  segmentRows: 50_000,
  // A differing range of the first pass is read row by row at once: a few MB a side, where cutting
  // it smaller would hash its rows again at each level.
  downloadRows: 60_000,
  bisectParts: 16,
  waveRanges: 8,
  maxKeys: 10_000,
  sampleKeys: 100,
  recheckRounds: 5,
  sourceShare: 1,
};

export interface TableVerifyDeps {
  table: TableSchema;
  source: SourceComparison;
  sourceReader: SourceComparisonReader;
  sink: SinkComparison;
  sinkReader: ComparisonReader;
  /** Resolves once the pipeline has made everything before `lsn` durable in the sink. */
  waitDurable(lsn: bigint, signal: AbortSignal): Promise<void>;
  signal: AbortSignal;
  limits: VerifyLimits;
  /** Told of rows read, on either side, as they are. */
  onRowsRead(rows: number): void;
  /**
   * Reads both sides at one source position, the table's changes held meanwhile (see
   * BackfillCoordinator.compareAtSourcePosition): how the rows the source keeps changing are
   * compared in the end. Absent, they are left unsettled.
   */
  atSourcePosition?(reads: PositionedReads): Promise<void>;
}

interface Plan {
  source: ComparedTable;
  sink: ComparedTable;
  notVerified: { column: string; reason: string }[];
}

/** What a table's comparison found, with every differing key kept (up to `maxKeys`) for a repair. */
export interface TableFindings {
  verdict: TableVerdict;
  keys: string[][];
  /** More rows differ than were kept: a repair copies the whole table again. */
  truncated: boolean;
}

/**
 * Which columns of a table compare, in the sink's form: a column the sink cannot compare exactly is
 * left out and listed; a key column that cannot be compared (or ordered alike) leaves the table
 * not verified.
 */
function planComparison(
  table: TableSchema,
  source: SourceComparison,
  sink: SinkComparison,
): Plan | { reason: string } {
  const sourceKeys: ComparedKey[] = [];
  const sinkKeys: ComparedKey[] = [];
  for (const column of keyColumnsOf(table)) {
    const key = sink.key(column);
    if (notCompared(key)) return { reason: `its key column ${JSON.stringify(column.name)} ${key.reason}` };
    sinkKeys.push(key);
    sourceKeys.push(source.key(column));
  }
  const sourceColumns: { column: (typeof table.columns)[number]; sql: string }[] = [];
  const sinkColumns: typeof sourceColumns = [];
  const notVerified: Plan['notVerified'] = [];
  for (const column of table.columns) {
    const compared = sink.column(column);
    if (notCompared(compared)) {
      notVerified.push({ column: column.name, reason: compared.reason });
      continue;
    }
    sinkColumns.push({ column, sql: compared.sql });
    sourceColumns.push({ column, sql: source.value(column, compared.form) });
  }
  return {
    source: comparedTable(source.dialect, table, sourceColumns, sourceKeys),
    sink: comparedTable(sink.dialect, sink.target(table), sinkColumns, sinkKeys),
    notVerified,
  };
}

const keyId = (key: readonly string[]) => JSON.stringify(key);

/** Ranges between consecutive split points, within `range`. */
function rangesBetween(range: KeyRange, points: string[][]): KeyRange[] {
  const edges = [range.lower, ...points, range.upper];
  return edges.slice(0, -1).map((lower, i) => ({ lower, upper: edges[i + 1] ?? null }));
}

/**
 * Compares one table of a pipeline between its source and its sink, both live. Ranges of the key
 * are compared by count and checksum: the source's first, then, once the pipeline has made the
 * source's position durable, the sink's. A differing range is cut smaller until it is small enough
 * to read row by row; each differing key is then read again at both sides, the source before and
 * after the sink, and called a difference only when the source did not change it meanwhile while
 * the sink still disagrees. A key the source changes at every re-read is left unsettled.
 */
export class TableVerifier {
  private rowsRead = 0;
  private sourceRows = 0;
  private sinkRows = 0;
  private readonly candidates = new Map<string, string[]>();
  private truncated = false;

  constructor(private readonly deps: TableVerifyDeps) {}

  async run(): Promise<TableFindings> {
    const { table, source, sink } = this.deps;
    const name = `${table.schema}.${table.table}`;
    const plan = planComparison(table, source, sink);
    if ('reason' in plan) {
      return {
        verdict: { ...emptyVerdict(name), status: 'not_verified', reason: plan.reason },
        keys: [],
        truncated: false,
      };
    }
    // The whole table first (its rows counted), then the parts of the ranges that differed.
    let ranges = await this.topRanges(plan);
    for (let depth = 0; ranges.length > 0 && !this.truncated; depth++) {
      const differing = await this.compareRanges(plan, ranges, depth === 0);
      ranges = [];
      for (const { range, rows } of differing) {
        if (this.truncated) break;
        const smaller = await this.cut(plan, range, rows);
        if (smaller) ranges.push(...smaller);
        else await this.readRows(plan, range);
      }
    }
    return this.recheck(plan, name);
  }

  /**
   * Compares ranges by checksum, a wave of them at a time: the source's checksums of a wave, then,
   * once the sink holds what they saw, the sink's, read while the source computes the next wave's
   * (the two servers work at once). Returns the ranges that differ, with their larger row count.
   */
  private async compareRanges(
    plan: Plan,
    ranges: readonly KeyRange[],
    count: boolean,
  ): Promise<{ range: KeyRange; rows: number }[]> {
    const { limits, signal } = this.deps;
    const differing: { range: KeyRange; rows: number }[] = [];
    let sinkSide: Promise<void> = Promise.resolve();
    let sinkFailure: { error: unknown } | undefined;
    for (let at = 0; at < ranges.length; at += limits.waveRanges) {
      signal.throwIfAborted();
      const wave = ranges.slice(at, at + limits.waveRanges);
      const sourceSums: Checksum[] = [];
      for (const range of wave) sourceSums.push(await this.checksum('source', plan.source, range));
      await sinkSide;
      if (sinkFailure) throw sinkFailure.error;
      await this.sinkCaughtUp();
      sinkSide = (async () => {
        for (const [i, range] of wave.entries()) {
          const source = sourceSums[i] as Checksum;
          const sink = await this.checksum('sink', plan.sink, range);
          if (count) {
            this.sourceRows += source.rows;
            this.sinkRows += sink.rows;
          }
          if (source.rows !== sink.rows || source.sum !== sink.sum)
            differing.push({ range, rows: Math.max(source.rows, sink.rows) });
        }
      })().catch((error: unknown) => {
        sinkFailure = { error };
      });
    }
    await sinkSide;
    if (sinkFailure) throw sinkFailure.error;
    return differing;
  }

  private async topRanges(plan: Plan): Promise<KeyRange[]> {
    const { sourceReader, limits, table } = this.deps;
    const estimate = await sourceReader.rowsEstimate(table);
    const parts = Math.min(4096, Math.ceil(estimate / limits.segmentRows));
    if (parts < 2) return [WHOLE_TABLE];
    // A sample of about 200 rows a part places the cuts well enough, whatever the table's size.
    const percent = Math.min(100, ((parts * 200) / Math.max(estimate, 1)) * 100);
    const points = await this.timed(() =>
      sourceReader.query(splitPointsSql(plan.source, 'TRUE', parts, sourceReader.sample(percent))),
    );
    return rangesBetween(WHOLE_TABLE, points.map(texts));
  }

  /** Smaller ranges for a differing one too large to read row by row; null when it is small enough. */
  private async cut(plan: Plan, range: KeyRange, rows: number): Promise<KeyRange[] | null> {
    const { limits, sourceReader, sinkReader } = this.deps;
    if (rows <= limits.downloadRows) return null;
    let points = await this.timed(() =>
      sourceReader.query(splitPointsSql(plan.source, rangeCondition(plan.source, range), limits.bisectParts)),
    );
    // Rows the source does not have (extra in the sink) are cut where the sink's keys lie.
    if (points.length === 0)
      points = await sinkReader.query(
        splitPointsSql(plan.sink, rangeCondition(plan.sink, range), limits.bisectParts),
      );
    return points.length === 0 ? null : rangesBetween(range, points.map(texts));
  }

  /** Reads a differing range row by row at both sides; the keys that differ become candidates. */
  private async readRows(plan: Plan, range: KeyRange): Promise<void> {
    const sourceRows = await this.hashes('source', plan.source, rangeCondition(plan.source, range));
    await this.sinkCaughtUp();
    const sinkRows = await this.hashes('sink', plan.sink, rangeCondition(plan.sink, range));
    for (const [id, hash] of sourceRows) if (sinkRows.get(id) !== hash) this.candidate(id);
    for (const id of sinkRows.keys()) if (!sourceRows.has(id)) this.candidate(id);
  }

  private candidate(id: string): void {
    if (this.candidates.size >= this.deps.limits.maxKeys) {
      this.truncated = true;
      return;
    }
    this.candidates.set(id, JSON.parse(id) as string[]);
  }

  /**
   * Reads each candidate again: the source, the sink once it holds the source's position, the source
   * again. A key the source left alone in between and the sink still disagrees on is a difference;
   * one the sink now agrees on is not; one the source changed is read again in the next round.
   */
  private async recheck(plan: Plan, name: string): Promise<TableFindings> {
    const { limits } = this.deps;
    const found = new Map<string, { key: string[]; kind: DifferenceKind }>();
    let pending = [...this.candidates.values()];
    for (let round = 1; round <= limits.recheckRounds && pending.length > 0; round++) {
      const moving: string[][] = [];
      for (let i = 0; i < pending.length; i += 500) {
        this.deps.signal.throwIfAborted();
        const keys = pending.slice(i, i + 500);
        const before = await this.hashes('source', plan.source, keysCondition(plan.source, keys));
        await this.sinkCaughtUp();
        const sink = await this.hashes('sink', plan.sink, keysCondition(plan.sink, keys));
        const after = await this.hashes('source', plan.source, keysCondition(plan.source, keys));
        for (const key of keys) {
          const id = keyId(key);
          const was = before.get(id);
          const is = after.get(id);
          const held = sink.get(id);
          if (was !== is) moving.push(key);
          else if (held !== was)
            found.set(id, {
              key,
              kind: was === undefined ? 'extra' : held === undefined ? 'missing' : 'changed',
            });
        }
      }
      pending = moving;
      if (pending.length > 0 && round < limits.recheckRounds)
        await sleep(100 * round, undefined, { signal: this.deps.signal });
    }
    if (pending.length > 0 && this.deps.atSourcePosition)
      pending = await this.atOnePosition(plan, pending, found);
    return this.findings(plan, name, found, pending);
  }

  /**
   * Compares rows the source changed at every re-read with the table's changes held, both sides at
   * one source position: exact, at the cost of holding the table's changes for about the pipeline's
   * lag. Returns the keys it could not compare (the table was being copied again meanwhile).
   */
  private async atOnePosition(
    plan: Plan,
    pending: string[][],
    found: Map<string, { key: string[]; kind: DifferenceKind }>,
  ): Promise<string[][]> {
    const { sourceReader, signal } = this.deps;
    const left: string[][] = [];
    for (let i = 0; i < pending.length; i += 500) {
      const keys = pending.slice(i, i + 500);
      let source = new Map<string, string>();
      let sink = source;
      try {
        await this.deps.atSourcePosition?.({
          readSource: async () => {
            const read = await this.timed(() =>
              sourceReader.inSnapshot(rowHashesSql(plan.source, keysCondition(plan.source, keys))),
            );
            source = this.byKey(plan.source, read.rows);
            return read;
          },
          waitDurable: (lsn) => this.deps.waitDurable(lsn, signal),
          readSink: async () => {
            sink = await this.hashes('sink', plan.sink, keysCondition(plan.sink, keys));
          },
        });
      } catch (error) {
        signal.throwIfAborted();
        if (!(error instanceof TableBusyError)) throw error;
        left.push(...keys);
        continue;
      }
      for (const key of keys) {
        const id = keyId(key);
        const was = source.get(id);
        const held = sink.get(id);
        if (held !== was)
          found.set(id, {
            key,
            kind: was === undefined ? 'extra' : held === undefined ? 'missing' : 'changed',
          });
      }
    }
    return left;
  }

  private findings(
    plan: Plan,
    name: string,
    found: Map<string, { key: string[]; kind: DifferenceKind }>,
    unsettled: string[][],
  ): TableFindings {
    const { table, limits } = this.deps;
    const keyObject = (key: string[]) =>
      Object.fromEntries(table.keyColumns.map((c, i) => [c, key[i] ?? '']));
    const differences = [...found.values()];
    const count = (kind: DifferenceKind) => differences.filter((d) => d.kind === kind).length;
    const samples = [
      ...differences.map((d) => ({ kind: d.kind, key: keyObject(d.key) })),
      ...unsettled.map((key) => ({ kind: 'unsettled' as const, key: keyObject(key) })),
    ].slice(0, limits.sampleKeys);
    const verdict: TableVerdict = {
      ...emptyVerdict(name),
      status: differences.length > 0 || this.truncated ? 'differs' : 'matched',
      columns_not_verified: plan.notVerified,
      source_rows: this.sourceRows,
      sink_rows: this.sinkRows,
      missing: count('missing'),
      extra: count('extra'),
      changed: count('changed'),
      unsettled: unsettled.length,
      sample_keys: samples,
      rows_read: this.rowsRead,
    };
    if (this.truncated)
      verdict.reason = `more than ${limits.maxKeys} rows differ: the counts are of the first ${limits.maxKeys} found, and a repair copies the whole table again`;
    else if (unsettled.length > 0 && differences.length === 0)
      verdict.reason = `${unsettled.length} row(s) changed at the source at every re-read and could not be compared; every other row matches`;
    return { verdict, keys: this.truncated ? [] : differences.map((d) => d.key), truncated: this.truncated };
  }

  /** Waits until the sink holds everything the source's reads so far saw. */
  private async sinkCaughtUp(): Promise<void> {
    const at = await this.deps.sourceReader.position();
    await this.deps.waitDurable(at, this.deps.signal);
  }

  private async checksum(side: 'source' | 'sink', table: ComparedTable, range: KeyRange): Promise<Checksum> {
    const sql = checksumSql(table, rangeCondition(table, range));
    const rows =
      side === 'source'
        ? await this.timed(() => this.deps.sourceReader.query(sql))
        : await this.deps.sinkReader.query(sql);
    const row = rows[0] ?? [];
    const result = { rows: Number(row[0] ?? 0), sum: row[1] ?? '0' };
    this.read(result.rows);
    return result;
  }

  private async hashes(
    side: 'source' | 'sink',
    table: ComparedTable,
    where: string,
  ): Promise<Map<string, string>> {
    const sql = rowHashesSql(table, where);
    const rows =
      side === 'source'
        ? await this.timed(() => this.deps.sourceReader.query(sql))
        : await this.deps.sinkReader.query(sql);
    return this.byKey(table, rows);
  }

  /** Each row's hash by its key (keyId of the key's values): a string a row, not an object. */
  private byKey(table: ComparedTable, rows: (string | null)[][]): Map<string, string> {
    this.read(rows.length);
    const width = table.keys.length;
    const byKey = new Map<string, string>();
    for (const row of rows) byKey.set(keyId(texts(row.slice(0, width))), row[width] ?? '');
    return byKey;
  }

  private read(rows: number): void {
    this.rowsRead += rows;
    this.deps.onRowsRead(rows);
  }

  /** Runs a source read, then rests so that reads take at most `sourceShare` of the time. */
  private async timed<T>(read: () => Promise<T>): Promise<T> {
    const started = performance.now();
    const result = await read();
    const share = this.deps.limits.sourceShare;
    if (share < 1) {
      const rest = (performance.now() - started) * ((1 - share) / share);
      await sleep(rest, undefined, { signal: this.deps.signal });
    }
    return result;
  }
}

interface Checksum {
  rows: number;
  sum: string;
}

const texts = (row: (string | null)[]): string[] => row.map((v) => v ?? '');
