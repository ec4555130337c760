import { median, rate, secs, table } from './report-format.js';
import type { SnapshotResults, SnapshotRun, SnapshotSystem } from './snapshot.js';

const MiB = 2 ** 20;

/** Median seconds of one system over its runs, with the rates they give. */
interface SystemMedian {
  system: SnapshotSystem;
  seconds: number;
  /** Fastest and slowest copy. */
  minSeconds: number;
  maxSeconds: number;
  rowsPerSecond: number;
  mibPerSecond: number;
  /** Median CPU seconds of every process involved. */
  cpuSeconds: number;
  /** Highest maxRSS after any of its runs (ours only), MiB. */
  maxRssMiB?: number;
}

function medians(s: SnapshotResults): SystemMedian[] {
  return s.systems.flatMap((system) => {
    const runs = s.results.filter((r) => r.system === system);
    if (runs.length === 0) return [];
    const seconds = median(runs.map((r) => r.seconds));
    const rss = runs.flatMap((r) => (r.ours ? [r.ours.maxRssAfterMiB] : []));
    return [
      {
        system,
        seconds,
        minSeconds: Math.min(...runs.map((r) => r.seconds)),
        maxSeconds: Math.max(...runs.map((r) => r.seconds)),
        rowsPerSecond: s.source.rows / seconds,
        mibPerSecond: s.source.tableBytes / MiB / seconds,
        cpuSeconds: median(runs.map((r) => r.cpu.self + r.cpu.children + r.cpu.source + r.cpu.sink)),
        ...(rss.length > 0 ? { maxRssMiB: Math.max(...rss) } : {}),
      },
    ];
  });
}

const ratio = (a: SystemMedian | undefined, b: SystemMedian | undefined) =>
  a && b ? (a.rowsPerSecond / b.rowsPerSecond).toFixed(2) : 'n/a';

/** One row per system: median time, rates, and its speed relative to the pipe and to native. */
export function snapshotSummaryTable(s: SnapshotResults): string {
  const all = medians(s);
  const pipe = all.find((m) => m.system.kind === 'pipe');
  const native = all.find((m) => m.system.kind === 'native');
  return table(
    [
      'system',
      'median s',
      's min / max',
      'rows/s',
      'rows/s min / max',
      'MiB/s',
      'vs COPY pipe',
      'vs native',
      'CPU s',
      'maxRSS MiB after',
    ],
    all.map((m) => [
      m.system.label,
      secs(m.seconds),
      `${secs(m.minSeconds)} / ${secs(m.maxSeconds)}`,
      rate(m.rowsPerSecond),
      `${rate(s.source.rows / m.maxSeconds)} / ${rate(s.source.rows / m.minSeconds)}`,
      m.mibPerSecond.toFixed(1),
      ratio(m, pipe),
      ratio(m, native),
      m.cpuSeconds.toFixed(1),
      m.maxRssMiB === undefined ? '' : m.maxRssMiB.toFixed(0),
    ]),
  );
}

/** The snapshot's targets (1.3× the COPY pipe, faster than the subscription), judged on the median of ours with default options. */
export function snapshotTargets(s: SnapshotResults): string[] {
  const all = medians(s);
  const ours = all.find(
    (m) => m.system.kind === 'ours' && m.system.parallelism === undefined && !m.system.createsTarget,
  );
  const pipe = all.find((m) => m.system.kind === 'pipe');
  const native = all.find((m) => m.system.kind === 'native');
  if (!ours || !pipe || !native) return ['targets not judged: a system is missing from the results'];
  const vsPipe = ours.rowsPerSecond / pipe.rowsPerSecond;
  const vsNative = ours.rowsPerSecond / native.rowsPerSecond;
  const others = all
    .filter((m) => m.system.kind === 'ours' && m !== ours)
    .map(
      (m) =>
        `${m.system.label}: ${(m.rowsPerSecond / pipe.rowsPerSecond).toFixed(2)} of the pipe, ` +
        `${(m.rowsPerSecond / native.rowsPerSecond).toFixed(2)} of native.`,
    );
  return [
    `Ours at least 1.3× the COPY pipe: **${vsPipe >= 1.3 ? 'met' : 'not met'}** (${vsPipe.toFixed(2)}).`,
    `Ours faster than the subscription: **${vsNative > 1 ? 'met' : 'not met'}** (${vsNative.toFixed(2)}).`,
    ...others.map((o) => `For comparison, ${o}`),
  ];
}

/** Every copy in the order it ran. */
export function snapshotDetailTable(s: SnapshotResults): string {
  return table(
    [
      'run',
      'system',
      's',
      'rows/s',
      'MiB/s',
      'load before',
      'partitions',
      'CPU s: this process / psql / source PG / sink PG',
      'sink index MiB',
      'maxRSS MiB before → after',
      'RSS MiB peak seen',
    ],
    s.results.map((r: SnapshotRun) => [
      String(r.run),
      r.system.label,
      secs(r.seconds),
      rate(s.source.rows / r.seconds),
      (s.source.tableBytes / MiB / r.seconds).toFixed(1),
      r.load.toFixed(2),
      r.ours ? String(r.ours.partitions) : '',
      [r.cpu.self, r.cpu.children, r.cpu.source, r.cpu.sink].map((c) => c.toFixed(1)).join(' / '),
      (r.sinkIndexBytes / MiB).toFixed(0),
      r.ours ? `${r.ours.maxRssBeforeMiB.toFixed(0)} → ${r.ours.maxRssAfterMiB.toFixed(0)}` : '',
      r.ours ? r.ours.sampledRssPeakMiB.toFixed(0) : '',
    ]),
  );
}

