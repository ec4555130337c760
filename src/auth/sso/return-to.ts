import { badRequest } from '../../errors/app-error.js';

const RETURN_TO_MAX_LENGTH = 2048;
const PROBE_ORIGIN = 'http://return-to.invalid';
// Percent-decoding rounds before a value counts as too deeply encoded to be a path of ours.
const MAX_DECODE_ROUNDS = 4;

const isControlCharacter = (character: string) => {
  const code = character.codePointAt(0) ?? 0;
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
};

// Backslashes, whitespace and control characters are normalised away by browsers in ways that
// differ between them; none belongs in a path this service makes.
const hasUnsafeCharacter = (text: string) => /[\\\s]/.test(text) || [...text].some(isControlCharacter);

// `//host` and `/\host` both leave the origin when a browser follows them.
const leavesOrigin = (path: string) => !path.startsWith('/') || /^\/[/\\]/.test(path);

/** Decodes until stable; undefined when it does not settle or is not valid percent-encoding. */
function fullyDecoded(text: string): string | undefined {
  let current = text;
  for (let round = 0; round < MAX_DECODE_ROUNDS; round += 1) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      return undefined;
    }
    if (next === current) return current;
    current = next;
  }
  return undefined;
}

/**
 * Checks where a browser asked to go back to after signing in: a path on this service only
 * (`/app/pipelines?x=1`). The value is normalised first (dot segments resolved, percent-encoding
 * decoded) and the checks apply to what a browser would follow: anything that could leave the
 * origin — an absolute URL, `//host`, `/\host`, a scheme, control characters, an encoded slash or
 * backslash — is refused, so the sign-in cannot be used as an open redirect.
 */
export function checkReturnTo(value: string): string {
  const refuse = () => badRequest('return_to', 'must be a path on this service, such as /app/pipelines');
  if (value.length === 0 || value.length > RETURN_TO_MAX_LENGTH) throw refuse();
  if (leavesOrigin(value) || hasUnsafeCharacter(value)) throw refuse();
  let url: URL;
  try {
    url = new URL(value, PROBE_ORIGIN);
  } catch {
    throw refuse();
  }
  if (url.origin !== PROBE_ORIGIN) throw refuse();
  // `/.//host`, `/a/..//host` and `/%2e//host` only become `//host` once resolved.
  const path = url.pathname;
  const decodedPath = fullyDecoded(path);
  if (decodedPath === undefined || leavesOrigin(path) || leavesOrigin(decodedPath)) throw refuse();
  // A slash or backslash spelled encoded is read as a separator by some servers and proxies.
  if (
    decodedPath.includes('\\') ||
    /%(25)*(2f|5c)/i.test(path) ||
    [...decodedPath].some(isControlCharacter)
  ) {
    throw refuse();
  }
  const resolvedAgain = new URL(decodedPath, PROBE_ORIGIN);
  if (resolvedAgain.origin !== PROBE_ORIGIN || leavesOrigin(resolvedAgain.pathname)) throw refuse();
  const target = `${path}${url.search}${url.hash}`;
  if (leavesOrigin(target)) throw refuse();
  return target;
}
