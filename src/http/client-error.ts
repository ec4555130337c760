import { maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ErrorCode } from '../errors/codes.js';
import { writeRawError } from './raw-error.js';

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refused (headers too large, a
 * broken request line, a timeout) gets the same `{error, code}` body as every other error.
 */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Socket) {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let code: ErrorCode = 'BAD_REQUEST';
  let message = `malformed HTTP request: ${error.message}`;
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    code = 'HEADERS_TOO_LARGE';
    message = `request headers exceed ${maxHeaderSize} bytes`;
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    code = 'REQUEST_TIMEOUT';
    message = 'the request did not arrive in time';
  }
  this.log.debug({ err: error }, 'client error');
  writeRawError(socket, code, message);
}
