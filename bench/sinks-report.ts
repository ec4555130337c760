import type { MachineInfo } from './report.js';
import { rate, secs, table } from './report-format.js';
import { backlogChanges, type RunShape } from './sink-target.js';
import type { SinkServers } from './sinks-servers.js';
import { SINK_KINDS, type SinkKind } from './sinks-targets.js';

/** CPU seconds over one phase, by who used them. */
export interface Cpu {
  /** This process: the service (which runs in it) and the benchmark's polls. */
  service: number;
  /** Every process of the source cluster. */
  source: number;
  /**
   * The sink's server: the sink PostgreSQL cluster, mariadbd, redis-server, nats-server or
   * RabbitMQ's beam.smp, the webhook's receiver process (NaN: not found, or DuckDB, in this process).
   */
  sink: number;
  /** The cluster of the service's metadata store. */
  store: number;
}

interface Phase {
  seconds: number;
  /** 1-minute load average just before the phase. */
  load: number;
  cpu: Cpu;
  /** What the check after the phase found. */
  check: string;
}

export interface SinkResult {
  kind: SinkKind;
  where: string;
  snapshot: Phase & { partitions: number; parallelism: number; partitionRows: number };
  drain: Phase & {
    /** Resume to the first backlog change visible in the sink. */
    startupSeconds: number;
    writeSeconds: number;
    /** WAL from the slot's confirmed position to the end of the backlog. */
    walMiB: number;
  };
  /** `sink_errors_total` of the pipeline at the end. */
  sinkErrors: number;
  /** The sink's reference (see SinkReference), timed in the same run; none for a kind without one. */
  reference?: ReferenceResult;
  /** Runs this result is the median of (1: a single run). */
  runs: number;
}

export interface ReferenceResult {
  method: string;
  snapshot: { seconds: number; cpu: Cpu };
  drain: { seconds: number; cpu: Cpu };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
};

/**
 * One result of several runs of a sink: each phase (ours and the reference's) is that of the run
 * whose time for it is the median one, so that every figure of a phase comes from one run.
 */
export function medianResult(runs: SinkResult[]): SinkResult {
  const at = <T>(time: (r: SinkResult) => number, pick: (r: SinkResult) => T): T => {
    const m = median(runs.map(time));
    return pick(runs.find((r) => time(r) === m) as SinkResult);
  };
  const first = runs[0] as SinkResult;
  const withReference = runs.filter((r) => r.reference);
  return {
    ...first,
    snapshot: at(
      (r) => r.snapshot.seconds,
      (r) => r.snapshot,
    ),
    drain: at(
      (r) => r.drain.seconds,
      (r) => r.drain,
    ),
    sinkErrors: Math.max(...runs.map((r) => r.sinkErrors)),
    runs: runs.length,
    ...(withReference.length === runs.length && first.reference
      ? {
          reference: {
            method: first.reference.method,
            snapshot: at(
              (r) => r.reference?.snapshot.seconds ?? 0,
              (r) => (r.reference as ReferenceResult).snapshot,
            ),
            drain: at(
              (r) => r.reference?.drain.seconds ?? 0,
              (r) => (r.reference as ReferenceResult).drain,
            ),
          },
        }
      : {}),
  };
}

export interface SinksReport {
  date: Date;
  code: string;
  command: string;
  machine: MachineInfo;
  servers: SinkServers;
  /** The source's `synchronous_commit`. */
  syncCommit: string;
  shape: RunShape;
  /** pg_total_relation_size of the source table at the snapshot. */
  tableMiB: number;
  /** Runs per sink (SINKS_RUNS). */
  runs: number;
  results: SinkResult[];
}

const SINK_NAMES: Record<SinkKind, string> = {
  postgres: 'postgres (reference)',
  mysql: 'mysql (MariaDB)',
  duckdb: 'duckdb (embedded)',
  redis: 'redis (Streams)',
  nats: 'nats (JetStream)',
  rabbitmq: 'rabbitmq',
  webhook: 'webhook (receiver process)',
};

const snapshotRate = (r: SinkResult, shape: RunShape) => shape.rows / r.snapshot.seconds;
const drainRate = (r: SinkResult, shape: RunShape) => backlogChanges(shape) / r.drain.seconds;
const referenceSnapshotRate = (r: SinkResult, shape: RunShape) =>
  r.reference && shape.rows / r.reference.snapshot.seconds;
const referenceDrainRate = (r: SinkResult, shape: RunShape) =>
  r.reference && backlogChanges(shape) / r.reference.drain.seconds;
const rateOrNone = (value: number | undefined) => (value === undefined ? 'n/a' : rate(value));
const ratio = (value: number, reference: number | undefined) =>
  reference === undefined ? 'n/a' : (value / reference).toFixed(2);
