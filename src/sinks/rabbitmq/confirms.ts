import type { ConfirmChannel, Message, Options } from 'amqplib';
import type { Broker } from './broker.js';
import { BrokerError } from './broker-errors.js';

/** Messages published and not yet confirmed, at most: bounds what a large partition keeps in memory. */
const MAX_UNCONFIRMED = 10_000;

/** One message to publish. */
export interface Outgoing {
  exchange: string;
  routingKey: string;
  content: Buffer;
  options: Options.Publish & { messageId: string };
}

/**
 * The messages of one batch or partition on one confirm channel, published with the channel's
 * back-pressure respected and each confirm counted. It fails at the first nack, the first message
 * returned unroutable (`mandatory`), a closed channel or a lost connection, whichever comes first,
 * and stops publishing then. RabbitMQ sends a message's return before its ack, so a flight whose
 * every message is acked has had all its returns.
 */
export class Flight {
  private pending = 0;
  private failure: Error | undefined;
  private needsDrain = false;
  private channelError: unknown;
  private lastProgress = Date.now();
  private wake: (() => void) | undefined;
  private readonly detach: (() => void)[] = [];

  constructor(
    private readonly broker: Broker,
    private readonly channel: ConfirmChannel,
  ) {
    broker.throwIfLost();
    // biome-ignore lint/suspicious/noExplicitAny: amqplib types its events' arguments as any.
    const listen = (event: string, listener: (...args: any[]) => void) => {
      channel.on(event, listener);
      this.detach.push(() => channel.off(event, listener));
    };
    listen('return', (message: Message) => this.fail(unroutable(message)));
    listen('drain', () => {
      this.needsDrain = false;
      this.progressed();
    });
    // 'error' says why the broker closed the channel; 'close' follows it, or comes alone.
    listen('error', (error: unknown) => {
      this.channelError = error;
    });
    listen('close', () =>
      this.fail(broker.failureOf(this.channelError ?? new Error('the channel was closed'))),
    );
    this.detach.push(broker.onLost((error) => this.fail(error)));
  }

  /**
   * Publishes one message: at once when the channel has room for it (returning nothing, so that a
   * batch pays no promise per message), else once it has. Throws the flight's failure, if any.
   */
  publish(message: Outgoing): Promise<void> | undefined {
    if (this.failure) throw this.failure;
    if (this.needsDrain || this.pending >= MAX_UNCONFIRMED) {
      return this.until(() => !this.needsDrain && this.pending < MAX_UNCONFIRMED).then(() =>
        this.send(message),
      );
    }
    this.send(message);
    return undefined;
  }

  /** Waits for every message's confirm; throws the flight's failure, if any. */
  async settled(): Promise<void> {
    await this.until(() => this.pending === 0);
  }

  /** Stops listening to the channel and the connection. */
  end(): void {
    for (const undo of this.detach.splice(0)) undo();
  }

  private send(message: Outgoing): void {
    const { messageId } = message.options;
    this.pending++;
    let sent: boolean;
    try {
      sent = this.channel.publish(
        message.exchange,
        message.routingKey,
        message.content,
        message.options,
        (error: unknown) => this.confirmed(messageId, error),
      );
    } catch (error) {
      // A channel that closed refuses at once; the close says why.
      this.fail(this.broker.failureOf(this.channelError ?? error));
      throw this.failure;
    }
    this.progressed();
    if (!sent) this.needsDrain = true;
  }

  private confirmed(messageId: string, error: unknown): void {
    if (this.failure) return;
    if (error) {
      // A callback's error is a nack, or the channel closing under it (then 'close' says why).
      if (error instanceof Error && error.message === 'message nacked') {
        this.fail(
          new BrokerError(
            `RabbitMQ at ${this.broker.settings.endpoint} refused message ${messageId} (nack): a queue refused it (x-overflow reject-publish?) or the broker failed to store it`,
          ),
        );
      } else {
        this.fail(this.broker.failureOf(this.channelError ?? error));
      }
      return;
    }
    this.pending--;
    this.progressed();
  }

  private progressed(): void {
    this.lastProgress = Date.now();
    this.wake?.();
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.wake?.();
  }

  /**
   * Waits for `ready`, or the flight's failure. Publishing that makes no progress (no confirm, no
   * room in the channel's buffer) for the stall timeout gives the connection up.
   */
  private async until(ready: () => boolean): Promise<void> {
    const timeoutMs = this.broker.stallTimeoutMs;
    while (!this.failure && !ready()) {
      const idle = Date.now() - this.lastProgress;
      if (idle >= timeoutMs) {
        const error = this.broker.stalled('confirmed nothing');
        this.fail(error);
        this.broker.abandon(error);
        break;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs - idle);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    if (this.failure) throw this.failure;
  }
}

function unroutable(message: Message): BrokerError {
  const { exchange, routingKey, replyCode, replyText } = message.fields as Message['fields'] & {
    replyCode?: number;
    replyText?: string;
  };
  return new BrokerError(
    `no queue took message ${String(message.properties.messageId)} published to exchange '${exchange}' with routing key '${routingKey}' (${replyCode ?? ''} ${replyText ?? 'returned'}): bind a queue that matches it, or set the sink property mandatory to false to let the broker drop such messages`,
  );
}
