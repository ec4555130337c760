import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './pg-cluster.js';

const CLI = join(process.cwd(), 'src/cli.ts');

/** Runs the CLI to completion (through tsx, from source) and returns its exit code and output. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * Runs the CLI without blocking this process, for commands against a service that runs in it
 * (spawnSync would stop the service from answering).
 */
export function runCliAsync(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Starts `replicator serve` as a child process and waits until /v1/health answers. */
export async function startCliServer(
  args: string[],
  port: number,
): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', String(port), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    output += c.toString();
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/health`);
      if (res.status === 200) return { child, output: () => output };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not become healthy:\n${output}`);
}

/** Sends a signal and resolves with the exit code. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}

/**
 * One service process of a fleet on the metadata database `store`, with a short lease: short for
 * a quick take-over, long enough that a busy 2-core machine does not starve a live worker's
 * heartbeat past it.
 */
export async function startFleetInstance(store: string, dataDir: string, keyFile: string) {
  const port = await freePort();
  const server = await startCliServer(
    [
      '--database-url',
      store,
      '--data-dir',
      dataDir,
      '--auth-master-key-file',
      keyFile,
      '--lease-ttl',
      '5s',
      '--log-level',
      'warn',
    ],
    port,
  );
  return { port, server };
}
