import type { DrainSource, RunRecord } from './drain.js';
import { nativeName } from './native-subscription.js';
import { median, rate, secs, table } from './report-format.js';
import { CONCURRENT_CLIENTS, eventsOf } from './workloads.js';

/** Minimum, median and maximum of a figure over the runs. */
export interface Spread {
  min: number;
  median: number;
  max: number;
}

export const spreadOf = (values: number[]): Spread => ({
  min: Math.min(...values),
  median: median(values),
  max: Math.max(...values),
});

const fmt = (s: Spread, f: (n: number) => string) => `${f(s.min)} / ${f(s.median)} / ${f(s.max)}`;

/** One system on one workload from one source: its runs and their spreads. */
export interface DrainFigures {
  sourceVersion: number;
  workload: string;
  system: string;
  runs: RunRecord[];
  seconds: Spread;
  eventsPerSecond: Spread;
  firstRowSeconds: Spread;
  drainSeconds: Spread;
}

export function drainFigures(results: RunRecord[]): DrainFigures[] {
  const keys = [
    ...new Set(results.map((r) => `${r.sourceVersion}\u0000${r.workload.label}\u0000${r.system}`)),
  ];
  return keys.map((key) => {
    const [version, workload, system] = key.split('\u0000') as [string, string, string];
    const runs = results.filter(
      (r) => r.sourceVersion === Number(version) && r.workload.label === workload && r.system === system,
    );
    return {
      sourceVersion: Number(version),
      workload,
      system,
      runs,
      seconds: spreadOf(runs.map((r) => r.seconds)),
      eventsPerSecond: spreadOf(runs.map((r) => r.eventsPerSecond)),
      firstRowSeconds: spreadOf(runs.map((r) => r.firstRowSeconds)),
      drainSeconds: spreadOf(runs.map((r) => r.drainSeconds)),
    };
  });
}

/** Ours against `other` on the same source and workload: median events/s over median events/s. */
function ratioOf(all: DrainFigures[], f: DrainFigures): number | undefined {
  const ours = all.find(
    (o) => o.system === 'ours' && o.sourceVersion === f.sourceVersion && o.workload === f.workload,
  );
  if (!ours || f.system === 'ours') return undefined;
  // Same events on both sides: the ratio of the rates is that of the median times, inverted.
  return f.seconds.median / ours.seconds.median;
}

/** One row per source, workload and system: every figure's minimum / median / maximum. */
export function drainSummaryTable(results: RunRecord[]): string {
  const all = drainFigures(results);
  return table(
    [
      'source',
      'workload',
      'system',
      'total s (min / median / max)',
      'events/s (min / median / max)',
      'start-up s (min / median / max)',
      'first to last row s (min / median / max)',
      'ours/this',
    ],
    all.map((f) => {
      const ratio = ratioOf(all, f);
      return [
        `PG ${f.sourceVersion}`,
        f.workload,
        f.system,
        fmt(f.seconds, secs),
        fmt(f.eventsPerSecond, rate),
        fmt(f.firstRowSeconds, secs),
        fmt(f.drainSeconds, secs),
        ratio === undefined ? '' : ratio.toFixed(2),
      ];
    }),
  );
}

/** Every run with its parts: writing the backlog, start-up, first to last row, total. */
export function drainDetailTable(results: RunRecord[]): string {
  return table(
    [
      'run',
      'source',
      'workload',
      'system',
      'backlog write s',
      'start-up s',
      'first to last row s',
      'total s',
      'events/s',
      'WAL to decode MiB (before backlog)',
      'CPU s: this process / source PG / sink PG',
      'peak RSS MiB so far',
    ],
    results.map((r) => [
      String(r.run),
      `PG ${r.sourceVersion}`,
      r.workload.label,
      r.system,
      secs(r.writeSeconds),
      secs(r.firstRowSeconds),
      secs(r.drainSeconds),
      secs(r.seconds),
      rate(r.eventsPerSecond),
      `${r.walMiB.toFixed(1)} (${r.walBeforeMiB.toFixed(1)})`,
      [r.cpu.self, r.cpu.source, r.cpu.sink].map((c) => c.toFixed(2)).join(' / '),
      r.peakRssMiB.toFixed(0),
    ]),
  );
}

