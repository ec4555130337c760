import { table } from './report-format.js';

/** The layouts of the source-cost benchmark, in the order they run. */
export const LAYOUT_KEYS = ['own', 'shared', 'one'] as const;
export type LayoutKey = (typeof LAYOUT_KEYS)[number];

/** The service's sessions on the source: walsenders, ordinary sessions, and both at once. */
export interface Sessions {
  walsenders: number;
  ordinary: number;
  total: number;
  /** By application_name (walsenders marked) at a moment the most were seen at once. */
  names?: Record<string, number>;
}

/** The pipeline that joins the shared stream halfway through the load. */
export interface Join {
  /** From its creation to its progress phase `streaming`; undefined when it never got there. */
  toStreamingSeconds?: number;
  /** Rows of its table in the sink when it was seen streaming. */
  sinkRowsAtStreaming?: number;
  /** Rows of its table in the sink once the others caught up. */
  sinkRows: number;
  error?: string;
}

export interface Outcome {
  key: LayoutKey;
  layout: string;
  pipelines: number;
  /** From the first pipeline's start to every pipeline streaming. */
  startupSeconds: number;
  /** The most sessions seen at once while the pipelines started. */
  startup: Sessions;
  /**
   * The most sessions seen at once in the load's first half, and from then to the sinks caught up
   * (and the joining pipeline streaming).
   */
  during: [Sessions, Sessions];
  /** The walsenders' CPU from the load's start to every sink caught up. */
  walsenderCpuSeconds: number;
  /** The part of it up to halfway through the load. */
  walsenderCpuFirstHalf: number;
  offered: number;
  insertMeanMs: number;
  insertP99Ms: number;
  rows: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The highest lag p99 of one table. */
  worstTableP99Ms: number;
  firstHalfP99Ms: number;
  secondHalfP99Ms: number;
  firstHalfRows: number;
  /** The lag p99 of the rows of each second of the measured load, ms. */
  p99BySecond: number[];
  /** The second of the measured load in which it was split in halves. */
  splitSecond: number;
  /** From the last insert to its row (the last row of all) visible in the sink. */
  caughtUpSeconds: number;
  join?: Join;
}

export interface Settings {
  tables: number;
  rate: number;
  seconds: number;
  clients: number;
  warmupSeconds: number;
  joinRows: number;
  /** The service's shared_stream_copy_rate, rows/s (0: the copy unpaced). */
  copyRate: number;
}

export const CPU_RATIO_TARGET = 1.5;
export const SESSIONS_TARGET = 4;
export const CAUGHT_UP_TARGET_SECONDS = 1;
export const JOIN_DRIFT_TARGET_MS = 10;

/** 51 → 51st, 6 → 6th. */
const ordinal = (n: number) => {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' }[n % 10] ?? 'th');
  return `${n}${suffix}`;
};
const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');
const sessions = (s: Sessions) => `${s.walsenders} + ${s.ordinary} = ${s.total}`;
const most = (a: Sessions, b: Sessions): Sessions => ({
  walsenders: Math.max(a.walsenders, b.walsenders),
  ordinary: Math.max(a.ordinary, b.ordinary),
  total: Math.max(a.total, b.total),
});
/** Who the sessions were, by application_name: `: 2 replicator, 1 replicator-stream (walsender)`. */
const who = (x: Sessions) =>
  x.names && Object.keys(x.names).length
    ? `: ${Object.entries(x.names)
        .map(([name, n]) => `${n} ${name}`)
        .join(', ')}`
    : '';
const met = (ok: boolean) => (ok ? '**met**' : '**not met**');
const drift = (o: Outcome) => o.secondHalfP99Ms - o.firstHalfP99Ms;

export function sourceCostTable(outcomes: Outcome[], s: Settings): string {
  return table(
    [
      'layout',
      'pipelines',
      'all streaming after s',
      'sessions at most, start-up: walsenders + ordinary = total',
      'sessions at most, load 1st / 2nd half',
      `walsender CPU s (1st half + rest)`,
      'inserts/s offered',
      'insert latency mean / p99 ms',
      'lag p50 / p99 ms',
      "worst table's lag p99 ms",
      'lag p99, 1st / 2nd half ms',
      'caught up after the load s',
    ],
    outcomes.map((o) => [
      o.layout,
      String(o.pipelines),
      o.startupSeconds.toFixed(1),
      sessions(o.startup),
      `${sessions(o.during[0])} / ${sessions(o.during[1])}`,
      `${o.walsenderCpuSeconds.toFixed(2)} (${o.walsenderCpuFirstHalf.toFixed(2)} + ${(o.walsenderCpuSeconds - o.walsenderCpuFirstHalf).toFixed(2)})`,
      o.offered.toFixed(0),
      `${o.insertMeanMs.toFixed(2)} / ${o.insertP99Ms.toFixed(2)}`,
      `${ms(o.p50Ms)} / ${ms(o.p99Ms)}`,
      ms(o.worstTableP99Ms),
      `${ms(o.firstHalfP99Ms)} / ${ms(o.secondHalfP99Ms)}${o.key === 'shared' ? ` (${ordinal(s.tables + 1)} pipeline joins)` : ''}`,
      o.caughtUpSeconds.toFixed(2),
    ]),
  );
}

