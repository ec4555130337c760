import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay on the loopback interface to `host:port`, which can be taken down: every connection
 * through it is cut and new ones are refused (the port is closed), as if the server behind it had
 * stopped; `up()` listens on the same port again.
 */
export interface TcpRelay {
  port: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpRelay(host: string, port: number): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const relayPort = await listen(0);
  let listening = true;
  const down = async () => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  };
  return {
    port: relayPort,
    down,
    up: async () => {
      if (listening) return;
      await listen(relayPort);
      listening = true;
    },
    close: down,
  };
}

/** `url` with its host and port replaced by the relay's. */
export function viaRelay(url: string, relay: TcpRelay): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(relay.port);
  return u.toString();
}