const verdict = (ratio: number, target: number) =>
  `**${ratio >= target ? 'met' : 'not met'}** (${ratio.toFixed(2)})`;

/**
 * The drain targets per source version, on the median total times: 100,000 single-row
 * transactions at least 2.0 times the subscription, the pgbench-like mix at least as fast as it,
 * and the big transaction as fast as the subscription with `streaming = parallel` (a PostgreSQL
 * 16+ source). Against `streaming = off` the big transaction's ratio is given without a target.
 */
export function drainTargets(results: RunRecord[]): string[] {
  const all = drainFigures(results);
  const lines: string[] = [];
  for (const version of [...new Set(all.map((f) => f.sourceVersion))]) {
    const of = (kind: string, system: string) =>
      all.find(
        (f) => f.sourceVersion === version && f.system === system && f.runs[0]?.workload.kind === kind,
      );
    const ratio = (kind: string, system: string) => {
      const theirs = of(kind, system);
      return theirs ? ratioOf(all, theirs) : undefined;
    };
    // Without the start-up: the median first-to-last-row times (not for the big transaction, whose
    // rows the subscription shows all at once).
    const steady = (kind: string, system: string) => {
      const theirs = of(kind, system);
      const ours = of(kind, 'ours');
      if (!theirs || !ours || kind === 'big' || ours.drainSeconds.median <= 0) return '';
      return `; first to last row alone: ${(theirs.drainSeconds.median / ours.drainSeconds.median).toFixed(2)}`;
    };
    const line = (kind: string, system: string, target: number, text: string) => {
      const r = ratio(kind, system);
      const w = of(kind, system)?.workload ?? kind;
      if (r !== undefined)
        lines.push(`PG ${version} source, ${w}: ${text}: ${verdict(r, target)}${steady(kind, system)}.`);
    };
    line('single', nativeName('off'), 2, 'ours at least 2.0× the subscription');
    line('concurrent', nativeName('off'), 1, 'ours at least 1.0× the subscription');
    if (of('big', nativeName('parallel'))) {
      line(
        'big',
        nativeName('parallel'),
        1,
        'ours at least 1.0× the subscription with `streaming = parallel`',
      );
    } else if (of('big', nativeName('off'))) {
      lines.push(
        `PG ${version} source, ${of('big', nativeName('off'))?.workload}: against \`streaming = parallel\`: n/a ` +
          `(parallel apply needs a PostgreSQL 16+ publisher).`,
      );
    }
    const bigOff = ratio('big', nativeName('off'));
    if (bigOff !== undefined)
      lines.push(
        `PG ${version} source, ${of('big', nativeName('off'))?.workload}: against \`streaming = off\`, no target; ours/native ${bigOff.toFixed(2)}.`,
      );
  }
  return lines;
}

/** `PostgreSQL 15.20 (debian-15)`: the version without its packager's note, and where the binaries come from. */
export const sourceName = (s: Pick<DrainSource, 'version' | 'label'>) =>
  `PostgreSQL ${s.version.split(' ')[0]} (${s.label})`;

