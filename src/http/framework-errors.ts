import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';

/**
 * Fastify's `frameworkErrors`: the router's refusals, made before any route or hook runs, get
 * the `{error, code}` body. A path segment longer than Fastify's `maxParamLength` (100) is
 * longer than any name, so it names nothing: 404, as any other name that names nothing.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = request.url.split('?')[0];
  let code: ErrorCode;
  let message: string;
  if (error.code === 'FST_ERR_BAD_URL') {
    code = 'BAD_REQUEST';
    message = `${path}: is not a valid URL (a malformed percent-escape)`;
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    code = 'NOT_FOUND';
    message = `${request.method} ${path}: a name in the path is longer than any name can be`;
  } else {
    code = 'INTERNAL';
    message = `internal error (request id ${request.id})`;
    request.log.error({ err: error }, 'router failed');
  }
  // No hook runs for these answers: what the hooks would add is added here.
  reply.header('x-request-id', request.id);
  if ((request.raw as { upgrade?: boolean }).upgrade) {
    // An upgrade's socket has left Node's HTTP handling: nothing else would ever close it.
    reply.header('connection', 'close');
    reply.raw.once('finish', () => request.raw.socket.destroy());
  }
  reply.status(ERROR_CODES[code]).send({ error: message, code });
}
