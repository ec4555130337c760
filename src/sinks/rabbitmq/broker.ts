import type { Socket } from 'node:net';
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { BrokerError, channelClosed, cleanMessage, connectFailed, connectionLost } from './broker-errors.js';
import type { ExchangeType } from './config.js';
import type { RabbitmqSettings } from './rabbitmq-connection-type.js';

/**
 * How long the broker may leave a request unanswered (a channel to open, an exchange to declare,
 * a confirm, room in the channel's buffer) before the connection is given up: a broker that
 * blocks publishers (a memory or disk alarm) or a network that swallows packets must not hang the
 * pipeline. The failure counts as an outage (ETIMEDOUT): the runtime connects again and retries.
 */
export const STALL_TIMEOUT_MS = 60_000;
/** How long a polite close may take before the socket is simply destroyed. */
const CLOSE_TIMEOUT_MS = 5_000;

export interface BrokerOptions {
  stallTimeoutMs?: number;
}

/**
 * One connection to the broker and its confirm channels. A lost connection is never reopened
 * here: it fails every publish under way at once (the runtime opens the sink again), and every
 * later call. Channels are lent one operation at a time, so that a channel's returns and
 * back-pressure belong to the batch or partition that uses it; a snapshot copies partitions in
 * parallel while the stream may publish too.
 */
export class Broker {
  private lostError: BrokerError | undefined;
  private readonly idle: ConfirmChannel[] = [];
  /** Channels closed by either side, so that an idle one is not lent again. */
  private readonly closed = new WeakSet<ConfirmChannel>();
  private readonly lostListeners = new Set<(error: BrokerError) => void>();
  private closing = false;
  /** Why the broker holds back publishers, while it does (a memory or disk alarm). */
  blockedReason: string | undefined;

  private constructor(
    private readonly model: ChannelModel,
    readonly settings: RabbitmqSettings,
    readonly stallTimeoutMs: number,
  ) {
    // 'error' comes before 'close' and says why; either marks the connection lost.
    model.on('error', (error: Error) => this.lose(error));
    model.on('close', (error?: Error) => this.lose(error ?? new Error('the connection was closed')));
    model.on('blocked', (reason: string) => {
      this.blockedReason = reason;
    });
    model.on('unblocked', () => {
      this.blockedReason = undefined;
    });
  }

  static async connect(settings: RabbitmqSettings, options: BrokerOptions = {}): Promise<Broker> {
    let model: ChannelModel;
    try {
      model = await amqp.connect(settings.connect, settings.socket);
    } catch (error) {
      throw connectFailed(settings, error);
    }
    return new Broker(model, settings, options.stallTimeoutMs ?? STALL_TIMEOUT_MS);
  }

  /** Why the connection is gone, if it is. */
  get lost(): BrokerError | undefined {
    return this.lostError;
  }

  /** Calls `listener` once when the connection is lost; returns the way to stop listening. */
  onLost(listener: (error: BrokerError) => void): () => void {
    this.lostListeners.add(listener);
    return () => this.lostListeners.delete(listener);
  }

  /** Runs `use` with a confirm channel of its own; the channel is kept for the next use if it is still open. */
  async withChannel<T>(use: (channel: ConfirmChannel) => Promise<T>): Promise<T> {
    this.throwIfLost();
    const channel = this.takeIdle() ?? (await this.openChannel());
    let succeeded = false;
    try {
      const result = await use(channel);
      succeeded = true;
      return result;
    } finally {
      // A channel whose use failed may hold confirms or returns of that use still to come.
      if (succeeded && !this.closed.has(channel) && !this.lostError && !this.closing) this.idle.push(channel);
      else this.closeChannel(channel);
    }
  }

