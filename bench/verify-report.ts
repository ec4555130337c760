import { median, secs, table } from './report-format.js';
import { serviceCommand } from './service-process.js';
import type { VerifyResults, VerifyRun } from './verify.js';

/** The goals: ratios to the snapshot, the repair's seconds, the peak in MB (10^6 bytes). */
export const VERIFY_GOALS = { matched: 1.5, differs: 2, repairSeconds: 1, peakMB: 200 } as const;
const mb = (mib: number) => (mib * 2 ** 20) / 1e6;
const pct = (share: number) => `${(share * 100).toFixed(0)} %`;

interface Figure {
  label: string;
  values: number[];
  format: (n: number) => string;
  goal?: { text: string; met: (median: number) => boolean };
}

function figures(v: VerifyResults): Figure[] {
  const runs = v.runs;
  const of = (f: (r: VerifyRun) => number) => runs.map(f);
  const int = (n: number) => Math.round(n).toLocaleString('en-US');
  return [
    { label: 'snapshot s', values: of((r) => r.snapshotSeconds), format: secs },
    {
      label: 'verification, table matches: s (POST to completed)',
      values: of((r) => r.matched.wallSeconds),
      format: secs,
    },
    { label: '… its duration_ms, s', values: of((r) => r.matched.serviceSeconds), format: secs },
    {
      label: '**verification matched / snapshot**',
      values: of((r) => r.matched.wallSeconds / r.snapshotSeconds),
      format: (n) => n.toFixed(2),
      goal: { text: `≤ ${VERIFY_GOALS.matched}`, met: (m) => m <= VERIFY_GOALS.matched },
    },
    { label: 'verification, 10 rows differ: s', values: of((r) => r.differs.wallSeconds), format: secs },
    { label: '… its duration_ms, s', values: of((r) => r.differs.serviceSeconds), format: secs },
    {
      label: '**verification 10 differences / snapshot**',
      values: of((r) => r.differs.wallSeconds / r.snapshotSeconds),
      format: (n) => n.toFixed(2),
      goal: { text: `≤ ${VERIFY_GOALS.differs}`, met: (m) => m <= VERIFY_GOALS.differs },
    },
    {
      label: '**repair of the 10 rows, s**',
      values: of((r) => r.repairSeconds),
      format: secs,
      goal: { text: `< ${VERIFY_GOALS.repairSeconds}`, met: (m) => m < VERIFY_GOALS.repairSeconds },
    },
    {
      label: 'follow-up verification (after the repair), s',
      values: of((r) => r.followUp.wallSeconds),
      format: secs,
    },
    {
      label: '**peak RSS (VmHWM) of the verifying process, MiB**',
      values: of((r) => r.verifyPeakMiB),
      format: (n) => `${n.toFixed(0)} (${mb(n).toFixed(0)} MB)`,
      goal: { text: `≤ ${VERIFY_GOALS.peakMB} MB`, met: (m) => mb(m) <= VERIFY_GOALS.peakMB },
    },
    {
      label: '… VmRSS at rest before the verifications, MiB',
      values: of((r) => r.restMiB),
      format: (n) => n.toFixed(0),
    },
    {
      label: 'peak RSS (VmHWM) of the process that took the snapshot, MiB',
      values: of((r) => r.snapshotPeakMiB),
      format: (n) => n.toFixed(0),
    },
    { label: 'rows read, table matches', values: of((r) => r.matched.rowsRead), format: int },
    { label: 'rows read, 10 rows differ', values: of((r) => r.differs.rowsRead), format: int },
    { label: '1-minute load average before the run', values: of((r) => r.load), format: (n) => n.toFixed(2) },
  ];
}

export function verifySummaryTable(v: VerifyResults): string {
  const runs = v.runs.map((r) => `run ${r.run}`);
  return table(
    ['figure', ...runs, 'median', 'goal', ''],
    figures(v).map((f) => {
      const m = median(f.values);
      return [
        f.label,
        ...f.values.map(f.format),
        f.format(m),
        f.goal?.text ?? '',
        f.goal ? (f.goal.met(m) ? 'met' : '**not met**') : '',
      ];
    }),
  );
}

export function verifySplitTable(v: VerifyResults): string {
  return table(
    [
      'run',
      'samples',
      'source checksum running',
      'sink checksum running',
      'other verification query',
      'no query running',
    ],
    v.runs.map((r) => [
      String(r.run),
      String(r.split.samples),
      pct(r.split.sourceChecksum),
      pct(r.split.sinkChecksum),
      pct(r.split.otherQuery),
      pct(r.split.idle),
    ]),
  );
}

export function verifyHandTable(v: VerifyResults): string {
  const r = v.runs.find((x) => x.hand);
  const h = r?.hand;
  if (!r || !h) return '';
  return table(
    ['query (whole table, run by hand after run 1)', 'source s', 'sink s'],
    [
      ['`SELECT count(*)`', secs(h.sourceCount), secs(h.sinkCount)],
      [
        "the engine's checksum query, `WHERE TRUE` instead of its range",
        secs(h.sourceChecksum),
        secs(h.sinkChecksum),
      ],
      ['both checksums at once, each on its server (wall)', secs(h.bothAtOnce), ''],
    ],
  );
}

