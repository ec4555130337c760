import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to a server, that a test can take down and bring back: a sink server that
 * goes away mid-stream, without stopping the real one (which other test files share).
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Each client with its upstream, for holding what clients send. */
  private readonly pairs = new Map<Socket, Socket>();
  /** What each client sent first: a PostgreSQL client's startup message. */
  private readonly firstSent = new Map<Socket, Buffer>();
  private readonly held = new Set<Socket>();
  private holding = false;
  private server = createServer((client) => this.forward(client));
  private port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await proxy.listen(0);
    return proxy;
  }

  /** The port clients connect to; it stays the same across `down` and `up`. */
  get listenPort(): number {
    return this.port;
  }

  /** Cuts every open connection and refuses new ones, as a server that went away. */
  async down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Accepts connections again, on the same port. */
  async up(): Promise<void> {
    this.server = createServer((client) => this.forward(client));
    await this.listen(this.port);
  }

  /**
   * Stops passing on what clients send, on open and new connections alike, while the server's
   * answers still flow: a one-way stall (the server never hears a client's acknowledgements).
   * `replicationOnly`: only open PostgreSQL replication connections (their startup message asks
   * for replication) are held; the client's other sessions go on. Returns how many are held.
   */
  holdRequests(options: { replicationOnly?: boolean } = {}): number {
    this.holding = !options.replicationOnly;
    for (const client of this.pairs.keys()) {
      if (options.replicationOnly && !this.firstSent.get(client)?.includes('replication\0')) continue;
      client.unpipe();
      client.pause();
      this.held.add(client);
    }
    return this.held.size;
  }

  /** Passes on what clients send again, what was held first. */
  releaseRequests(): void {
    this.holding = false;
    for (const client of this.held) {
      const upstream = this.pairs.get(client);
      if (upstream) client.pipe(upstream);
    }
    this.held.clear();
  }

  stop(): Promise<void> {
    return this.down();
  }

  private async listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  private forward(client: Socket): void {
    const upstream = createConnection(this.targetPort, this.targetHost);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        this.sockets.delete(socket);
        this.pairs.delete(client);
        this.firstSent.delete(client);
        this.held.delete(client);
        client.destroy();
        upstream.destroy();
      });
    }
    this.pairs.set(client, upstream);
    client.once('data', (chunk: Buffer) => this.firstSent.set(client, chunk));
    if (this.holding) {
      client.pause();
      this.held.add(client);
    } else client.pipe(upstream);
    upstream.pipe(client);
  }
}