export function sourceCostVerdicts(outcomes: Outcome[], s: Settings): string[] {
  const of = (key: LayoutKey) => outcomes.find((o) => o.key === key);
  const shared = of('shared');
  const one = of('one');
  const own = of('own');
  const lines: string[] = [];
  if (shared && one) {
    const ratio = shared.walsenderCpuSeconds / one.walsenderCpuSeconds;
    const firstHalf = shared.walsenderCpuFirstHalf / one.walsenderCpuFirstHalf;
    lines.push(
      `Walsender CPU of ${s.tables} pipelines on one shared stream within ${CPU_RATIO_TARGET}× of one pipeline of the ${s.tables} tables: ` +
        `${met(ratio <= CPU_RATIO_TARGET)}, ${shared.walsenderCpuSeconds.toFixed(2)} / ${one.walsenderCpuSeconds.toFixed(2)} s = ${ratio.toFixed(2)}× ` +
        `(first half of the load, before the ${ordinal(s.tables + 1)} pipeline joins: ${firstHalf.toFixed(2)}×)` +
        (own ? `; with own slots: ${(own.walsenderCpuSeconds / one.walsenderCpuSeconds).toFixed(2)}×.` : '.'),
    );
  } else {
    lines.push('Walsender CPU ratio: not measured (it needs the shared and the one-pipeline layouts).');
  }
  if (shared) {
    const load = most(...shared.during);
    lines.push(
      `At most ${SESSIONS_TARGET} sessions of the service on the source with ${s.tables} pipelines on one shared stream: ` +
        `${met(load.total <= SESSIONS_TARGET)}, at most ${load.total} at once during the load ` +
        `(${load.walsenders} walsender${load.walsenders === 1 ? '' : 's'}, ${load.ordinary} ordinary at most; ` +
        `${shared.during[0].total} in its first half, ${shared.during[1].total} in the second, while the ${ordinal(s.tables + 1)} pipeline joins${who(shared.during[1])}); ` +
        `${shared.startup.total} while the pipelines started${who(shared.startup)}` +
        (own ? `; with own slots: ${most(...own.during).total} during the load.` : '.'),
    );
  }
  const late = outcomes.filter((o) => o.caughtUpSeconds > CAUGHT_UP_TARGET_SECONDS);
  lines.push(
    `Every layout caught up within ${CAUGHT_UP_TARGET_SECONDS} s of the load's end: ${met(late.length === 0)} ` +
      `(${outcomes.map((o) => `${o.layout}: ${o.caughtUpSeconds.toFixed(2)} s`).join('; ')}).`,
  );
  if (shared) {
    const j = shared.join;
    const d = drift(shared);
    const others = outcomes.filter((o) => o.key !== 'shared');
    const noise = Math.max(0, ...others.map((o) => Math.abs(drift(o))));
    lines.push(
      `The ${ordinal(s.tables + 1)} pipeline joining the shared stream halfway through the load slows the others' lag p99 by at most ${JOIN_DRIFT_TARGET_MS} ms: ` +
        `${met(d <= JOIN_DRIFT_TARGET_MS && j?.toStreamingSeconds !== undefined)}, ${ms(shared.firstHalfP99Ms)} → ${ms(shared.secondHalfP99Ms)} ms (${d >= 0 ? '+' : ''}${ms(d)} ms); ` +
        (j?.toStreamingSeconds !== undefined
          ? `it streamed ${j.toStreamingSeconds.toFixed(2)} s after it was made and started, its ${s.joinRows.toLocaleString('en-US')} rows copied ${s.copyRate > 0 ? `at ${s.copyRate.toLocaleString('en-US')} rows/s at most (\`shared_stream_copy_rate\`)` : 'unpaced (`shared_stream_copy_rate` 0)'} (${(j.sinkRowsAtStreaming ?? 0).toLocaleString('en-US')} in the sink then, ${j.sinkRows.toLocaleString('en-US')} at the end)`
          : `it did not stream: ${j?.error ?? 'not started'}`) +
        (others.length
          ? `. Nothing joins in the other layouts: ${others.map((o) => `${o.layout} ${ms(o.firstHalfP99Ms)} → ${ms(o.secondHalfP99Ms)} ms (${drift(o) >= 0 ? '+' : ''}${ms(drift(o))})`).join('; ')}` +
            (noise > JOIN_DRIFT_TARGET_MS
              ? `: with nothing joining, the lag p99 moved by up to ${ms(noise)} ms from one half to the other in this run.`
              : '.')
          : '.'),
    );
    lines.push(
      `Lag p99 of the shared layout's rows by second of the load, ms (the ${ordinal(s.tables + 1)} pipeline made and started in second ${shared.splitSecond}): ` +
        shared.p99BySecond
          .map((p, i) => (i === shared.splitSecond ? `**${p.toFixed(0)}**` : p.toFixed(0)))
          .join(', ') +
        '.',
    );
  }
  return lines;
}

export function sourceCostMarkdown(
  outcomes: Outcome[],
  s: Settings,
  run: { date: Date; postgres: string; load: number },
): string {
  return [
    '## Source cost',
    '',
    'What a source pays for the pipelines that read it, three layouts of the same tables under the',
    `same load, one after the other: ${s.tables} one-table pipelines each with a replication slot of its own`,
    `(\`"slot": "own"\`), ${s.tables} one-table pipelines reading their source connection's one shared stream`,
    `(\`"slot": "shared"\`, the default), and one pipeline of the ${s.tables} tables. The source runs at`,
    "PostgreSQL's default `synchronous_commit = on` (fsync off, as every benchmark cluster here); our",
    'service runs in the benchmark process, the postgres sink with default properties.',
    '',
    `- Date: ${run.date.toISOString()}; ${run.postgres} (source and sink); Node.js ${process.version}`,
    `- 1-minute load average before the run: ${run.load.toFixed(2)}; the machine's other work (tests) was not stopped`,
    '',
    '```sh',
    `SOURCE_COST_TABLES=${s.tables} SOURCE_COST_RATE=${s.rate} SOURCE_COST_SECONDS=${s.seconds} SOURCE_COST_CLIENTS=${s.clients} SOURCE_COST_WARMUP_SECONDS=${s.warmupSeconds} npm run bench:source-cost`,
    '```',
    '',
    '### Method',
    '',
    `Each layout: the sink tables are made beforehand with the source's columns plus \`seen_at timestamptz`,
    'DEFAULT clock_timestamp()` (the service takes a target table that has more columns than the source),',
    'the pipelines are made and started through the REST API, and once every one streams, the load: single-row',
    `inserts, ${s.rate.toLocaleString('en-US')} a second, to the tables in turn, from ${s.clients} sessions (a process of their own), each its`,
    `own transaction; ${s.warmupSeconds} s of it as a warm-up that is not measured (every pipeline past its first rows), then`,
    `${s.seconds} s measured. Each row's \`created_at\` is the source's \`clock_timestamp()\` at its insert; the sink`,
    "records its transactions' commit times (`track_commit_timestamp = on`), and a row is **visible** at the",
    "later of its sink transaction's commit and its `seen_at` (both clusters run on one machine: one clock).",
    '',
    "- **all streaming after**: from the first pipeline's start to every pipeline's progress phase `streaming`",
    '  (the tables are empty then: nothing to copy).',
    "- **sessions at most**: the service's sessions on the source (`pg_stat_activity`, `application_name`",
    '  starting with `replicator`), read every 500 ms: the most seen at once, walsenders (`backend_type =',
    '  walsender`) + ordinary sessions = both together; at start-up (the pipelines starting and the warm-up),',
    "  in the measured load's first half, and from then to every row visible (and the joining pipeline",
    '  streaming, see below). A session opened and closed between two readings is not seen.',
    "- **walsender CPU**: user + system CPU of the walsenders (`/proc/<pid>/stat`) from the measured load's",
    '  start to every row visible, split at halfway through the load; a walsender that ends counts up to the',
    '  last reading that saw it.',
    "- **inserts/s offered**: the rate the load's sessions reached; **insert latency**: their round trip of an",
    '  insert and its commit, which waits for the WAL flush.',
    '- **lag**: visible time minus `created_at` of every row of the measured load, p50 and p99; **worst',
    "  table's**: the highest p99 of one table (of one pipeline in the first two layouts); **1st / 2nd half**:",
    '  the p99 of the rows inserted before and after halfway through the load.',
    '- **caught up after the load**: from the last insert to the last row visible; a layout keeps up when it',
    `  is at most ${CAUGHT_UP_TARGET_SECONDS} s.`,
    '',
    `In the shared layout a table \`t_join\` of ${s.joinRows.toLocaleString('en-US')} rows, made before the run and not written by the`,
    `load, gets a ${ordinal(s.tables + 1)} pipeline (\`"slot": "shared"\`), made and started through the API halfway through`,
    'the load without stopping it; the halves are split at that moment, so the 2nd half shows what its',
    `joining (its copy, paced at ${s.copyRate > 0 ? `${s.copyRate.toLocaleString('en-US')} rows/s` : 'no limit'} by \`shared_stream_copy_rate\`, and its table added to the stream) costs the others' lag. The other layouts are split at`,
    'the same time of their load with nothing joining: their drift from one half to the other is the natural',
    "one (on this machine, mostly its other work's).",
    '',
    '### Results',
    '',
    sourceCostTable(outcomes, s),
    '',
    ...sourceCostVerdicts(outcomes, s).map((v) => `- ${v}`),
  ].join('\n');
}