export function verifyTargets(v: VerifyResults): string[] {
  const lines = figures(v)
    .filter((f) => f.goal)
    .map((f) => {
      const m = median(f.values);
      return `${f.label.replaceAll('**', '')}: ${f.format(m)} (median), goal ${f.goal?.text}: **${f.goal?.met(m) ? 'met' : 'not met'}**.`;
    });
  for (const r of v.runs) {
    if (r.followUp.result !== 'matched')
      lines.push(
        `Run ${r.run}: the follow-up verification the repair started found \`${r.followUp.result}\`` +
          `${r.followUp.reason ? ` (${r.followUp.reason})` : ''}; one asked by hand once the table streamed again ` +
          `found \`${r.afterRepair?.result}\` in ${secs(r.afterRepair?.wallSeconds ?? Number.NaN)} s.`,
      );
  }
  const shared = v.runs.find((r) => r.shared);
  if (shared?.shared)
    lines.push(
      `With \`source_share: 0.5\` (run ${shared.run}) the matching table took ${secs(shared.shared.wallSeconds)} s ` +
        `(duration_ms ${secs(shared.shared.serviceSeconds)} s), ${(shared.shared.wallSeconds / shared.matched.wallSeconds).toFixed(2)} × ` +
        `the unthrottled ${secs(shared.matched.wallSeconds)} s of the same run.`,
    );
  return lines;
}

export function verifyMarkdown(v: VerifyResults, date: Date, command: string): string {
  const d = v.differences;
  const rows = v.rows.toLocaleString('en-US');
  const sql = v.runs.find((r) => r.split.sourceSql)?.split.sourceSql?.replace(/\s+/g, ' ');
  const sinkSql = v.runs.find((r) => r.split.sinkSql)?.split.sinkSql?.replace(/\s+/g, ' ');
  return `## Verification

How long our service takes to verify a table against its sink, next to how long it took to copy
it; how long it takes to repair a few differing rows, and its memory meanwhile.

- Date: ${date.toISOString()}; PostgreSQL ${v.postgres} (source and sink); Node.js ${process.version}
- ${v.runs.length} run(s), the summary takes the median

\`\`\`sh
${command}   # BENCH_SCALE (default 1) scales the rows; BENCH_RUNS (default 3); MEMORY_CLI=dist|tsx
\`\`\`

### Method

The table of the snapshot benchmark, \`public.bench_snapshot (id bigint primary key, a text,
b integer, c timestamptz, d numeric(12,2))\`, ${rows} rows (${v.tableMiB.toFixed(0)} MiB) written once on a
source cluster, less the 3 rows whose ids the sink gets as extra rows below (ids ${d.extra.join(', ')}).
Each run, with both clusters fresh from a \`CHECKPOINT\`:

1. **Snapshot**: a fresh sink database with the empty table (primary key included) and a fresh
   metadata store; our service as a process of its own
   (\`node ${serviceCommand(v.cli).join(' ')} serve ...\`, as the memory benchmark starts it); a pipeline made through
   the REST API with default options, timed from \`PUT /v1/pipelines/{name}/state {"state":"start"}\` until
   \`GET .../progress\` shows the phase \`streaming\` (polled every 100 ms), as the snapshot benchmark times ours.
2. That process is stopped and **a fresh one** started on the same store and data directory, so
   that its peak RSS is the verifications' and the repair's, not the snapshot's. Once the pipeline
   streams again in it:
3. **Verification, table matches**: \`POST /v1/pipelines/{name}/verify\` \`{}\`, timed until
   \`GET .../verifications/{id}\` shows \`completed\` (polled every 100 ms); \`duration_ms\` is the
   service's own (started to finished). It must find \`matched\`.
4. **10 differences** made by hand in the sink, spread over the key range: \`UPDATE ... SET b = b + 1\`
   of ids ${d.changed.join(', ')} (changed), \`DELETE\` of ids ${d.missing.join(', ')} (missing), \`INSERT\` of ids
   ${d.extra.join(', ')} (extra); then a verification timed as above, which must report exactly those
   10 keys with those kinds.
5. **Repair**: \`POST .../verifications/{id}/repair\`, timed until \`repair.status\` is
   \`completed\`; the follow-up verification it starts (\`repair.verification_id\`) is timed apart and
   must find \`matched\`; then a digest of every row checks the sink equals the source.
6. First run only: a verification of the matching table with \`{"source_share": 0.5}\`: the cost of the throttle.

Peak RSS is \`VmHWM\` of the fresh process from \`/proc/<pid>/status\` at the end of steps 3 to 6
(its start and catching up included); the snapshot's process's \`VmHWM\` is given too. Where the
matching verification's time goes: every 100 ms, \`pg_stat_activity\` of the source and the sink
database is read, and the sample is counted as a source checksum (a \`SELECT count(*), sum(...)\`
running on the source), a sink checksum, another query of the verification (split points, row
hashes), or none running (the verifier waiting for the sink's durable position, or its own work).
The ratios are per run, then the median.

### Results

${verifySummaryTable(v)}

${verifyTargets(v)
  .map((t) => `- ${t}`)
  .join('\n')}

#### Where the time of the matching verification goes

${verifySplitTable(v)}
${sql ? `\nA source checksum as the source ran it: \`${sql.slice(0, 600)}\`\n` : ''}${sinkSql ? `\nA sink checksum: \`${sinkSql.slice(0, 600)}\`\n` : ''}
${verifyHandTable(v)}
`;
}
