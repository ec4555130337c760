import type { MemoryResults, MemoryScenario } from './memory.js';
import { SAMPLE_MS } from './memory.js';
import { rate, secs, table } from './report-format.js';
import { serviceCommand } from './service-process.js';

/** The target: at most 200 MB (10^6 bytes) resident at the peak. */
export const MEMORY_TARGET_MB = 200;
const targetMiB = (MEMORY_TARGET_MB * 1e6) / 2 ** 20;
const mb = (mib: number) => (mib * 2 ** 20) / 1e6;

export function memorySummaryTable(m: MemoryResults): string {
  return table(
    [
      'scenario',
      'peak RSS (VmHWM) MiB',
      'MB',
      'at rest MiB',
      'rows/s until all visible',
      'service CPU s',
      `target ≤ ${MEMORY_TARGET_MB} MB`,
    ],
    m.scenarios.map((s) => [
      s.label,
      s.peakMiB.toFixed(0),
      mb(s.peakMiB).toFixed(0),
      s.restMiB.toFixed(0),
      rate(s.workload.rows / s.lastRowSeconds),
      s.cpuSeconds.toFixed(1),
      s.peakMiB <= targetMiB ? 'met' : 'not met',
    ]),
  );
}

export function memoryPhaseTable(m: MemoryResults): string {
  return table(
    [
      'scenario',
      'phase',
      's',
      'VmRSS peak sampled MiB',
      'VmHWM at its end MiB',
      'heap used / total max MiB',
      'of which young generation max MiB',
      'external max MiB',
      'of which array buffers max MiB',
    ],
    m.scenarios.flatMap((s) =>
      s.phases.map((p) => [
        s.label,
        p.name,
        secs(p.seconds),
        p.rssPeakMiB.toFixed(0),
        p.hwmMiB.toFixed(0),
        `${p.heapUsedPeakMiB.toFixed(0)} / ${p.heapTotalPeakMiB.toFixed(0)}`,
        p.newSpacePeakMiB.toFixed(0),
        p.externalPeakMiB.toFixed(0),
        p.arrayBuffersPeakMiB.toFixed(0),
      ]),
    ),
  );
}

export function memoryTargets(m: MemoryResults): string[] {
  return m.scenarios.map(
    (s) =>
      `${s.label}: peak RSS ${s.peakMiB.toFixed(0)} MiB (${mb(s.peakMiB).toFixed(0)} MB), at most ${MEMORY_TARGET_MB} MB: ` +
      `**${s.peakMiB <= targetMiB ? 'met' : 'not met'}** (${(mb(s.peakMiB) / MEMORY_TARGET_MB).toFixed(2)} of the target).`,
  );
}

