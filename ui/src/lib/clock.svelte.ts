/** The current time, ticking every second, for "3 s ago" texts that keep up. */
export const clock = $state({ now: Date.now() });

setInterval(() => {
  clock.now = Date.now();
}, 1_000);
