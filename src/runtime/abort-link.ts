/**
 * A controller that aborts with `signal` and can also be aborted on its own. Aborted at once when
 * `signal` already is: an aborted signal fires no more events, so a listener added after the abort
 * would wait forever (a stop asked while the stream was being opened was lost that way).
 */
export function abortWith(signal: AbortSignal): { controller: AbortController; unlink(): void } {
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return { controller, unlink: () => {} };
  }
  const follow = () => controller.abort(signal.reason);
  signal.addEventListener('abort', follow, { once: true });
  return { controller, unlink: () => signal.removeEventListener('abort', follow) };
}