export function snapshotMarkdown(s: SnapshotResults, runs: number, cores: number): string {
  const src = s.source;
  const first = s.results.find((r) => r.ours && r.system.parallelism === undefined)?.ours;
  const oursOptions = first
    ? `\`parallelism\` ${first.parallelism}, \`partition_rows\` ${first.partitionRows.toLocaleString('en-US')}`
    : 'n/a';
  const explicit =
    s.systems
      .flatMap((system) =>
        system.parallelism === undefined ? [] : [`\`"snapshot": {"parallelism": ${system.parallelism}}\``],
      )
      .join(' and ') || 'no other parallelism';
  const mib = (bytes: number) => (bytes / MiB).toFixed(0);
  const copies = `${runs} time${runs === 1 ? '' : 's'}`;
  return `## Snapshot

The initial copy of one table: our pipeline's snapshot against a COPY pipe and against the initial
copy of PostgreSQL's own subscription.

### Method

The source table is \`public.bench_snapshot (id bigint primary key, a text, b integer, c timestamptz,
d numeric(12,2))\` with ${src.rows.toLocaleString('en-US')} rows (\`a\` 32 characters, \`c\` with microseconds,
\`d\` with two decimals), written once in a database of its own on the source cluster, then
\`VACUUM (ANALYZE)\` and \`CHECKPOINT\`: ${mib(src.tableBytes)} MiB by \`pg_total_relation_size\` (of which
${mib(src.indexBytes)} MiB primary key index), ${mib(src.copyBytes)} MiB as text-format \`COPY\`. **MiB/s is
\`pg_total_relation_size\` of the source table (MiB = 2^20 bytes) divided by the seconds**; the
COPY text carried is ${(src.copyBytes / src.tableBytes).toFixed(2)} times that size. Every copy goes into an empty
table of the same definition (primary key included; but see "ours, creating its target") in a sink
database created for it and dropped after it; before each copy both clusters run \`CHECKPOINT\`.

- **ours**: connections and a pipeline made through the REST API with default sink properties,
  timed from \`PUT /v1/pipelines/{name}/state {"state":"start"}\` until
  \`GET /v1/pipelines/{name}/progress\` shows the phase \`streaming\` (polled every 100 ms). That
  includes creating the slot with its exported snapshot, planning the key-range partitions and
  copying them. The sink's columns have the source's types, so each partition goes as binary
  \`COPY\` (\`TO STDOUT (FORMAT binary)\` into \`FROM STDIN (FORMAT binary)\`), where the pipe
  carries text; the source's CopyData messages go to the sink as they are. Once with the default
  snapshot options (${oursOptions}; the default parallelism follows the machine's cores, from 2
  to 4, and this machine has ${cores}), then with ${explicit}. The pipeline is deleted after each
  copy (slot and publication dropped).
- **ours, creating its target**: the default options again, but into an empty sink database: the
  pipeline creates the table itself (\`create_tables\`, on by default) and builds its primary key
  once every partition is in (one sorted build) instead of row by row. Not what the pipe and
  native are given (their table has its key), so it is shown beside them, not judged against them.
- **COPY pipe**: ${s.pipeTool}:
  \`psql SRC -c 'COPY (SELECT * FROM public.bench_snapshot) TO STDOUT' | psql DST -c 'COPY public.bench_snapshot FROM STDIN'\`,
  timed from spawning the pipe until both ends have exited.
- **native**: \`CREATE PUBLICATION\` for the table on the source, then
  \`CREATE SUBSCRIPTION ... WITH (copy_data = true)\` (otherwise defaults) on the sink, timed from
  \`CREATE SUBSCRIPTION\` until \`pg_subscription_rel\` shows \`srsubstate\` \`s\` or \`r\` for the table
  (polled every 100 ms) with \`count(*)\` on the sink then equal to the source's (the copy commits
  with the state \`f\`; the count is taken once the state is seen and its own time is not counted
  unless it has to be repeated); then the subscription and the publication are dropped.

After every copy, a digest of all rows in key order (\`md5(string_agg(t::text, '|' ORDER BY id))\`)
on the sink must equal the source's, or the benchmark fails. Each system copies the table
${copies}; the order of the systems is reversed from one run to the next; only one copy runs at a time.

Memory: our service runs inside the benchmark process, so its memory is the process's. This
section runs before the backlog drains, so \`process.resourceUsage().maxRSS\` read before and after
each of our copies shows the peak they reached (it only grows; the first value is the process
before any snapshot); RSS is also sampled at every poll. CPU: seconds of user and system time over
each copy (sampled 0.5 s after it, its untimed set-up and teardown included) of this process, of
its exited children (the two \`psql\` of the pipe), and of every process of each PostgreSQL cluster
(backends, replication workers, walsenders). The sink cluster also holds our metadata store, so
ours' sink figure includes the service's own bookkeeping and the progress polls. "load before"
is the 1-minute load average before each copy, which includes the benchmark's own previous copies.
Ours and native are seen done by a poll (up to 100 ms late, 50 ms on average); the pipe's end is
the exit of its processes.

### Results

${snapshotSummaryTable(s)}

Median of ${runs} cop${runs === 1 ? 'y' : 'ies'} each, with the fastest and the slowest; "vs" columns are ratios of the
median rows/s (> 1: that row's system was faster); CPU s is the median sum over all processes.

${snapshotTargets(s)
  .map((t) => `- ${t}`)
  .join('\n')}

### Every copy

${snapshotDetailTable(s)}

The source's primary key index is ${mib(src.indexBytes)} MiB; "sink index MiB" is the same index on the sink after the copy.
`;
}
