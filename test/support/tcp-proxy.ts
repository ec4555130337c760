import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to a server, that a test can take down and bring back: a sink server that
 * goes away mid-stream, without stopping the real one (which other test files share).
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
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
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
