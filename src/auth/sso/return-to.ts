import { badRequest } from '../../errors/app-error.js';

const RETURN_TO_MAX_LENGTH = 2048;
const PROBE_ORIGIN = 'http://return-to.invalid';

const isControlCharacter = (character: string) => {
  const code = character.codePointAt(0) ?? 0;
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
};

/**
 * Checks where a browser asked to go back to after signing in: a path on this service only
 * (`/app/pipelines?x=1`). Anything that could leave the origin — an absolute URL, `//host`,
 * `/\host` (which browsers read as `//host`), a scheme, control characters — is refused, so the
 * sign-in cannot be used as an open redirect.
 */
export function checkReturnTo(value: string): string {
  const refuse = () => badRequest('return_to', 'must be a path on this service, such as /app/pipelines');
  if (value.length === 0 || value.length > RETURN_TO_MAX_LENGTH) throw refuse();
  if (!value.startsWith('/') || value.startsWith('//')) throw refuse();
  // Backslashes, whitespace and control characters are normalised away by browsers in ways that
  // differ between them; none belongs in a path this service makes.
  if (/[\\\s]/.test(value) || [...value].some(isControlCharacter)) throw refuse();
  let url: URL;
  try {
    url = new URL(value, PROBE_ORIGIN);
  } catch {
    throw refuse();
  }
  if (url.origin !== PROBE_ORIGIN) throw refuse();
  return `${url.pathname}${url.search}${url.hash}`;
}