const cpuCells = (c: Cpu) =>
  [c.service, c.source, c.sink, c.store].map((v) => (Number.isNaN(v) ? '?' : v.toFixed(1))).join(' / ');

export function sinksSummaryTable(report: SinksReport): string {
  const { shape, results } = report;
  const reference = results.find((r) => r.kind === 'postgres');
  return table(
    [
      'sink',
      'snapshot s',
      'snapshot rows/s',
      "the sink's reference rows/s",
      'snapshot vs its reference',
      'snapshot vs postgres',
      'drain s',
      'drain changes/s',
      "the sink's reference changes/s",
      'drain vs its reference',
      'drain vs postgres',
    ],
    results.map((r) => [
      SINK_NAMES[r.kind],
      secs(r.snapshot.seconds),
      rate(snapshotRate(r, shape)),
      rateOrNone(referenceSnapshotRate(r, shape)),
      ratio(snapshotRate(r, shape), referenceSnapshotRate(r, shape)),
      ratio(snapshotRate(r, shape), reference && snapshotRate(reference, shape)),
      secs(r.drain.seconds),
      rate(drainRate(r, shape)),
      rateOrNone(referenceDrainRate(r, shape)),
      ratio(drainRate(r, shape), referenceDrainRate(r, shape)),
      ratio(drainRate(r, shape), reference && drainRate(reference, shape)),
    ]),
  );
}

export function sinksDetailTable(report: SinksReport): string {
  const rows: string[][] = [];
  for (const r of report.results) {
    rows.push([
      SINK_NAMES[r.kind],
      'snapshot',
      secs(r.snapshot.seconds),
      '',
      r.snapshot.load.toFixed(2),
      cpuCells(r.snapshot.cpu),
      `${r.snapshot.partitions} partitions, parallelism ${r.snapshot.parallelism}`,
      r.snapshot.check,
    ]);
    rows.push([
      SINK_NAMES[r.kind],
      'drain',
      secs(r.drain.seconds),
      secs(r.drain.startupSeconds),
      r.drain.load.toFixed(2),
      cpuCells(r.drain.cpu),
      `backlog written in ${secs(r.drain.writeSeconds)} s, ${r.drain.walMiB.toFixed(1)} MiB of WAL; sink errors ${r.sinkErrors}`,
      r.drain.check,
    ]);
    if (r.reference) {
      for (const phase of ['snapshot', 'drain'] as const) {
        rows.push([
          SINK_NAMES[r.kind],
          `reference ${phase}`,
          secs(r.reference[phase].seconds),
          '',
          '',
          cpuCells(r.reference[phase].cpu),
          r.reference.method,
          '',
        ]);
      }
    }
  }
  return table(
    [
      'sink',
      'phase',
      's',
      'first backlog change visible s',
      'load before',
      'CPU s: service process / source PG / sink server / store PG',
      'notes',
      'check after',
    ],
    rows,
  );
}

