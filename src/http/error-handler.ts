import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ConnectionError } from 'slonik';
import { AppError } from '../errors/app-error.js';
import { ERROR_CODES, type ErrorCode } from '../errors/codes.js';

// Keywords that mean "right shape, unacceptable value": 422 in a definition's body (a connection, a
// pipeline, an apply document). Everything else in a schema is shape, 400 (not JSON, a wrong JSON
// type, a missing or unknown field), and so is any problem with a query parameter, a path or an
// action's body: the request itself is invalid, there is no definition that failed validation.
const VALUE_KEYWORDS = new Set([
  'enum',
  'const',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'format',
  'minimum',
  'maximum',
  'uniqueItems',
]);

interface AjvIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  parentSchema?: { description?: string };
}

/** `/source/tables/1` → `source.tables[1]`. */
function fieldPath(context: string | undefined, pointer: string, leaf?: unknown): string {
  const parts = pointer.split('/').filter(Boolean);
  if (typeof leaf === 'string') parts.push(leaf);
  const path = parts.reduce(
    (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
    '',
  );
  return path || (context === 'body' ? 'body' : (context ?? 'request'));
}

function describeIssue(context: string | undefined, issue: AjvIssue): string {
  switch (issue.keyword) {
    case 'required':
      return `${fieldPath(context, issue.instancePath, issue.params.missingProperty)}: is required`;
    case 'additionalProperties':
      return `${fieldPath(context, issue.instancePath, issue.params.additionalProperty)}: is not a known ${
        context === 'querystring' ? 'query parameter' : 'field'
      }`;
    case 'pattern':
      return `${fieldPath(context, issue.instancePath)}: must be ${issue.parentSchema?.description ?? issue.message}`;
    default:
      return `${fieldPath(context, issue.instancePath)}: ${issue.message ?? 'is invalid'}`;
  }
}

/**
 * A value outside a closed set (an enum, or a union of constants, which ajv reports as one `const`
 * issue per branch and an `anyOf`) as one issue that lists what is allowed.
 */
function closedSetIssue(issues: AjvIssue[]): AjvIssue | undefined {
  const first = issues[0];
  if (!first) return undefined;
  if (first.keyword === 'enum') {
    const allowed = (first.params.allowedValues as unknown[]) ?? [];
    return { ...first, message: `must be one of ${allowed.join(', ')}` };
  }
  if (first.keyword !== 'const') return undefined;
  const branches = issues.filter((i) => i.keyword === 'const' && i.instancePath === first.instancePath);
  const allowed = branches.map((i) => i.params.allowedValue);
  return {
    ...first,
    message: allowed.length > 1 ? `must be one of ${allowed.join(', ')}` : `must be ${allowed[0]}`,
  };
}

function fromFastifyError(
  error: FastifyError,
  request: FastifyRequest,
): { code: ErrorCode; message: string } {
  if (error.validation && error.validation.length > 0) {
    const issues = error.validation as unknown as AjvIssue[];
    const issue = closedSetIssue(issues) ?? (issues[0] as AjvIssue);
    const isDefinition = error.validationContext === 'body' && !request.routeOptions.config.actionBody;
    const code = isDefinition && VALUE_KEYWORDS.has(issue.keyword) ? 'VALIDATION_FAILED' : 'BAD_REQUEST';
    return { code, message: describeIssue(error.validationContext, issue) };
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'request body must be application/json' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'PAYLOAD_TOO_LARGE', message: 'request body is too large' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'BAD_REQUEST', message: 'request body is empty but must be JSON' };
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return { code: 'BAD_REQUEST', message: `request body is not valid JSON: ${error.message}` };
  }
  return { code: 'BAD_REQUEST', message: error.message };
}

/**
 * The parts of an error's details that are for clients (documented on ErrorBody); the rest, like
 * the field a message is about, is for the service itself.
 */
function publicDetails(details: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const shown = Object.fromEntries(
    (['problems', 'pipelines', 'verifications'] as const).flatMap((key) =>
      Array.isArray(details?.[key]) ? [[key, details[key]]] : [],
    ),
  );
  return Object.keys(shown).length > 0 ? shown : undefined;
}

/** Turns every error into `{ error, code }` with its documented status, never leaking internals. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    let code: ErrorCode;
    let message: string;
    let details: Record<string, unknown> | undefined;
    if (error instanceof AppError) {
      code = error.code;
      message = error.message;
      details = publicDetails(error.details);
    } else if (error instanceof ConnectionError) {
      code = 'UNAVAILABLE';
      message = 'the metadata store is unreachable; retry later';
      request.log.error({ err: error }, 'metadata store unreachable');
    } else if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      ({ code, message } = fromFastifyError(error, request));
    } else {
      code = 'INTERNAL';
      message = `internal error (request id ${request.id})`;
      request.log.error({ err: error }, 'request failed');
    }
    reply.status(ERROR_CODES[code]).send({ error: message, code, ...(details ? { details } : {}) });
  });
}
