/** Something that can interrupt a wait: subscribe, and get back the unsubscribe. */
export type WakeSource = (listener: () => void) => () => void;

/** A WakeSource fired by an AbortSignal; at once (in a microtask) when it is already aborted. */
export const onAbort =
  (signal: AbortSignal): WakeSource =>
  (listener) => {
    if (signal.aborted) {
      let off = false;
      queueMicrotask(() => off || listener());
      return () => {
        off = true;
      };
    }
    signal.addEventListener('abort', listener, { once: true });
    return () => signal.removeEventListener('abort', listener);
  };

/**
 * Waits for the next item, a timeout, or a wake-up, whichever comes first. Unlike Promise.race
 * against long-lived promises, it leaves nothing attached to them afterwards: each racing
 * reaction would otherwise keep its result (a stream item) alive until the long-lived promise
 * settles, which for an abort signal is the end of the pipeline.
 */
export function nextOrWake<T>(
  pending: Promise<T>,
  timeoutMs: number | null,
  wakes: readonly WakeSource[],
): Promise<{ kind: 'next'; value: T } | { kind: 'timeout' } | { kind: 'wake' }> {
  return new Promise((resolve, reject) => {
    let done = false;
    const offs: (() => void)[] = [];
    let timer: NodeJS.Timeout | undefined;
    const finish = (result: { kind: 'next'; value: T } | { kind: 'timeout' } | { kind: 'wake' }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const off of offs) off();
      resolve(result);
    };
    for (const wake of wakes) offs.push(wake(() => finish({ kind: 'wake' })));
    if (timeoutMs !== null) timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs);
    pending.then(
      (value) => finish({ kind: 'next', value }),
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        for (const off of offs) off();
        reject(error);
      },
    );
  });
}
