import { type DecodeResults, type DecodeRun, PG_RECVLOGICAL, PGOUTPUT_OPTIONS } from './decode.js';
import { median, rate, secs, table } from './report-format.js';

const medianOf = (runs: DecodeRun[], pick: (r: DecodeRun) => number | undefined) => {
  const values = runs.map(pick).filter((v): v is number => v !== undefined);
  return values.length === 0 ? undefined : median(values);
};

/** One row per workload and system: median seconds, events/s, the ratio to pg_recvlogical (pgoutput). */
export function decodeSummaryTable(d: DecodeResults): string {
  const rows: string[][] = [];
  for (const info of d.workloads) {
    const label = info.workload.label;
    const runsOf = (kind: string) =>
      d.results.filter((r) => r.workload.label === label && r.system.kind === kind);
    const reference = medianOf(runsOf('recvlogical'), (r) => r.seconds);
    for (const system of d.systems) {
      const runs = runsOf(system.kind);
      const seconds = medianOf(runs, (r) => r.seconds);
      if (seconds === undefined) continue;
      const cpu = (v: number | undefined) => (v === undefined ? '' : v.toFixed(1));
      rows.push([
        label,
        system.label,
        secs(seconds),
        rate(info.workload.rows / seconds),
        reference === undefined ? 'n/a' : (reference / seconds).toFixed(2),
        cpu(medianOf(runs, (r) => r.clientCpu)),
        cpu(medianOf(runs, (r) => r.sourceCpu)),
        system.kind === 'ours' ? (medianOf(runs, (r) => r.rssPeakMiB) ?? 0).toFixed(0) : '',
      ]);
    }
  }
  return table(
    [
      'workload',
      'system',
      'median s',
      'events/s',
      'vs pg_recvlogical (pgoutput)',
      'client CPU s',
      'source CPU s',
      'RSS MiB peak seen',
    ],
    rows,
  );
}

/** The ratio the section is about: ours against pg_recvlogical with pgoutput, per workload. */
export function decodeRatios(d: DecodeResults): string[] {
  return d.workloads.map((info) => {
    const label = info.workload.label;
    const s = (kind: string) =>
      medianOf(
        d.results.filter((r) => r.workload.label === label && r.system.kind === kind),
        (r) => r.seconds,
      );
    const ours = s('ours');
    const theirs = s('recvlogical');
    if (ours === undefined || theirs === undefined) return `${label}: n/a`;
    return (
      `${label}: ours ${secs(ours)} s against pg_recvlogical ${secs(theirs)} s, ` +
      `ours/pg_recvlogical time ratio **${(ours / theirs).toFixed(2)}** ` +
      `(ours decodes at ${(theirs / ours).toFixed(2)} of pg_recvlogical's events/s)`
    );
  });
}

export function decodeDetailTable(d: DecodeResults): string {
  return table(
    [
      'run',
      'workload',
      'system',
      's',
      'events',
      'events/s',
      'load before',
      'CPU s: client / source',
      'first change after s',
      'RSS MiB peak seen (maxRSS so far)',
      'streamed / spilled txns',
    ],
    d.results.map((r) => [
      String(r.run),
      r.workload.label,
      r.system.label,
      secs(r.seconds),
      r.events.toLocaleString('en-US'),
      rate(r.eventsPerSecond),
      r.load.toFixed(2),
      `${r.clientCpu.toFixed(1)} / ${r.sourceCpu.toFixed(1)}`,
      r.firstChangeSeconds === undefined ? '' : secs(r.firstChangeSeconds),
      r.rssPeakMiB === undefined ? '' : `${r.rssPeakMiB.toFixed(0)} (${(r.maxRssMiB ?? 0).toFixed(0)})`,
      r.streamedTransactions === undefined ? '' : `${r.streamedTransactions} / ${r.spilledTransactions}`,
    ]),
  );
}