export function sinksMarkdown(report: SinksReport): string {
  const { machine: m, servers: s, shape } = report;
  const changes = backlogChanges(shape);
  const reference = report.results.find((r) => r.kind === 'postgres');
  const lines = report.results
    .filter((r) => r.kind !== 'postgres')
    .map((r) =>
      reference
        ? `${SINK_NAMES[r.kind]}: snapshot ${ratio(snapshotRate(r, shape), snapshotRate(reference, shape))} of the postgres sink's rows/s, ` +
          `drain ${ratio(drainRate(r, shape), drainRate(reference, shape))} of its changes/s` +
          (r.reference
            ? `; against its reference, snapshot ${ratio(snapshotRate(r, shape), referenceSnapshotRate(r, shape))} and drain ${ratio(drainRate(r, shape), referenceDrainRate(r, shape))}.`
            : '.')
        : `${SINK_NAMES[r.kind]}: no postgres run to compare with.`,
    );
  return [
    report.syncCommit === 'on'
      ? "## Sinks, the source at PostgreSQL's default `synchronous_commit = on`"
      : '## Sinks',
    '',
    'One table through each sink type, set up through the REST API as a user would: a source',
    'connection, a sink connection, a pipeline with default sink properties (but for names of the',
    "run's own: Redis, a stream key; NATS, a subject and a stream; RabbitMQ, an exchange), start. Each",
    'sink is measured against its own reference (the fastest ordinary way to load the same data into',
    'the same server, see Method) and against the postgres sink, in the same run.',
    '',
    `- Date: ${report.date.toISOString()}`,
    `- Code: ${report.code}`,
    `- Machine: ${m.cores} cores (${m.cpuModel}), ${m.memoryGiB.toFixed(1)} GiB memory, ${m.os}; Node.js ${m.node}`,
    `- PostgreSQL ${m.postgres} (the embedded binaries: source, postgres sink, metadata store); MariaDB ${s.mariadb.version}; Redis ${s.redis.version}; NATS ${s.nats.version}; RabbitMQ ${s.rabbitmq.version} (${s.rabbitmq.erlang})`,
    report.syncCommit === 'on'
      ? "- Source: PostgreSQL's defaults, `synchronous_commit = on`, `fsync = on`, `full_page_writes = on` (and `wal_level=logical`): each commit of the backlog waits for its WAL to reach the disk. The postgres sink cluster and the store as the test harness starts them (`fsync=off`, `synchronous_commit=off`)"
      : `- Source: \`synchronous_commit = ${report.syncCommit}\` (\`fsync=off\`, \`full_page_writes=off\`, \`wal_level=logical\`, as the test harness starts its clusters; the postgres sink cluster the same)`,
    `- MariaDB as the machine runs it: \`innodb_flush_log_at_trx_commit = ${s.mariadb.flushAtCommit}\` (a log flush at every commit), \`innodb_buffer_pool_size\` ${s.mariadb.bufferPoolMiB.toFixed(0)} MiB, binary log ${s.mariadb.logBin}; Redis: \`appendonly ${s.redis.appendonly}\`, \`save "${s.redis.save}"\` (memory only)`,
    `- N = ${shape.rows.toLocaleString('en-US')} rows (${report.tableMiB.toFixed(0)} MiB by \`pg_total_relation_size\`), M = ${changes.toLocaleString('en-US')} changes in ${shape.transactions.toLocaleString('en-US')} transactions; ${report.runs === 1 ? 'one run per sink' : `${report.runs} runs per sink, each phase the run with the median time`}`,
    `- 1-minute load average before the runs: ${m.load.toFixed(2)}`,
    '',
    '```sh',
    `${report.command}   # defaults: SINKS_ROWS=1000000 SINKS_CHANGES=200000 SINKS=${SINK_KINDS.join(',')}`,
    '```',
    '',
    '### Method',
    '',
    'Three throw-away PostgreSQL clusters are started: the source, the postgres sink and the',
    "service's metadata store (so that the sink server's CPU is the sink's alone); the service runs",
    'inside the benchmark process. MariaDB (127.0.0.1:3306), Redis (127.0.0.1:6379), NATS with',
    "JetStream (127.0.0.1:4222) and RabbitMQ (127.0.0.1:5672) are the machine's servers, started if",
    'they are down. The webhook sink posts to an HTTP receiver (`node:http`) that the benchmark starts',
    'as a process of its own (bench/webhook-receiver.ts) on a loopback port (the service is configured',
    'with `connections.webhook_allow_private = true`, without which a webhook may not reach loopback',
    "over `http://`): it verifies each request's signature over the raw body as a receiver must (a",
    'request that fails is answered 401 and fails the run), parses each `{"events":[...]}` body and',
    "answers 200; its CPU is the webhook's sink server column. DuckDB's sink server CPU is shown as",
    '`?`: it is an embedded database of the service process, that writes the',
    "file `<data_dir>/duckdb/bench-<random>.duckdb` (its table's digest is made by DuckDB's own",
    "`concat_ws` and `strftime`, the md5 sums in the benchmark). The source table is the snapshot benchmark's",
    '`public.bench_snapshot (id bigint primary key, a text, b integer, c timestamptz, d numeric(12,2))`,',
    'filled once in a template database (then `VACUUM (ANALYZE)`); each sink gets a source database',
    'of its own copied from it, so every sink copies the same N rows and drains the same backlog.',
    '',
    'The pipeline creates its target itself: a table in a fresh PostgreSQL database, a table in a fresh',
    'MariaDB database (`sinks_<random>`), the Redis stream `bench:<random>:public.bench_snapshot`, or',
    'the JetStream stream `BENCH_<random>` capturing `bench<random>.*.*` (file storage; the sink',
    'publishes each message with its envelope id as `Nats-Msg-Id`, which the stream deduplicates',
    'within its duplicate window, and awaits the acks before each checkpoint). For RabbitMQ the',
    'benchmark declares a durable topic exchange `bench.<random>` and a durable queue of the same name',
    'bound to it with `#` before the pipeline starts (the sink publishes with `mandatory`: a message no',
    'queue takes would fail its batch); the sink publishes persistent messages on a channel with',
    'publisher confirms and awaits every confirm before each checkpoint. Database, keys',
    '(`bench:<random>:*`, `replicator:<pipeline id>:*`), stream, exchange and queue, receiver and',
    'pipeline are removed after the run. The sinks run one after the other, postgres first.',
    '',
    '- **Snapshot**: timed from `PUT /v1/pipelines/{name}/state {"state":"start"}` until',
    '  `GET /v1/pipelines/{name}/progress` shows the phase `streaming` (polled every 100 ms), default',
    '  snapshot options. rows/s = N / seconds. Then (untimed) the sink must hold exactly the',
    "  source's rows: for postgres and mysql the row count and a checksum (the sum of the first 32 bits",
    "  of the md5 of each row's text `id|a|b|c|d`, `c` in UTC with microseconds, computed by each",
    "  database) equal to the source's; for the others one `read` message per row: redis, `XLEN` of the",
    "  stream equal to N; nats, the stream's message count equal to N; rabbitmq, the queue's message",
    '  count equal to N (the queue is then purged, untimed, so that the drain counts and reads the',
    '  backlog alone); webhook, N distinct `read` event ids received.',
    '- **Drain**: the pipeline is paused (`{"state":"pause"}`, until its walsender is gone); the',
    `  backlog is written at the source by one \`DO\` block committing after each of ${shape.transactions.toLocaleString('en-US')}`,
    `  transactions of an \`UPDATE\` of an existing row (\`b\`, \`c\`, \`d\`${shape.transactions <= shape.rows && shape.rows % 7919 !== 0 ? '; distinct rows' : ''}) followed by an`,
    "  `INSERT` of a new row above the snapshot's ids, then one synchronous commit so that all of it",
    '  is flushed WAL. Timed from `{"state":"resume"}` until the sink holds the whole backlog, polled',
    "  every 50 ms: for postgres and mysql, until the backlog's last inserted row shows in the sink",
    '  table (looked up by key, with the first inserted one for the start-up): batches are applied in',
    "  commit order, each in one transaction, and that row is the backlog's last change, so the whole",
    "  backlog is then applied (a count-only poll of the rows above the snapshot's ids would scan up to",
    '  M / 2 rows each time, 20 times a second, on the sink server being measured); for the others,',
    "  until M messages beyond the snapshot's are there: redis, the stream's length (`XLEN`) equal to",
    "  N + M; nats, the stream's message count equal to N + M; rabbitmq, the queue's message count (a",
    '  passive `queue.declare`) equal to M; webhook, M distinct ids of events other than `read`',
    "  received. Those counts were chosen over the slot's confirmed position reaching the source's WAL",
    '  position: the pipeline confirms an idle position only with its periodic feedback, seconds later,',
    '  which would time the feedback and not the drain, while a message counts as soon as the server',
    '  holds it (redis: written in the same Lua script as its checkpoint; nats, rabbitmq and webhook:',
    '  just before the ack, confirm or 200 answer after which the sink stores its checkpoint).',
    '  changes/s = M / seconds. Then (untimed) postgres and mysql must',
    "  equal the source by the same checksum; for the others the messages after the snapshot's are",
    "  read back (redis: `XRANGE` after the snapshot's last entry; nats: an ordered consumer from the",
    "  stream sequence after the snapshot's; rabbitmq: a consumer of the queue; webhook: the events in",
    '  the order received) and tallied: M distinct `id`s, half inserts and half updates, the inserts in',
    "  commit order, and for nats and rabbitmq each message's own id (`Nats-Msg-Id`, `message_id`)",
    "  equal to its envelope's.",
    "- **The sink's reference**: the fastest ordinary way to load the same rows and changes into the",
    "  same server with the same message sizes and durability, run by the benchmark after the sink's",
    '  phases into a target of its own, timed from its first write until the server holds the data:',
    ...report.results
      .filter((r) => r.reference)
      .map((r) => `  - ${SINK_NAMES[r.kind]}: ${r.reference?.method}.`),
    "  A sink without one shows `n/a`; the postgres sink is held to PostgreSQL's own `COPY` in the",
    '  snapshot section above.',
    '- CPU: user + system seconds over each phase (sampled 0.5 s after it) of this process (the',
    "  service and the polls), every process of the source cluster, the sink's server (the postgres",
    "  sink cluster, `mariadbd`, `redis-server`, `nats-server`, RabbitMQ's `beam.smp` or the webhook's",
    '  receiver process, all their threads and children) and the store cluster.',
    '',
    '### Results',
    '',
    sinksSummaryTable(report),
    '',
    "Ratios are that sink's rows/s or changes/s over its reference's, or over the postgres sink's, in",
    'the same run (> 1: faster).',
    '',
    ...lines.map((l) => `- ${l}`),
    '',
    '#### Every phase',
    '',
    sinksDetailTable(report),
  ].join('\n');
}
