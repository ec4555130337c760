/**
 * NATS subject rules: tokens separated by `.`, none empty, none holding white space (the protocol
 * line splits on it) or the wildcards `*` and `>`, which a message cannot be published to.
 */

/** What is wrong with a subject to publish to, or undefined when it is fine. */
export function subjectProblem(subject: string): string | undefined {
  const tokens = subject.split('.');
  if (tokens.some((t) => t === '')) return 'has an empty token (a leading, trailing or doubled dot)';
  if (/\s/u.test(subject)) return 'has white space';
  if ([...subject].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return 'has a control character';
  }
  if (/[*>]/.test(subject)) return "has a wildcard ('*' or '>')";
  // `$JS.API...`, `$SYS...`, `$KV...`: a message there is a request to the server, not data.
  if (subject.startsWith('$')) return "starts with '$', which the server reserves for its own APIs";
  if (tokens[0] === '_INBOX') return 'starts with _INBOX, where replies are delivered';
  return undefined;
}

/** What in a name stops it from being one subject token, or undefined when nothing does. */
export function tokenProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.includes('.')) return "holds '.'";
  if (/\s/u.test(name)) return 'holds white space';
  if ([...name].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return 'holds a control character';
  }
  if (/[*>]/.test(name)) return "holds a wildcard ('*' or '>')";
  return undefined;
}

/** A template's subjects as one filter: each token holding a placeholder becomes `*`. */
export function wildcardOf(template: string): string {
  return template
    .split('.')
    .map((token) => (/\{(schema|table)\}/.test(token) ? '*' : token))
    .join('.');
}