export function decodeMarkdown(d: DecodeResults, runs: number): string {
  const wal = d.workloads
    .map(
      (w) => `${w.workload.label}: ${w.walMiB.toFixed(1)} MiB of WAL, written in ${secs(w.writeSeconds)} s`,
    )
    .join('; ');
  return `## Decoding

The raw decode speed of our change stream, without any sink, against PostgreSQL's
\`pg_recvlogical\` reading the same WAL with the same plugin and options.

### Method

A database of its own on the source cluster holds \`bench (id bigint primary key, v text, n int)\`
and the publication \`${PUBLICATION_NAME}\` for it. For each workload (the backlog-drain workloads: single-row
\`INSERT\` transactions from a \`DO\` block, and one \`INSERT ... SELECT generate_series\`
transaction), the table is truncated, then fresh logical slots are made with
\`pg_create_logical_replication_slot\`, one per system and repeat, and the workload is written while
no slot is read, followed by one synchronous commit; the end LSN is \`pg_current_wal_lsn()\` after
it. Every slot thus decodes exactly the same WAL (${wal}). Each repeat reads its own slots, one
system at a time, the order of the systems reversed from one repeat to the next; a slot is dropped
once read.

- **ours**: \`startChangeStream({dsn, slotName, publicationName, startLsn: '0/0'})\`, the source module our
  pipelines use (pgoutput \`proto_version '2'\`, \`publication_names\`, \`streaming 'on'\` on
  PostgreSQL 14+; a streamed transaction waits in a spool file until its commit), in this process,
  timed from the call until an item at or beyond the end LSN (a commit's LSN, or the \`walEnd\` of
  an idle item) has been consumed; items are counted and dropped, the last commit LSN is acked
  every ${'1,000'} commits. The change events counted must equal the rows written.
- **pg_recvlogical (pgoutput)**: \`${PG_RECVLOGICAL}\` (${d.tool}), run as
  \`pg_recvlogical -d <source database> -S <slot> --start --no-loop --endpos=<end LSN> ${PGOUTPUT_OPTIONS.map((o) => `-o ${o}`).join(' ')} -f /dev/null\`:
  the same plugin options as ours requests, the binary pgoutput messages written to \`/dev/null\`.
  Timed from spawning it until it exits at the end position; its slot must then have confirmed the
  end LSN.
- **pg_recvlogical (test_decoding)**, for reference only: the same on a \`test_decoding\` slot
  with the plugin's default options (text output, no streaming: the walsender spills a big
  transaction to disk and sends it at commit). It does a different job from pgoutput and is not
  part of the ratio.
- **in the server**, for reference only: the same slot options through the SQL interface,
  \`pg_logical_slot_get_binary_changes(<slot>, <end LSN>, NULL, ${PGOUTPUT_OPTIONS.map((o) =>
    o
      .split('=')
      .map((v) => `'${v}'`)
      .join(', '),
  ).join(', ')})\`,
  counting the inserts among the messages. A backend decodes the WAL as a walsender does but sends
  nothing: the time is the floor under any client of the replication protocol. A walsender sends
  each message on its own (one \`sendto\` and one \`recvfrom\` for a reply per message, 291,301 and
  291,579 of them for the 100,000 single-row transactions, counted with \`strace -c\` under
  pg_recvlogical on PostgreSQL 17), which is where most of its time goes.

events/s = rows written / seconds. CPU: "client" is, for ours, \`process.cpuUsage()\` of this
process over the decode (the whole process, but nothing else runs in it then: the service's
pipelines are paused); for pg_recvlogical, its own user + system time as an exited child. "source"
is every process of the source cluster (mostly the walsender), read from \`/proc\` 0.5 s after the
decode. RSS of this process is sampled every ${'100'} ms during ours; maxRSS only grows and
already holds the backlog drains' peak. Load average before the section: ${d.load.toFixed(2)}.

### Results

${decodeSummaryTable(d)}

Median of ${runs} decode${runs === 1 ? '' : 's'} each. The ratio column is pg_recvlogical
(pgoutput)'s seconds divided by that row's (> 1: faster than pg_recvlogical).

${decodeRatios(d)
  .map((t) => `- ${t}`)
  .join('\n')}

#### Every decode

${decodeDetailTable(d)}
`;
}

const PUBLICATION_NAME = PGOUTPUT_OPTIONS[1]?.split('=')[1] ?? '';