function scenarioNotes(s: MemoryScenario): string {
  if (s.key === 'queue') {
    const sent =
      s.sentWhileDownMiB == null
        ? 'no walsender was streaming to it then'
        : `the walsender had sent ${s.sentWhileDownMiB.toFixed(1)} MiB of it`;
    return (
      `${s.label}: the backlog took ${secs(s.writeSeconds)} s to write; at the end of the down phase ` +
      `${(s.backlogWalMiB ?? 0).toFixed(1)} MiB of WAL lay after the slot's confirmed position and ${sent}. ` +
      `Pipeline states seen while the sink was down: ${(s.statesWhileDown ?? []).join(', ') || 'none'}` +
      `${s.errorWhileDown ? ` (last error: \`${s.errorWhileDown.replaceAll('`', "'").slice(0, 200)}\`)` : ''}. ` +
      `After the sink came back, the first row was visible after ${secs(s.firstRowSeconds)} s and all of them after ${secs(s.lastRowSeconds)} s.`
    );
  }
  if (s.key === 'crash') {
    return (
      `${s.label}: written in ${secs(s.writeSeconds)} s; the service was killed once its first rows were in the sink. ` +
      `After the restart, the first row was visible after ${secs(s.firstRowSeconds)} s and all of them after ${secs(s.lastRowSeconds)} s.`
    );
  }
  return (
    `${s.label}: written in ${secs(s.writeSeconds)} s while the pipeline streamed; after its commit, the first ` +
    `row was visible after ${secs(s.firstRowSeconds)} s and all of them after ${secs(s.lastRowSeconds)} s.`
  );
}

export function memoryMarkdown(m: MemoryResults, date: Date): string {
  const o = m.options;
  const queue = o.queueRows.toLocaleString('en-US');
  const big = o.bigRows.toLocaleString('en-US');
  const crash = o.crashRows.toLocaleString('en-US');
  const command = `node ${serviceCommand(o.cli).join(' ')} serve --listen 127.0.0.1:<port> --data-dir <fresh> --database-url <store> --log-level warn --lease-ttl 3s`;
  return `## Memory

The resident memory of our service while changes queue up behind a stopped sink, while it
carries one very large transaction, and while it applies such a transaction again after a crash.

- Date: ${date.toISOString()}; PostgreSQL ${m.postgres} (source and sink); Node.js ${process.version}
- 1-minute load average before the section: ${m.load.toFixed(2)}

\`\`\`sh
npm run bench:memory   # MEMORY_ROWS=1000000 MEMORY_BIG_ROWS=5000000 MEMORY_CRASH_ROWS=3000000 MEMORY_DOWN_SECONDS=10 MEMORY_CLI=dist MEMORY_SCENARIOS=queue,big,crash
\`\`\`

(\`npm run bench\` runs this section too, with the row counts scaled by \`BENCH_SCALE\`; \`BENCH_MEMORY=off\` skips it.)

### Method

Our service runs as a process of its own, so that its memory is its own:
\`${command}\`${
    o.cli === 'tsx'
      ? ' (the TypeScript sources through tsx, whose loader adds to the memory of the process; the default, `MEMORY_CLI=dist`, runs the build instead)'
      : ', the build of the current sources, as `npm start` runs it (the benchmark runs `tsc -p tsconfig.build.json` first; `MEMORY_CLI=tsx` runs the TypeScript sources through tsx instead, whose loader adds some 40 MiB)'
  }.
A fresh process, with a fresh metadata store database on the sink cluster, runs each scenario, so
that its peak is the scenario's own. Its memory is read from \`/proc/<pid>/status\`: \`VmRSS\` every
${SAMPLE_MS} ms, and \`VmHWM\`, the kernel's record of the highest \`VmRSS\` the process ever had, however
brief: **the peak RSS is \`VmHWM\` at the end of the scenario**. The pipeline (made through the REST
API, default sink properties, the table \`bench (id bigint primary key, v text, n int)\`) has
finished its snapshot of the empty table and streams when a scenario starts; "at rest" is
\`VmRSS\` after 2 s of that. What the process holds is read from inside it as well: a module it
imports first writes its \`process.memoryUsage()\` to a file every 50 ms, read with each sample;
the phases show the highest of each figure (V8's heap, used and reserved, and of it the young
generation's space, from \`v8.getHeapSpaceStatistics()\`; \`external\`, the memory
outside the heap that JavaScript objects hold, Buffers' included; and of that, array buffers).

- **Sink stopped while changes queue up**: the sink connection's DSN points at a TCP relay in the
  benchmark process. The relay goes down (every connection through it is cut and its port
  refuses new ones, as for a stopped server), then ${queue} single-row \`INSERT\` transactions are
  written on the source (a \`DO\` block committing after each row) and the sink stays down
  ${o.downSeconds} s more. Then the relay listens again and the pipeline, retrying on its own, drains the
  backlog until the sink holds every row.
- **One big transaction**: with the pipeline streaming, one \`INSERT ... SELECT generate_series\`
  transaction of ${big} rows is written on the source (PostgreSQL streams it to the pipeline in
  pieces before its commit), then applied until the sink holds every row.
- **One big transaction, applied again after a kill -9**: as above with ${crash} rows, and once the
  first rows are in the sink (the transaction is applied in pieces under the previous checkpoint)
  the service is killed with SIGKILL. A new process on the same data directory and store receives
  the transaction again whole (spooled anew), replays and applies it until the sink holds every
  row; its memory is the new process's, from its start.

Rows visible: the rows with the first and the last id, looked up every ${100} ms, then \`count(*)\`; a
digest of every row then checks the sink equals the source. "rows/s until all visible" is the
rows over the time from the sink's return (the pipeline's retry wait included) or from the
commit of the big transaction (or the restart) to the last row visible. "service CPU s" is the process's user and
system time over the scenario.

### Results

${memorySummaryTable(m)}

${[...memoryTargets(m), ...m.scenarios.map(scenarioNotes)].map((t) => `- ${t}`).join('\n')}

#### Phases

${memoryPhaseTable(m)}
`;
}
