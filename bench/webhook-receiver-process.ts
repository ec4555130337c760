import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { TalliedEnvelope } from './envelope-tally.js';

/** What the receiver has taken so far. */
export interface ReceiverState {
  /** Requests answered 200, and 401 (a signature missing, stale or wrong). */
  accepted: number;
  rejected: number;
  /** Events of the accepted requests, and the distinct ids of the `read` ones and of the others. */
  events: number;
  readIds: number;
  changeIds: number;
}

const SCRIPT = fileURLToPath(new URL('./webhook-receiver.ts', import.meta.url));

/**
 * bench/webhook-receiver.ts in a process of its own (through tsx, as the sources run), which
 * verifies every request's signature with `secret`; asked for what it holds over IPC.
 */
export class WebhookReceiverProcess {
  /** Answers of the child, to the asks in the order sent (it answers each at once, in turn). */
  private readonly waiting: { resolve: (answer: unknown) => void; reject: (error: Error) => void }[] = [];
  private exited: Error | undefined;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.on('message', (message: unknown) => this.waiting.shift()?.resolve(message));
    child.on('exit', (code, signal) => {
      this.exited = new Error(`the webhook receiver exited (${signal ?? code})`);
      for (const w of this.waiting.splice(0)) w.reject(this.exited);
    });
  }

  static async start(secret: string): Promise<WebhookReceiverProcess> {
    // The secret goes by the environment: a command line is anyone's to read.
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      env: { ...process.env, WEBHOOK_RECEIVER_SECRET: secret },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const [message] = (await Promise.race([
      once(child, 'message'),
      once(child, 'exit').then(([code]) => {
        throw new Error(`the webhook receiver exited (${code}) before it listened`);
      }),
    ])) as [{ port: number }];
    return new WebhookReceiverProcess(child, message.port);
  }

  get pid(): number {
    return this.child.pid as number;
  }

  state(): Promise<ReceiverState> {
    return this.ask<{ state: ReceiverState }>('state').then((a) => a.state);
  }

  /** The events other than `read`, in the order received. */
  changes(): Promise<TalliedEnvelope[]> {
    return this.ask<{ changes: TalliedEnvelope[] }>('changes').then((a) => a.changes);
  }

  async stop(): Promise<void> {
    if (this.exited || this.child.exitCode !== null) return;
    const exit = once(this.child, 'exit');
    this.child.kill();
    await exit;
  }

  private ask<T>(ask: string): Promise<T> {
    if (this.exited) return Promise.reject(this.exited);
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ resolve: resolve as (answer: unknown) => void, reject });
      this.child.send({ ask });
    });
  }
}
