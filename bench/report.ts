import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { sqlOn } from '../test/support/replication-fixture.js';
import type { DrainResult } from './backlog.js';
import { sectionOf } from './benchmarks-section.js';
import type { DecodeResults } from './decode.js';
import { decodeMarkdown } from './decode-report.js';
import { median, rate, secs, table } from './report-format.js';
import type { SnapshotResults } from './snapshot.js';
import { snapshotMarkdown } from './snapshot-report.js';

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  postgres: string;
  os: string;
  /** 1-minute load average before the runs: anything else running skews the figures. */
  load: number;
}

export async function machineInfo(adminUrl: string): Promise<MachineInfo> {
  const [row] = await sqlOn<{ server_version: string }>(adminUrl, 'SHOW server_version');
  let os = 'unknown';
  try {
    os = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? os;
  } catch {
    // Not every system has /etc/os-release; the rest of the report still stands.
  }
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: totalmem() / 1024 ** 3,
    node: process.version,
    postgres: row?.server_version ?? 'unknown',
    os,
    load: loadavg()[0] ?? 0,
  };
}

/** One drain with the repetition it belongs to (1-based). */
export type RunRecord = DrainResult & { run: number };

/** The commit measured, and whether the service's code differs from it (read-only git commands). */
export function codeVersion(): string {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8', stdio: 'pipe' }).trim();
  try {
    const commit = git('rev-parse', '--short', 'HEAD');
    const paths = ['src', 'machines', 'migrations'];
    let dirty = git('ls-files', '--others', '--exclude-standard', '--', ...paths) !== '';
    try {
      git('diff', '--quiet', 'HEAD', '--', ...paths);
    } catch {
      dirty = true;
    }
    return dirty ? `commit ${commit} with uncommitted changes to the service` : `commit ${commit}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

export interface Report {
  date: Date;
  command: string;
  code: string;
  scale: number;
  runs: number;
  machine: MachineInfo;
  results: RunRecord[];
  peakRssMiB: number;
  snapshot: SnapshotResults;
  /** 1-minute load average before the backlog drains (after the snapshot runs). */
  drainLoad: number;
  /** The decode section: our change stream against pg_recvlogical. */
  decode: DecodeResults;
}

/** The side-by-side table: one row per workload, the median drain of each system. */
export function summaryTable(results: RunRecord[]): string {
  const labels = [...new Set(results.map((r) => r.workload.label))];
  const rows = labels.map((label) => {
    const drain = (system: string) => {
      const runs = results.filter((r) => r.workload.label === label && r.system === system);
      if (runs.length === 0) return undefined;
      const seconds = median(runs.map((r) => r.seconds));
      return { seconds, rate: (runs[0] as RunRecord).workload.rows / seconds };
    };
    const ours = drain('ours');
    const native = drain('native');
    return [
      label,
      ours ? rate(ours.rate) : 'n/a',
      native ? rate(native.rate) : 'n/a',
      ours && native ? (ours.rate / native.rate).toFixed(2) : 'n/a',
      ours ? secs(ours.seconds) : 'n/a',
      native ? secs(native.seconds) : 'n/a',
    ];
  });
  return table(['workload', 'ours events/s', 'native events/s', 'ours/native', 'ours s', 'native s'], rows);
}

/** Every run with its parts: writing the backlog, time to the first row, whole drain. */
export function detailTable(results: RunRecord[]): string {
  return table(
    [
      'run',
      'workload',
      'system',
      'backlog write s',
      'first row after s',
      'drain s',
      'events/s',
      'WAL to decode MiB (before backlog)',
      'peak RSS MiB so far',
    ],
    results.map((r) => [
      String(r.run),
      r.workload.label,
      r.system,
      secs(r.writeSeconds),
      secs(r.firstRowSeconds),
      secs(r.seconds),
      rate(r.eventsPerSecond),
      `${r.walMiB.toFixed(1)} (${r.walBeforeMiB.toFixed(1)})`,
      r.peakRssMiB.toFixed(0),
    ]),
  );
}

export function benchmarksMarkdown(report: Report): string {
  const m = report.machine;
  return `# Benchmarks

Our pipeline against PostgreSQL's own tools, on the same machine and the same two PostgreSQL
servers, in one run: the [initial snapshot](#snapshot) of a table (against a COPY pipe and against
a subscription's initial copy), then [backlog drain](#backlog-drain) (against logical replication),
then raw [decoding](#decoding) of a backlog (our change stream against \`pg_recvlogical\`).

- Date: ${report.date.toISOString()}
- Code: ${report.code}
- Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB.toFixed(1)} GiB memory, ${m.os}
- Node.js ${m.node}, PostgreSQL ${m.postgres} (the embedded binaries, source and sink alike)
- 1-minute load average before the runs: ${m.load.toFixed(2)}; before the backlog drains: ${report.drainLoad.toFixed(2)}; before the decoding: ${report.decode.load.toFixed(2)} (other work on the machine skews the figures)
- Scale: ${report.scale}${report.scale === 1 ? '' : ' (row counts scaled by `BENCH_SCALE`)'}; each snapshot, drain and decode run ${report.runs} times (\`BENCH_RUNS\`)
- Peak RSS of the benchmark process (our service runs inside it) at the end: ${report.peakRssMiB.toFixed(0)} MiB

## Command

\`\`\`sh
${report.command}
\`\`\`

\`BENCH_SCALE=0.1 npm run bench\` is a quick smoke run with a tenth of the rows.

Two throw-away PostgreSQL clusters are started with identical settings (\`wal_level=logical\`,
\`fsync=off\`, \`synchronous_commit=off\`, \`full_page_writes=off\`, as the test harness does): one
source, one sink. Our service's metadata store is a database on the sink cluster, and the service
runs inside the benchmark process.

${snapshotMarkdown(report.snapshot, report.runs, m.cores)}
## Backlog drain

Our pipeline against PostgreSQL's own logical replication (publication + subscription).

### Method

Each system gets a source database and a sink database of its own, each with the table
\`bench (id bigint primary key, v text, n int)\`. Ours is a pipeline made
through the REST API with default sink properties; native is \`CREATE PUBLICATION\` on the source
and \`CREATE SUBSCRIPTION ... WITH (copy_data = true)\` with otherwise default options on the sink.
Both finish their initial copy of the empty table first.

Each drain: with the system replicating, the table is truncated on the source (the truncate
replicates, emptying the sink) and the slot is left to confirm it, twice, each time after
\`pg_log_standby_snapshot()\`, so that the slot's \`restart_lsn\` moves up too and the resume reads
(almost) no WAL but the backlog (the last column of every run shows it); replication is paused
(ours: \`PUT /v1/pipelines/bench/state {"state":"pause"}\`; native: \`ALTER SUBSCRIPTION ... DISABLE\`)
until its walsender is gone; the backlog is written on the source, followed by one synchronous
commit so that all of it is flushed WAL; then replication is resumed (\`resume\` / \`ENABLE\`) and
the time until \`count(*)\` on the sink equals the rows written, polled every 50 ms, is the drain
time. A digest of every row then checks the sink equals the source, and the system is paused
again. events/s = rows / drain seconds. Only one system replicates at any time; which goes first
alternates from one drain to the next. Every drain is repeated and the summary shows the median
drain time of each system.

Both use the \`pgoutput\` plugin with its defaults as each system asks for them: ours requests
\`streaming 'on'\` (a transaction beyond \`logical_decoding_work_mem\` arrives in pieces before its
commit and waits in a spool file); the native subscription keeps its default \`streaming = off\`
on PostgreSQL 17 (the walsender spills the big transaction to disk on the source and sends it at
commit).

Workloads: single-row \`INSERT\` transactions, written by a \`DO\` block that commits after each row;
and one \`INSERT ... SELECT generate_series\` transaction.

### Results

${summaryTable(report.results)}

Median of ${report.runs} drain${report.runs === 1 ? '' : 's'} each; ours/native > 1 means ours drained faster.

#### Every run

${detailTable(report.results)}

${decodeMarkdown(report.decode, report.runs)}`;
}

export function writeBenchmarksMd(path: string, report: Report): void {
  // The live-load section is written by its own run (npm run bench:live): it is kept.
  const live = existsSync(path) ? sectionOf(readFileSync(path, 'utf8'), 'live-load') : '';
  writeFileSync(path, `${benchmarksMarkdown(report).trimEnd()}${live ? `\n\n${live}\n` : '\n'}`);
}