export function drainMarkdown(
  results: RunRecord[],
  runs: number,
  sources: DrainSource[],
  sink: string,
): string {
  const versions = sources.map(sourceName).join(' and ');
  const sample = results.find((r) => r.workload.kind === 'concurrent')?.workload;
  return `## Backlog drain

Our pipeline against PostgreSQL's own logical replication (publication + subscription), from a
source of each PostgreSQL version at hand (${versions}) into the one sink cluster
(PostgreSQL ${sink}).

### Method

Each system gets a source database and a sink database of its own, each with the table
\`bench (id bigint primary key, v text, n int)\`. Ours is a pipeline made through the REST API with
default sink properties; native is \`CREATE PUBLICATION\` on the source and
\`CREATE SUBSCRIPTION ... WITH (copy_data = true, streaming = off)\` with otherwise default options
on the sink. Both finish their initial copy of the empty table first. Each source version has its
own pair of systems; the sink stays on PostgreSQL ${sink.split(' ')[0]}.

Each drain: with the system replicating, the table is truncated on the source (the truncate
replicates, emptying the sink), the workload's base rows if it has any are written in the same
transaction, and the slot is left to confirm that, twice, each time after a running-xacts record
(\`pg_log_standby_snapshot()\` on PostgreSQL 16+, a \`CHECKPOINT\` before that), so that the slot's
\`restart_lsn\` moves up too and the resume reads (almost) no WAL but the backlog (the WAL column of
every run shows it); replication is paused (ours: \`PUT /v1/pipelines/{name}/state {"state":"pause"}\`;
native: \`ALTER SUBSCRIPTION ... DISABLE\`) until its walsender is gone; the backlog is written on
the source, followed by one synchronous commit so that all of it is flushed WAL; then replication
is resumed (\`resume\` / \`ENABLE\`) and the sink is polled every 50 ms with \`count(*)\` of the
backlog's rows. The CPU of each side over the drain (this process, where our service runs, and
every process of each cluster: the walsender, the apply workers, our sink's backends) is read from
\`/proc\` at the resume and when the sink holds every row. **Start-up** is the time from the resume until the first row of the backlog is
visible, **first to last row** the time from there until the sink holds every row of it, and
**total** the sum: the drain time. A digest of every row
(\`md5(string_agg(t::text, '|' ORDER BY id))\`) then checks the sink equals the source, and the
system is paused again. events/s = change events of the backlog (inserts, updates, deletes) /
total seconds. Only one system replicates at any time; which goes first rotates from one drain to
the next. Every drain runs ${runs} time${runs === 1 ? '' : 's'} (\`BENCH_RUNS\`); the tables give the minimum,
median and maximum of each figure, the ratios and targets use the median total times.

Both use the \`pgoutput\` plugin. Ours requests \`streaming 'on'\` (a transaction beyond
\`logical_decoding_work_mem\` arrives in pieces before its commit; it is written into a sink
transaction held open as it arrives, committed at its commit, and also spooled, for a replay
should it fall back). The subscription runs at its best settings for each workload: small transactions are never
streamed, so \`streaming\` makes no difference to them and stays \`off\`; the big transaction runs
twice, with \`streaming = off\` (the walsender spills it to disk on the source and sends it at
commit, the apply worker applies it then) and, with a PostgreSQL 16+ source, with
\`streaming = parallel\` (sent in pieces before its commit and applied as they come by a parallel
apply worker; set with \`ALTER SUBSCRIPTION ... SET (streaming = ...)\` while disabled, before each
drain). A PostgreSQL 15 publisher cannot stream to a parallel apply worker.

Workloads:

- single-row \`INSERT\` transactions, written by a \`DO\` block that commits after each row;
- concurrent clients, pgbench-like: ${sample ? sample.transactions.toLocaleString('en-US') : ''} transactions from ${CONCURRENT_CLIENTS} sessions at once, each transaction one round trip of several statements:
  \`${sample?.sql ?? ''}\`. The rows updated (concurrently, by every client) and deleted are base rows
  written before the backlog; each transaction inserts one row above them that nothing deletes,
  so the sink has all of those rows exactly when every transaction has been applied (the poll
  counts them); the choices come from a fixed seed, the same at every run${sample ? ` (${eventsOf(sample).toLocaleString('en-US')} change events)` : ''};
- one \`INSERT ... SELECT generate_series\` transaction. The subscription applies it in one
  transaction of its own, so all its rows become visible at once and its start-up holds nearly all
  of its drain; a pipeline that applies it in pieces shows its first rows earlier.

### Results

${drainSummaryTable(results)}

"ours/this" is ours' median events/s over that row's (> 1: ours drained faster).

${drainTargets(results)
  .map((t) => `- ${t}`)
  .join('\n')}

#### Every run

${drainDetailTable(results)}
`;
}
