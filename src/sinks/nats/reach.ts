import { jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, connect } from '@nats-io/transport-node';
import { type ReachCheck, reached, unreached } from '../../connections/reach-check.js';

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A NATS server: connected to, and asked whether it offers JetStream to this connection. */
export async function reachNats(settings: ConnectionOptions, timeoutMs: number): Promise<ReachCheck[]> {
  let nc: Awaited<ReturnType<typeof connect>>;
  try {
    nc = await connect({ ...settings, timeout: timeoutMs });
  } catch (error) {
    return [unreached('the NATS server', error)];
  }
  try {
    const jetstream = await jetstreamManager(nc, { timeout: timeoutMs }).then(
      () => ({ name: 'jetstream', ok: true, message: 'The server offers JetStream.' }),
      (error: unknown) => ({
        name: 'jetstream',
        ok: false,
        message: `The server offers no JetStream to this connection: ${messageOf(error)}`,
      }),
    );
    return [reached(`the NATS server ${nc.getServer()}`), jetstream];
  } finally {
    await nc.close().catch(() => undefined);
  }
}
