import { type Command, Option } from 'commander';
import {
  type ApiClient,
  ok,
  type PipelineMetrics,
  type PipelineProgress,
  type Schemas,
} from '../../client/api-client.js';
import { formatBytes } from '../../core/byte-size.js';
import { clientCommand, clientFor } from '../client-command.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';
import { formatAgo, formatDuration } from '../output/durations.js';
import { progressBar } from '../output/progress-bar.js';
import { formatTable } from '../output/table.js';

interface PipelineStatus {
  pipeline: Schemas['Pipeline'];
  metrics: PipelineMetrics;
  progress: PipelineProgress;
}

async function fetchStatus(api: ApiClient, name: string): Promise<PipelineStatus> {
  const params = { params: { path: { name } } };
  const [pipeline, metrics, progress] = await Promise.all([
    ok(api.GET('/v1/pipelines/{name}', params)),
    ok(api.GET('/v1/pipelines/{name}/metrics', params)),
    ok(api.GET('/v1/pipelines/{name}/progress', params)),
  ]);
  return { pipeline, metrics, progress };
}

const count = (n: number) => n.toLocaleString('en-US');

/** The state, lag and throughput, then each table with a progress bar while it is being copied. */
export function formatStatus(
  { pipeline, metrics, progress }: PipelineStatus,
  unicode: boolean,
  now = Date.now(),
) {
  const lines = [
    `pipeline ${pipeline.name}: ${pipeline.state}${pipeline.desired_state !== pipeline.state ? ` (asked to be ${pipeline.desired_state})` : ''}`,
    `  lag              ${formatDuration(metrics.replication_lag_seconds * 1000)}${metrics.replication_lag_bytes === null ? '' : ` (${formatBytes(metrics.replication_lag_bytes)} of source WAL behind)`}`,
    `  retained WAL     ${metrics.retained_wal_bytes === null ? 'not measured' : formatBytes(metrics.retained_wal_bytes)}`,
    `  events/s         ${metrics.events_per_second.toFixed(1)}`,
    `  events           ${count(metrics.events_total)}`,
    `  sink errors      ${count(metrics.sink_errors_total)}`,
    `  last checkpoint  ${formatAgo(metrics.last_checkpoint_at, now)}`,
  ];
  if (pipeline.error) lines.push(`  error            ${pipeline.error}`);
  if (pipeline.warning) lines.push(`  warning          ${pipeline.warning}`);
  lines.push(`phase: ${progress.phase}`);
  const table = formatTable(
    [
      { heading: 'table' },
      { heading: 'status' },
      { heading: 'progress' },
      { heading: 'rows', numeric: true },
      { heading: 'eta' },
    ],
    progress.tables.map((t) => {
      const copying = t.status === 'snapshot' || t.status === 'backfill';
      return [
        t.table,
        t.status,
        copying || t.status === 'pending' ? progressBar(t.percent, 24, unicode) : '',
        copying ? `${count(t.rows_done)} / ${count(t.rows_total)}` : count(t.rows_done),
        t.eta_seconds === null ? '' : formatDuration(t.eta_seconds * 1000),
      ];
    }),
  );
  return `${lines.join('\n')}\n${table}`;
}

export function registerStatus(program: Command, io: CliIo): void {
  clientCommand(
    program,
    'status <name>',
    "a pipeline's state, lag and throughput, and its snapshot's progress",
  )
    .addOption(
      new Option('-o, --output <format>', 'text, or the API objects as json')
        .choices(['text', 'json'])
        .default('text'),
    )
    .option('-w, --watch [seconds]', 'print it again every few seconds (default 2) until interrupted')
    .action(async (name: string, flags: { output: string; watch?: string | boolean }, command: Command) => {
      const api = clientFor(command, io);
      const interval = flags.watch === undefined ? 0 : flags.watch === true ? 2 : Number(flags.watch);
      if (!Number.isFinite(interval) || (flags.watch !== undefined && interval <= 0)) {
        throw new CliError(`--watch: must be a number of seconds (got "${flags.watch}")`, EXIT.usage);
      }
      for (;;) {
        const status = await fetchStatus(api, name);
        const text =
          flags.output === 'json' ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status, io.tty);
        // On a terminal each view replaces the last; piped, views follow each other.
        io.out(interval && io.tty ? `\x1b[H\x1b[2J${text}` : text);
        if (!interval) return;
        await new Promise((resolve) => setTimeout(resolve, interval * 1000));
      }
    });
}
