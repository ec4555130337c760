import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { CliError, EXIT } from './exit-codes.js';

/** What `apply -f` sends: the document as read, with `${VAR}` references filled in. */
export interface DocumentBody {
  connections?: unknown[];
  pipelines?: unknown[];
}

const REFERENCE = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Escapes what `readDocument` would fill, so that a value written out is read back the same. */
export const escapeReferences = (text: string): string =>
  text.replace(/\$\{[A-Za-z_][A-Za-z0-9_]*\}/g, '$$$&');

/**
 * Reads a YAML or JSON document (`-` is stdin) and fills `${NAME}` in its string values from the
 * environment, so that a document kept in git names its secrets instead of holding them; `$${NAME}`
 * is the literal text `${NAME}`. Values are filled after parsing, so a variable cannot change the document's shape.
 */
export function readDocument(path: string, env: NodeJS.ProcessEnv): DocumentBody {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new CliError(
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      EXIT.usage,
    );
  }
  const documents = parseAllDocuments(text);
  if (!Array.isArray(documents) || documents.length !== 1) {
    const count = Array.isArray(documents) ? documents.length : 0;
    throw new CliError(
      `${path}: holds ${count} YAML documents; put connections and pipelines in one`,
      EXIT.usage,
    );
  }
  const [document] = documents;
  const error = document?.errors[0];
  if (error) throw new CliError(`${path}: ${error.message.split('\n')[0]}`, EXIT.usage);
  const value: unknown = document?.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CliError(`${path}: must be a mapping with connections and pipelines`, EXIT.usage);
  }
  const missing: string[] = [];
  const filled = fill(value, '', env, missing);
  if (missing.length > 0) {
    throw new CliError(
      `${path}: environment variable${missing.length > 1 ? 's' : ''} not set: ${missing.join(', ')}`,
      EXIT.usage,
    );
  }
  return filled as DocumentBody;
}

function fill(value: unknown, path: string, env: NodeJS.ProcessEnv, missing: string[]): unknown {
  if (typeof value === 'string') {
    return value.replace(REFERENCE, (match, escaped: string, name: string) => {
      if (escaped) return match.slice(1);
      const found = env[name];
      if (found === undefined) missing.push(`${name} (at ${path})`);
      return found ?? match;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => fill(v, `${path}[${i}]`, env, missing));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, fill(v, path ? `${path}.${k}` : k, env, missing)]),
    );
  }
  return value;
}
