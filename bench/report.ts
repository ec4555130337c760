import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { sqlOn } from '../test/support/replication-fixture.js';
import { sectionOf, sectionText } from './benchmarks-section.js';
import type { DecodeResults } from './decode.js';
import { decodeMarkdown } from './decode-report.js';
import type { DrainSource, RunRecord } from './drain.js';
import { drainMarkdown, sourceName } from './drain-report.js';
import type { MemoryResults } from './memory.js';
import { memoryMarkdown } from './memory-report.js';
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
  /** The source clusters the drains ran from, and the sink's version. */
  drainSources: DrainSource[];
  sinkVersion: string;
  peakRssMiB: number;
  snapshot: SnapshotResults;
  /** 1-minute load average before the backlog drains (after the snapshot runs). */
  drainLoad: number;
  /** The decode section: our change stream against pg_recvlogical. */
  decode: DecodeResults;
  /** The memory section, when it ran (else the file keeps the one it has). */
  memory?: MemoryResults;
}

export function benchmarksMarkdown(report: Report): string {
  const m = report.machine;
  const drainVersions = report.drainSources.map(sourceName).join(' and ');
  return `# Benchmarks

Our pipeline against PostgreSQL's own tools, on the same machine: the [initial snapshot](#snapshot)
of a table (against a COPY pipe and against a subscription's initial copy), then
[backlog drain](#backlog-drain) from a source of each PostgreSQL version at hand (against logical
replication, publication and subscription), then raw [decoding](#decoding) of a backlog (our change
stream against \`pg_recvlogical\`, a reference only: it makes the walsender work harder than a
well-behaved stream does). The [live load](#live-load) (\`npm run bench:live\`) and the
[memory](#memory) of the service in a process of its own (\`npm run bench:memory\`, also run here
unless \`BENCH_MEMORY=off\`) and the [sinks](#sinks) side by side (\`npm run bench:sinks\`) follow.

- Date: ${report.date.toISOString()}
- Code: ${report.code}
- Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB.toFixed(1)} GiB memory, ${m.os}
- Node.js ${m.node}; PostgreSQL ${m.postgres} (the embedded binaries) for the snapshot, the decoding and every sink; backlog drain sources: ${drainVersions}
- 1-minute load average before the runs: ${m.load.toFixed(2)}; before the backlog drains: ${report.drainLoad.toFixed(2)}; before the decoding: ${report.decode.load.toFixed(2)} (other work on the machine skews the figures)
- Scale: ${report.scale}${report.scale === 1 ? '' : ' (row counts scaled by `BENCH_SCALE`)'}; each snapshot, drain and decode run ${report.runs} times (\`BENCH_RUNS\`)
- Peak RSS of the benchmark process (our service runs inside it for every section but the memory one) at the end: ${report.peakRssMiB.toFixed(0)} MiB

## Command

\`\`\`sh
${report.command}
\`\`\`

\`BENCH_SCALE=0.1 npm run bench\` is a quick smoke run with a tenth of the rows;
\`BENCH_SOURCES=embedded\` (or \`debian-15\`) drains from one source version only.

Throw-away PostgreSQL clusters are started with identical settings (\`wal_level=logical\`,
\`fsync=off\`, \`synchronous_commit=off\`, \`full_page_writes=off\`, as the test harness does): a source
and a sink from the embedded PostgreSQL ${m.postgres.split(' ')[0]}, and for the backlog drain one more source from
each other PostgreSQL installed (Debian's \`/usr/lib/postgresql/<version>/bin\`), started for its
drains and stopped after them. Our service's metadata store is a database on the sink cluster, and
the service runs inside the benchmark process.

${snapshotMarkdown(report.snapshot, report.runs, m.cores)}
${drainMarkdown(report.results, report.runs, report.drainSources, report.sinkVersion)}
${decodeMarkdown(report.decode, report.runs)}`;
}

/** Sections written by runs of their own, kept (or replaced, for the memory one when it ran) in this order. */
const KEPT_SECTIONS = [
  'live-load',
  'memory',
  'sinks',
  'sinks-synchronous-commit-on',
  'verify',
  'profile',
] as const;

export function writeBenchmarksMd(path: string, report: Report): void {
  const old = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const sections = KEPT_SECTIONS.map((name) =>
    name === 'memory' && report.memory
      ? sectionText(name, memoryMarkdown(report.memory, report.date))
      : sectionOf(old, name),
  ).filter(Boolean);
  writeFileSync(path, `${[benchmarksMarkdown(report).trimEnd(), ...sections].join('\n\n')}\n`);
}