  /**
   * Declares the exchange durable, of `type`; one that exists with that type (and durable) is taken
   * as it is. A user allowed to publish but not to declare (no `configure` permission) can still
   * use an exchange that exists: then only its existence is checked.
   */
  async declareExchange(name: string, type: ExchangeType): Promise<void> {
    try {
      await this.onScratchChannel((channel) => channel.assertExchange(name, type, { durable: true }));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 406) {
        throw new BrokerError(
          `exchange '${name}' exists in RabbitMQ at ${this.settings.endpoint} with another type or durability than a durable ${type} exchange: ${cleanMessage(error, this.settings)}; set exchange_type to its type, or delete it to let the sink declare it`,
        );
      }
      if (code !== 403) throw this.failureOf(error);
      try {
        await this.onScratchChannel((channel) => channel.checkExchange(name));
      } catch (missing) {
        if ((missing as { code?: unknown }).code === 404) {
          throw new BrokerError(
            `exchange '${name}' does not exist in RabbitMQ at ${this.settings.endpoint}, and the sink may not declare it (${cleanMessage(error, this.settings)}): declare it, or grant the user the configure permission`,
          );
        }
        throw this.failureOf(missing);
      }
    }
  }

  /** The error a failed channel operation stands for: the lost connection's, or the broker's own. */
  failureOf(error: unknown): BrokerError {
    if (this.lostError) return this.lostError;
    if (error instanceof BrokerError) return error;
    return channelClosed(this.settings, error);
  }

  throwIfLost(): void {
    if (this.lostError) throw this.lostError;
  }

  /**
   * Gives the connection up because the broker stopped answering: every operation on it fails
   * with `error`, and its socket is destroyed (a polite close would wait for that broker too).
   */
  abandon(error: BrokerError): void {
    if (this.lostError) return;
    this.markLost(error);
    this.socket()?.destroy();
  }

  /** A failure for a request the broker left unanswered for the stall timeout. */
  stalled(what: string): BrokerError {
    const blocked = this.blockedReason === undefined ? '' : `: it blocks publishers (${this.blockedReason})`;
    return new BrokerError(
      `RabbitMQ at ${this.settings.endpoint} ${what} for ${this.stallTimeoutMs / 1000} s${blocked}`,
      'ETIMEDOUT',
    );
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.lostError) return;
    this.markLost(
      new BrokerError(`the connection to RabbitMQ at ${this.settings.endpoint} was closed by the sink`),
    );
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      this.model.close().then(
        () => true,
        () => true,
      ),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), CLOSE_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!closed) this.socket()?.destroy();
  }

  /** Runs a request to the broker, giving the connection up if it is not answered in time. */
  private async bounded<T>(request: Promise<T>, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = this.stalled(`did not answer ${what}`);
        this.abandon(error);
        reject(error);
      }, this.stallTimeoutMs);
    });
    try {
      return await Promise.race([request, stalled]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A channel for a declaration: the broker closes it on a refusal, so it is never reused. */
  private async onScratchChannel<T>(use: (channel: ConfirmChannel) => Promise<T>): Promise<T> {
    const channel = await this.openChannel();
    try {
      return await this.bounded(use(channel), 'a declaration');
    } finally {
      this.closeChannel(channel);
    }
  }

  private async openChannel(): Promise<ConfirmChannel> {
    this.throwIfLost();
    let channel: ConfirmChannel;
    try {
      channel = await this.bounded(this.model.createConfirmChannel(), 'the opening of a channel');
    } catch (error) {
      throw this.failureOf(error);
    }
    // Without a listener, amqplib would pass a channel's error on to the connection and close it.
    channel.on('error', () => undefined);
    channel.once('close', () => this.closed.add(channel));
    return channel;
  }

  /** An idle channel the broker has not closed meanwhile. */
  private takeIdle(): ConfirmChannel | undefined {
    for (let channel = this.idle.pop(); channel; channel = this.idle.pop()) {
      if (!this.closed.has(channel)) return channel;
    }
    return undefined;
  }

  /** Closes a channel in the background: nothing waits for the broker's answer. */
  private closeChannel(channel: ConfirmChannel): void {
    if (this.lostError || this.closed.has(channel)) return;
    channel.close().catch(() => undefined);
  }

  private socket(): Socket | undefined {
    return (this.model as unknown as { connection?: { stream?: Socket } }).connection?.stream;
  }

  private lose(cause: Error): void {
    if (!this.lostError) this.markLost(connectionLost(this.settings, cause));
  }

  private markLost(error: BrokerError): void {
    this.lostError = error;
    this.idle.length = 0;
    for (const listener of [...this.lostListeners]) listener(error);
    this.lostListeners.clear();
  }
}
