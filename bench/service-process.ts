import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from '../test/support/pg-cluster.js';
import { jsonRequest } from '../test/support/service.js';
import {
  MEMORY_USAGE_FILE_ENV,
  type MemoryUsage,
  memoryUsageProbeArgs,
  readMemoryUsage,
} from './memory-usage-probe.js';
import type { ServiceClient } from './service-api.js';

/**
 * How the service process is started: the build in dist/ (`node dist/src/cli.js`, as `npm start`
 * runs it; built first), or the TypeScript sources through tsx (whose loader adds to the memory).
 */
export type ServiceCli = 'dist' | 'tsx';

/** `MEMORY_CLI`: `dist` (default) or `tsx`. */
export function serviceCli(env: NodeJS.ProcessEnv = process.env): ServiceCli {
  const cli = env.MEMORY_CLI ?? 'dist';
  if (cli !== 'tsx' && cli !== 'dist') throw new Error(`MEMORY_CLI must be dist or tsx, got '${cli}'`);
  return cli;
}

/** The command line that starts the service, for the report and for spawn. */
export function serviceCommand(cli: ServiceCli): string[] {
  return cli === 'dist' ? ['dist/src/cli.js'] : ['--import', 'tsx', 'src/cli.ts'];
}

/**
 * For `dist`: compiles the current sources into dist/ (`tsc -p tsconfig.build.json`, what
 * `npm run build` runs). tsc writes its output even when it reports type errors; that output is
 * used then, with a warning, as long as it was written now.
 */
export async function prepareServiceCli(cli: ServiceCli, log: (message: string) => void): Promise<void> {
  if (cli !== 'dist') return;
  const started = Date.now();
  log('building the service into dist/ (tsc -p tsconfig.build.json)');
  try {
    await run(join('node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json']);
  } catch (error) {
    const built = existsSync(CLI_JS) && statSync(CLI_JS).mtimeMs >= started - 1000;
    const output = String((error as { stdout?: string }).stdout ?? error);
    if (!built) throw new Error(`the build failed:\n${output}`);
    log(`  tsc reported errors, its output is used anyway:\n${output.split('\n').slice(0, 10).join('\n')}`);
  }
}

const CLI_JS = join('dist', 'src', 'cli.js');
const run = promisify(execFile);

/** Memory of a process from /proc/<pid>/status, in KiB. */
export interface ProcessMemory {
  /** VmRSS: resident now. */
  rssKiB: number;
  /** VmHWM: the highest VmRSS since the process started. */
  hwmKiB: number;
}

export function processMemory(pid: number): ProcessMemory | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
    const memory = { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
    return Number.isNaN(memory.rssKiB) ? undefined : memory;
  } catch {
    return undefined; // gone
  }
}

/** Our service in a process of its own (`replicator serve`), so that its memory is its own. */
export interface ServiceProcess extends ServiceClient {
  pid: number;
  url: string;
  /** What it printed last (stdout and stderr), for error messages. */
  output(): string;
  stop(): Promise<void>;
  /** Ends it with SIGKILL, as a crash would, leaving its data directory as it is. */
  kill(): Promise<void>;
  /** Its `process.memoryUsage()`, at most 50 ms old (undefined before the first figures). */
  usage(): MemoryUsage | undefined;
}

/**
 * Starts `replicator serve` on a free port with its metadata store at `databaseUrl` and a fresh
 * data directory (or `dataDir`, which stays the caller's), log level `warn`, and returns once
 * `GET /v1/health` answers 200.
 */
export async function startServiceProcess(
  databaseUrl: string,
  cli: ServiceCli,
  options: { dataDir?: string } = {},
): Promise<ServiceProcess> {
  if (cli === 'dist' && !existsSync('dist/src/cli.js'))
    throw new Error('MEMORY_CLI=dist: run npm run build first');
  const port = await freePort();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'replicator-bench-'));
  const usageDir = mkdtempSync(join(tmpdir(), 'replicator-bench-usage-'));
  const usageFile = join(usageDir, 'memory-usage.json');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...memoryUsageProbeArgs(),
      ...serviceCommand(cli),
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--data-dir',
      dataDir,
      '--database-url',
      databaseUrl,
      '--log-level',
      'warn',
      // As the tests: a pipeline of a process that ended is taken over soon.
      '--lease-ttl',
      '3s',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, [MEMORY_USAGE_FILE_ENV]: usageFile } },
  );
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    rmSync(usageDir, { recursive: true, force: true });
  };
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`the service exited with ${child.exitCode} at start:\n${output}`);
    }
    const health = await jsonRequest(url, 'GET', '/v1/health').catch(() => undefined);
    if (health?.status === 200) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the service did not become healthy in 60 s:\n${output}`);
    }
    await sleep(200);
  }
  return {
    pid: child.pid as number,
    url,
    request: (method, path, body) => jsonRequest(url, method, path, body),
    output: () => output,
    stop,
    kill,
    usage: () => readMemoryUsage(usageFile),
  };
}
