import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { pgClientConfigOfDsn } from '../src/connections/pg-client-config.js';
import { compareLsn, parseLsn } from '../src/core/lsn.js';
import { startChangeStream } from '../src/source/postgres/change-stream.js';
import { ensurePublication } from '../src/source/postgres/slot.js';
import { createDatabase } from '../test/support/pg-cluster.js';
import { sqlOn } from '../test/support/replication-fixture.js';
import { type CpuSample, cpuSample, cpuUsed, postmasterPid } from './cpu-usage.js';
import { rate } from './report-format.js';
import { currentWalLsn } from './source-slot.js';
import { BENCH_TABLE, BENCH_TABLE_DDL, type Workload, workloads, writeBacklog } from './workloads.js';

const run = promisify(execFile);

/** Debian's pg_recvlogical (a client; it speaks the replication protocol to newer servers too). */
export const PG_RECVLOGICAL = '/usr/lib/postgresql/15/bin/pg_recvlogical';
const DATABASE = 'src_decode';
const PUBLICATION = 'bench_decode';
const SLOT_PREFIX = 'bench_decode_';
const TIMEOUT_MS = 240_000;
const CPU_SETTLE_MS = 500;
const ACK_EVERY = 1000;
const RSS_SAMPLE_MS = 100;

/**
 * The options of our pgoutput plugin on PostgreSQL 14+ (`startReplicationCommand`): protocol 2,
 * our publication, `streaming 'on'`; no `messages`, no `binary`. pg_recvlogical is given the same.
 */
export const PGOUTPUT_OPTIONS = ['proto_version=2', `publication_names=${PUBLICATION}`, 'streaming=on'];

export interface DecodeSystem {
  kind: 'ours' | 'recvlogical' | 'test_decoding' | 'in-server';
  label: string;
  plugin: 'pgoutput' | 'test_decoding';
}

export const DECODE_SYSTEMS: DecodeSystem[] = [
  { kind: 'ours', label: 'ours (startChangeStream)', plugin: 'pgoutput' },
  { kind: 'recvlogical', label: 'pg_recvlogical (pgoutput)', plugin: 'pgoutput' },
  {
    kind: 'test_decoding',
    label: 'pg_recvlogical (test_decoding, text; reference only)',
    plugin: 'test_decoding',
  },
  {
    kind: 'in-server',
    label: 'in the server, no replication protocol (pg_logical_slot_get_binary_changes; reference only)',
    plugin: 'pgoutput',
  },
];

/** One timed decode of one workload's WAL by one system, from a fresh slot to the end LSN. */
export interface DecodeRun {
  run: number;
  workload: Workload;
  system: DecodeSystem;
  seconds: number;
  /** Change events seen (ours: `change` items); the others are assumed to carry the workload's rows. */
  events: number;
  eventsPerSecond: number;
  load: number;
  /** CPU seconds: the client (ours: this process, `process.cpuUsage`; pg_recvlogical: the exited child) and the source cluster (walsender). */
  clientCpu: number;
  sourceCpu: number;
  /** Ours only: time to the first change item, peak RSS sampled during the decode, maxRSS after, and stream stats. */
  firstChangeSeconds?: number;
  rssPeakMiB?: number;
  maxRssMiB?: number;
  streamedTransactions?: number;
  spilledTransactions?: number;
}

export interface DecodeWorkloadInfo {
  workload: Workload;
  writeSeconds: number;
  /** WAL from the slots' restart_lsn to the end LSN. */
  walMiB: number;
  endLsn: string;
}

export interface DecodeResults {
  tool: string;
  systems: DecodeSystem[];
  workloads: DecodeWorkloadInfo[];
  results: DecodeRun[];
  load: number;
}

const slotFor = (system: DecodeSystem, w: number, run: number) =>
  `${SLOT_PREFIX}w${w}_r${run}_${system.kind.replace('-', '_')}`;

/** Drops every slot this section made on the decode database; safe to call at any time. */
export async function dropDecodeSlots(sourceUrl: string): Promise<void> {
  // A walsender still ending (after a failure) holds its slot for a moment: retry for a while.
  for (let attempt = 0; ; attempt++) {
    await sqlOn(
      sourceUrl,
      `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
        WHERE slot_name LIKE '${SLOT_PREFIX}%' AND NOT active`,
    );
    const [row] = await sqlOn<{ left: number }>(
      sourceUrl,
      `SELECT count(*)::int AS left FROM pg_replication_slots WHERE slot_name LIKE '${SLOT_PREFIX}%'`,
    );
    if (!row?.left) return;
    if (attempt === 50) throw new Error(`decode: ${row.left} slots still active, not dropped`);
    await sleep(200);
  }
}

