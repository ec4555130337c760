import { sqlOn } from './replication-fixture.js';
import { HANG_MS } from './wait-for.js';

/**
 * Waits until every running worker registered in the store has sent `beats` more heartbeats. A
 * worker's periodic work (its fleet tick, its health refresh) runs on the heartbeat's period, so a
 * test lets that work run again by counting beats, not by guessing a time.
 */
export async function workerHeartbeats(storeUrl: string, beats = 2, timeoutMs = HANG_MS): Promise<void> {
  const read = async () =>
    new Map(
      (
        await sqlOn<{ id: string; at: string }>(
          storeUrl,
          'SELECT id, heartbeat_at::text AS at FROM workers WHERE stopped_at IS NULL',
        )
      ).map((w) => [w.id, w.at]),
    );
  const last = await read();
  const seen = new Map([...last.keys()].map((id) => [id, 0]));
  const deadline = Date.now() + timeoutMs;
  while ([...seen.values()].some((n) => n < beats)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${beats} heartbeats of every worker`);
    await new Promise((r) => setTimeout(r, 50));
    for (const [id, at] of await read()) {
      if (!seen.has(id) || last.get(id) === at) continue;
      last.set(id, at);
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
  }
}
