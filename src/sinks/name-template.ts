import { hasControl } from '../connections/dsn-text.js';
import type { TableRef } from '../core/change.js';
import { validationFailed } from '../errors/app-error.js';

const PLACEHOLDERS = new Set(['{schema}', '{table}']);

/**
 * Checks a name template of a sink property (a stream key, a subject, an exchange): `{schema}` and
 * `{table}` are its placeholders, and braces serve nothing else, so that a typo such as `{tabel}`
 * never becomes part of a name. No control characters, and not blank unless `blank` is a name the
 * sink can use (an AMQP routing key). Returns the template with each placeholder replaced by `x`,
 * for the checks of the name's own rules (length, tokens).
 */
export function checkNameTemplate(key: string, text: string, { blank = false } = {}): string {
  const field = `sink.properties.${key}`;
  if (!blank && text.trim() === '') throw validationFailed(field, 'must not be empty');
  if (hasControl(text)) throw validationFailed(field, 'must not contain control characters');
  const rest = text.replace(/\{[^{}]*\}/g, (placeholder) => {
    if (!PLACEHOLDERS.has(placeholder)) {
      throw validationFailed(field, `unknown placeholder ${placeholder}; use {schema} and {table}`);
    }
    return 'x';
  });
  if (/[{}]/.test(rest)) throw validationFailed(field, 'has a brace that opens or closes no placeholder');
  return rest;
}

/** A table's name from a checked template. */
export const fillNameTemplate = (template: string, table: TableRef): string =>
  template.replace(/\{(schema|table)\}/g, (_, name: 'schema' | 'table') => table[name]);
