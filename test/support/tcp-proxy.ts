import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to a server, that a test can take down and bring back: a sink server that
 * goes away mid-stream, without stopping the real one (which other test files share).
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  /** Each client with its upstream, for holding what clients send. */
  private readonly pairs = new Map<Socket, Socket>();
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
   */
  holdRequests(): void {
    this.holding = true;
    for (const client of this.pairs.keys()) {
      client.unpipe();
      client.pause();
    }
  }

  /** Passes on what clients send again, what was held first. */
  releaseRequests(): void {
    this.holding = false;
    for (const [client, upstream] of this.pairs) client.pipe(upstream);
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
        client.destroy();
        upstream.destroy();
      });
    }
    this.pairs.set(client, upstream);
    if (this.holding) client.pause();
    else client.pipe(upstream);
    upstream.pipe(client);
  }
}
