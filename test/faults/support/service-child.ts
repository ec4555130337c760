import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../support/pg-cluster.js';
import { jsonRequest } from '../../support/service.js';

const CLI = fileURLToPath(new URL('../../../src/cli.ts', import.meta.url));

/** How a service process ended when nobody asked it to: a crash the suite reports. */
export interface UnexpectedExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/**
 * `replicator serve` in a child process (from the sources, through tsx) on a metadata database of
 * its own, so that it can be killed with SIGKILL, frozen with SIGSTOP and started again on the
 * same port and data directory, as an operator's supervisor would.
 */
export class ServiceChild {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'replicator-faults-'));
  readonly unexpectedExits: UnexpectedExit[] = [];
  private child: ChildProcess | undefined;
  private expectingExit = false;
  private frozen = false;
  private log = '';

  private constructor(
    readonly port: number,
    private readonly databaseUrl: string,
    private readonly leaseTtl: string,
  ) {}

  static async start(databaseUrl: string, options: { leaseTtl?: string } = {}): Promise<ServiceChild> {
    const service = new ServiceChild(await freePort(), databaseUrl, options.leaseTtl ?? '3s');
    await service.start();
    return service;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Running and not frozen: it can answer. */
  get responsive(): boolean {
    return this.running && !this.frozen;
  }

  /** The most memory the running process has held so far (VmHWM, its peak resident set), in MiB. */
  peakRssMiB(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
    if (kib === undefined) throw new Error(`no VmHWM for process ${this.pid}`);
    return Number(kib) / 1024;
  }

  /** The last of what it printed (warnings and errors), for failure messages. */
  output(): string {
    return this.log;
  }

  /** One API request; it gives up after 15 s, since a frozen process accepts connections but never answers. */
  request<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    return Promise.race([
      jsonRequest(this.url, method, path, body),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`${method} ${path}: no answer in 15 s`)), 15_000).unref(),
      ),
    ]);
  }

  /** Starts the process (again) and waits until /v1/health answers. */
  async start(): Promise<void> {
    if (this.running) throw new Error('the service is already running');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        'serve',
        '--listen',
        `127.0.0.1:${this.port}`,
        '--data-dir',
        this.dataDir,
        '--database-url',
        this.databaseUrl,
        '--log-level',
        process.env.FAULTS_LOG_LEVEL ?? 'warn',
        '--lease-ttl',
        this.leaseTtl,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    this.expectingExit = false;
    // FAULTS_LOG_DIR keeps every line each process printed, for reading a failed scenario afterwards.
    const logDir = process.env.FAULTS_LOG_DIR;
    if (logDir) mkdirSync(logDir, { recursive: true });
    const logFile = logDir && join(logDir, `service-${this.port}.log`);
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-30_000);
      if (logFile) appendFileSync(logFile, chunk);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('exit', (code, signal) => {
      if (!this.expectingExit) this.unexpectedExits.push({ code, signal, output: this.log.slice(-6_000) });
    });
    const deadline = Date.now() + 240_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`the service exited at start (${child.exitCode ?? child.signalCode}):\n${this.log}`);
      const health = await this.request('GET', '/v1/health').catch(() => undefined);
      if (health?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`the service did not become healthy in 240 s:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** SIGKILL: the process ends at once, nothing flushed, nothing said to the servers. */
  async kill(): Promise<void> {
    await this.signalAndWait('SIGKILL');
  }

  /** SIGTERM: a clean stop. */
  async stop(): Promise<void> {
    await this.signalAndWait('SIGTERM');
  }

  /** SIGSTOP: frozen where it is, its connections open and silent. */
  freeze(): void {
    this.frozen = true;
    this.child?.kill('SIGSTOP');
  }

  /** SIGCONT: it goes on from where it was frozen, unaware of the time that passed. */
  thaw(): void {
    this.frozen = false;
    this.child?.kill('SIGCONT');
  }

  /** Kills it if it runs and removes its data directory. */
  async dispose(): Promise<void> {
    if (this.running) {
      this.thaw();
      await this.signalAndWait('SIGKILL');
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  private async signalAndWait(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    this.expectingExit = true;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}
