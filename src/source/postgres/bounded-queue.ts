/**
 * A bounded single-producer queue read as an async iterable: the producer awaits push() while
 * the queue is full, which is how backpressure from a slow consumer reaches the producer.
 */
export class BoundedQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly readers: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  private readonly writers: (() => void)[] = [];
  private failure: { error: unknown } | undefined;
  private ended = false;

  /** @param capacity items held before push() starts waiting */
  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new RangeError('capacity must be at least 1');
  }

  /** Items waiting for the consumer. */
  get length(): number {
    return this.items.length;
  }

  /** Whether end() or fail() was called. */
  get closed(): boolean {
    return this.ended || this.failure !== undefined;
  }

  /**
   * Enqueues an item and resolves once the queue has room again. Resolves false (dropping the
   * item) when the queue is closed, so the producer knows to stop.
   */
  async push(item: T): Promise<boolean> {
    if (this.closed) return false;
    const reader = this.readers.shift();
    if (reader) reader.resolve({ value: item, done: false });
    else this.items.push(item);
    while (this.items.length >= this.capacity && !this.closed) {
      await new Promise<void>((resolve) => this.writers.push(resolve));
    }
    return !this.closed;
  }

  /** No more items: the consumer gets those queued (unless `discard`), then the end. */
  end(options: { discard?: boolean } = {}): void {
    if (this.closed) return;
    this.ended = true;
    if (options.discard) this.items.length = 0;
    this.settleWaiters();
  }

  /** The consumer gets the queued items, then `error`. The first failure wins. */
  fail(error: unknown): void {
    if (this.closed) return;
    this.failure = { error };
    this.settleWaiters();
  }

  private settleWaiters(): void {
    for (const writer of this.writers.splice(0)) writer();
    if (this.items.length > 0) return;
    for (const reader of this.readers.splice(0)) this.settle(reader);
  }

  private settle(reader: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }): void {
    if (this.failure) reader.reject(this.failure.error);
    else reader.resolve({ value: undefined, done: true });
  }

  /** Takes the next item, waiting for one; rejects with the failure once the queue is drained. */
  next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) {
      const value = this.items.shift() as T;
      this.writers.shift()?.();
      return Promise.resolve({ value, done: false });
    }
    if (this.closed) {
      return new Promise((resolve, reject) => this.settle({ resolve, reject }));
    }
    return new Promise((resolve, reject) => this.readers.push({ resolve, reject }));
  }

  /** Iterating does not own the queue: breaking out of a loop leaves it open for another loop. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return { next: () => this.next(), return: async () => ({ value: undefined, done: true }) };
  }
}
