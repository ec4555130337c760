import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';

/**
 * Answers `{error, code}` straight on a socket and closes it: for refusals made before Fastify
 * has a request to reply to (a request Node's parser refused, a WebSocket handshake ws refused).
 */
export function writeRawError(
  socket: Duplex,
  code: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const status = ERROR_CODES[code];
  const body = JSON.stringify({ error: message, code });
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Connection: close',
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  // Destroyed once written, not at once, so that the answer is not cut off.
  socket.once('finish', () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
