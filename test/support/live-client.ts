import WebSocket from 'ws';

/** A `/v1/live` handshake's outcome: refused with a status and body, or open with its socket. */
export interface LiveOpening {
  status?: number;
  body?: string;
  socket?: WebSocket;
  /** Resolves with the close code once the open socket is closed (by either side). */
  closed?: Promise<number>;
}

/** Opens `/v1/live` of `base` with these headers; resolves once the hello arrives or the handshake is refused. */
export function openLive(base: string, headers: Record<string, string> = {}): Promise<LiveOpening> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${base.replace(/^http/, 'ws')}/v1/live`, { headers });
    const closed = new Promise<number>((done) => socket.once('close', (code) => done(code)));
    socket.once('message', () => resolve({ socket, closed }));
    socket.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode, body });
        req.destroy();
      });
    });
    socket.on('error', () => {});
  });
}
