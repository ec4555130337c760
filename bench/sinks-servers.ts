import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { clockTicks, procStat } from './cpu-usage.js';
import { NATS_URL } from './nats-target.js';
import { AMQP_URL } from './rabbitmq-target.js';
import { REDIS_URL } from './redis-target.js';
import { MYSQL_ADMIN } from './sql-targets.js';

const run = promisify(execFile);

/**
 * Starts the machine's MariaDB (127.0.0.1:3306), Redis (127.0.0.1:6379), NATS (127.0.0.1:4222)
 * and RabbitMQ (127.0.0.1:5672) if they are installed but not listening, as the test command does
 * (`test/support/ensure-sink-servers.sh`).
 */
export async function ensureSinkServers(): Promise<void> {
  await run('bash', ['test/support/ensure-sink-servers.sh']);
}

/** The sink servers as the report names them, with the settings that weigh on their speed. */
export interface SinkServers {
  mariadb: { version: string; flushAtCommit: string; bufferPoolMiB: number; logBin: string; pid?: number };
  redis: { version: string; appendonly: string; save: string; pid?: number };
  nats: { version: string; pid?: number };
  rabbitmq: { version: string; erlang: string; pid?: number };
}

/** The pid of the single running process named `comm`, if there is one. */
function pidByName(comm: string): number | undefined {
  const pids = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm;
      } catch {
        return false;
      }
    })
    .map(Number);
  return pids.length === 1 ? pids[0] : undefined;
}

async function mariadbServer(): Promise<SinkServers['mariadb']> {
  const db = await mysql.createConnection(MYSQL_ADMIN);
  try {
    const [rows] = await db.query<RowDataPacket[]>(
      'SELECT VERSION() AS v, @@innodb_flush_log_at_trx_commit AS flush, @@innodb_buffer_pool_size AS pool, @@log_bin AS log_bin',
    );
    const row: Record<string, unknown> = rows[0] ?? {};
    return {
      version: String(row.v),
      flushAtCommit: String(row.flush),
      bufferPoolMiB: Number(row.pool) / 2 ** 20,
      logBin: Number(row.log_bin) ? 'ON' : 'OFF',
      ...optionalPid(pidByName('mariadbd')),
    };
  } finally {
    await db.end();
  }
}

async function redisServer(): Promise<SinkServers['redis']> {
  const redis = new Redis(REDIS_URL);
  try {
    const info = await redis.info('server');
    const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? 'unknown';
    const config = async (name: string) => ((await redis.config('GET', name)) as string[])[1] ?? 'unknown';
    return {
      version: field('redis_version'),
      appendonly: await config('appendonly'),
      save: await config('save'),
      ...optionalPid(Number(field('process_id')) || undefined),
    };
  } finally {
    await redis.quit();
  }
}

/** The NATS server's version, from the connection's INFO. */
async function natsServer(): Promise<SinkServers['nats']> {
  const nc = await connect({ servers: NATS_URL });
  try {
    return {
      version: nc.info?.version ?? 'unknown',
      ...optionalPid(pidByName('nats-server')),
    };
  } finally {
    await nc.close();
  }
}

/** RabbitMQ's version and its Erlang's, from the connection's server properties. */
async function rabbitmqServer(): Promise<SinkServers['rabbitmq']> {
  const connection = await amqp.connect(AMQP_URL);
  try {
    const properties = connection.connection.serverProperties;
    return {
      version: properties.version ?? 'unknown',
      erlang: properties.platform ?? 'unknown',
      ...optionalPid(pidByName('beam.smp')),
    };
  } finally {
    await connection.close();
  }
}

export async function sinkServers(): Promise<SinkServers> {
  return {
    mariadb: await mariadbServer(),
    redis: await redisServer(),
    nats: await natsServer(),
    rabbitmq: await rabbitmqServer(),
  };
}

const optionalPid = (pid: number | undefined) => (pid === undefined ? {} : { pid });

/**
 * CPU seconds used so far by `pid` (all its threads), the children it has waited for, and its
 * live children: a PostgreSQL cluster by its postmaster, or a MariaDB, Redis, NATS or RabbitMQ
 * server.
 */
export function treeCpuSeconds(pid: number | 'self'): number {
  const main = procStat(pid);
  if (!main) return 0;
  let total = main.own + main.reaped;
  if (pid !== 'self') {
    for (const child of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      const s = procStat(Number(child));
      if (s?.ppid === pid) total += s.own;
    }
  }
  return total / clockTicks();
}