async function dropSlot(url: string, slot: string): Promise<void> {
  await sqlOn(
    url,
    'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
}

/**
 * Ours: `startChangeStream` from the slot's confirmed position until an item at or beyond `endLsn`
 * (a commit, or idle walEnd), acking the last commit every `ACK_EVERY` commits; no sink.
 */
async function decodeOurs(url: string, slot: string, endLsn: string) {
  const rssPeak = { bytes: process.memoryUsage.rss() };
  const sampler = setInterval(() => {
    rssPeak.bytes = Math.max(rssPeak.bytes, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const stream = startChangeStream({
    connection: await pgClientConfigOfDsn(url),
    slotName: slot,
    publicationName: PUBLICATION,
    startLsn: '0/0',
  });
  const timer = setTimeout(() => void stream.close(), TIMEOUT_MS);
  let events = 0;
  let commits = 0;
  let firstChange: number | undefined;
  let done: { seconds: number; cpu: NodeJS.CpuUsage } | undefined;
  try {
    const end = parseLsn(endLsn);
    for (let items = await stream.next(); items !== null && !done; items = await stream.next()) {
      for (const item of items) {
        let reached = false;
        if (item.kind === 'change') {
          events++;
          firstChange ??= performance.now();
        } else if (item.kind === 'commit') {
          commits++;
          if (commits % ACK_EVERY === 0) stream.ack(item.endLsn);
          reached = item.endLsn >= end;
        } else if (item.kind === 'idle') {
          reached = item.walEnd >= end;
        }
        if (reached) {
          stream.ack(item.kind === 'idle' ? item.walEnd : end);
          done = { seconds: (performance.now() - started) / 1000, cpu: process.cpuUsage(cpuBefore) };
          break;
        }
      }
    }
  } finally {
    clearTimeout(timer);
    clearInterval(sampler);
    await stream.close();
  }
  if (!done) throw new Error(`ours: the stream ended before ${endLsn} (${events} changes seen)`);
  const stats = stream.stats();
  return {
    seconds: done.seconds,
    events,
    clientCpu: (done.cpu.user + done.cpu.system) / 1e6,
    firstChangeSeconds: firstChange === undefined ? done.seconds : (firstChange - started) / 1000,
    rssPeakMiB: rssPeak.bytes / 2 ** 20,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
    streamedTransactions: stats.streamedTransactions,
    spilledTransactions: stats.spilledTransactions,
  };
}

/** pg_recvlogical `--start` on `slot` to `endLsn`, output to /dev/null; timed from spawn to exit. */
async function decodeRecvlogical(url: string, slot: string, endLsn: string, system: DecodeSystem) {
  const options = system.plugin === 'pgoutput' ? PGOUTPUT_OPTIONS.flatMap((o) => ['-o', o]) : [];
  const started = performance.now();
  await run(
    PG_RECVLOGICAL,
    ['-d', url, '-S', slot, '--start', '--no-loop', `--endpos=${endLsn}`, ...options, '-f', '/dev/null'],
    { timeout: TIMEOUT_MS },
  );
  return { seconds: (performance.now() - started) / 1000 };
}

/**
 * The same decoding by a backend of the source through the SQL interface, to the end LSN: what the
 * walsender's decoding costs without sending each message to a client. Counts the inserts among
 * the messages (pgoutput's 'I').
 */
async function decodeInServer(url: string, slot: string, endLsn: string) {
  const options = PGOUTPUT_OPTIONS.flatMap((o) => o.split('=')).map((v) => `'${v}'`);
  const started = performance.now();
  const [row] = await sqlOn<{ inserts: number }>(
    url,
    `SELECT count(*) FILTER (WHERE get_byte(data, 0) = 73)::int AS inserts
       FROM pg_logical_slot_get_binary_changes($1, $2::pg_lsn, NULL, ${options.join(', ')})`,
    [slot, endLsn],
  );
  return { seconds: (performance.now() - started) / 1000, events: row?.inserts ?? 0 };
}

/** Confirms the slot reached the end (pg_recvlogical reports its position as it exits). */
async function slotConfirmed(url: string, slot: string): Promise<string> {
  const [row] = await sqlOn<{ lsn: string | null }>(
    url,
    'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
  return row?.lsn ?? '0/0';
}

/**
 * The decode benchmark: for each workload, fresh slots for every system and repeat are made on one
 * database, the workload is written while none is read, and each slot is then read from its start
 * to the same end LSN by its system, one at a time, the order reversed from one repeat to the next.
 */
export async function runDecodeBenchmark(options: {
  sourceAdminUrl: string;
  sinkAdminUrl: string;
  scale: number;
  runs: number;
  log: (message: string) => void;
}): Promise<DecodeResults> {
  const { sourceAdminUrl, sinkAdminUrl, runs, log } = options;
  if (!existsSync(PG_RECVLOGICAL)) throw new Error(`decode: ${PG_RECVLOGICAL} is missing`);
  const tool = (await run(PG_RECVLOGICAL, ['--version'])).stdout.trim();
  const load = loadavg()[0] ?? 0;
  const url = await createDatabase(sourceAdminUrl, DATABASE);
  await sqlOn(url, BENCH_TABLE_DDL);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const [schema, table] = BENCH_TABLE.split('.') as [string, string];
    await ensurePublication(client, PUBLICATION, [{ schema, table }]);
  } finally {
    await client.end();
  }
  const [sourcePid, sinkPid] = await Promise.all([
    postmasterPid(sourceAdminUrl),
    postmasterPid(sinkAdminUrl),
  ]);
  const systems = DECODE_SYSTEMS;
  const infos: DecodeWorkloadInfo[] = [];
  const results: DecodeRun[] = [];
  try {
    for (const [w, workload] of workloads(options.scale).entries()) {
      await sqlOn(url, `TRUNCATE ${BENCH_TABLE}`);
      for (let r = 1; r <= runs; r++) {
        for (const system of systems) {
          await sqlOn(url, 'SELECT pg_create_logical_replication_slot($1, $2)', [
            slotFor(system, w, r),
            system.plugin,
          ]);
        }
      }
      log(`decode: writing ${workload.label} with ${runs * systems.length} slots waiting`);
      const writeSeconds = await writeBacklog(url, workload);
      const endLsn = await currentWalLsn(url);
      const [wal] = await sqlOn<{ bytes: string }>(
        url,
        `SELECT max(pg_wal_lsn_diff($1::pg_lsn, restart_lsn)) AS bytes FROM pg_replication_slots
          WHERE slot_name LIKE '${SLOT_PREFIX}w${w}_%'`,
        [endLsn],
      );
      infos.push({ workload, writeSeconds, walMiB: Number(wal?.bytes) / 2 ** 20, endLsn });
      for (let r = 1; r <= runs; r++) {
        for (const system of (r + w) % 2 === 1 ? systems : [...systems].reverse()) {
          const slot = slotFor(system, w, r);
          const runLoad = loadavg()[0] ?? 0;
          const before: CpuSample = cpuSample(sourcePid, sinkPid);
          let ours: Awaited<ReturnType<typeof decodeOurs>> | undefined;
          let seconds: number;
          let events = workload.rows;
          if (system.kind === 'in-server') {
            ({ seconds, events } = await decodeInServer(url, slot, endLsn));
            if (events !== workload.rows)
              throw new Error(`the server decoded ${events} inserts, expected ${workload.rows}`);
          } else if (system.kind === 'ours') {
            ours = await decodeOurs(url, slot, endLsn);
            seconds = ours.seconds;
            if (ours.events !== workload.rows)
              throw new Error(`ours decoded ${ours.events} changes, expected ${workload.rows}`);
          } else {
            seconds = (await decodeRecvlogical(url, slot, endLsn, system)).seconds;
            const confirmed = await slotConfirmed(url, slot);
            if (compareLsn(confirmed, endLsn) < 0)
              throw new Error(`${system.label}: slot confirmed ${confirmed} only, expected ${endLsn}`);
          }
          // The walsender's time is the postmaster's once it has reaped it.
          await sleep(CPU_SETTLE_MS);
          const cpu = cpuUsed(before, cpuSample(sourcePid, sinkPid));
          await dropSlot(url, slot);
          if (ours) events = ours.events;
          const result: DecodeRun = {
            run: r,
            workload,
            system,
            seconds,
            events,
            eventsPerSecond: events / seconds,
            load: runLoad,
            clientCpu: ours ? ours.clientCpu : system.kind === 'in-server' ? 0 : cpu.children,
            sourceCpu: cpu.source,
            ...(ours
              ? {
                  firstChangeSeconds: ours.firstChangeSeconds,
                  rssPeakMiB: ours.rssPeakMiB,
                  maxRssMiB: ours.maxRssMiB,
                  streamedTransactions: ours.streamedTransactions,
                  spilledTransactions: ours.spilledTransactions,
                }
              : {}),
          };
          log(
            `  run ${r}/${runs}, ${system.label}: ${seconds.toFixed(2)} s, ${rate(result.eventsPerSecond)} events/s; ` +
              `CPU s client ${result.clientCpu.toFixed(1)}, source ${result.sourceCpu.toFixed(1)}`,
          );
          results.push(result);
        }
      }
    }
  } finally {
    await dropDecodeSlots(url);
  }
  return { tool, systems, workloads: infos, results, load };
}
