import { EnvelopeTally } from './envelope-tally.js';
import { oneMessagePerRow, type RunShape, runTag, type SinkTarget } from './sink-target.js';
import { type ReceiverState, WebhookReceiverProcess } from './webhook-receiver-process.js';

/** A receiver that refused a request fails the run: the sink signed it wrong. */
function noneRefused(state: ReceiverState): void {
  if (state.rejected > 0)
    throw new Error(
      `the webhook receiver refused ${state.rejected} requests: their signature did not verify`,
    );
}

/**
 * An HTTP receiver in a process of its own (bench/webhook-receiver.ts), on a loopback port of its
 * own (which the service takes with `connections.webhookAllowPrivate`): it verifies each request's
 * signature as a receiver must, answers 401 to one that does not verify (which fails the run),
 * and counts `read` events by id and keeps the others in the order received. Backlog changes
 * visible: the distinct ids of the events other than `read`; the drain check tallies those events
 * in the order received.
 */
export async function webhookTarget(shape: RunShape): Promise<SinkTarget> {
  const secret = `${runTag()}${runTag()}`;
  const receiver = await WebhookReceiverProcess.start(secret);
  const { port } = receiver;
  return {
    kind: 'webhook',
    dsn: `http://127.0.0.1:${port}/bench?secret=${secret}`,
    properties: {},
    where: `a receiver process verifying signatures at \`http://127.0.0.1:${port}/bench\``,
    serverPid: receiver.pid,
    checkSnapshot: async (source) => {
      const state = await receiver.state();
      if (state.rejected > 0)
        return { ok: false, detail: `${state.rejected} requests refused: their signature did not verify` };
      const check = oneMessagePerRow(state.readIds, source, 'distinct read event ids');
      return {
        ...check,
        detail: `${check.detail} (${state.accepted.toLocaleString('en-US')} requests, each signature verified)`,
      };
    },
    markDrainStart: async () => {},
    drainedChanges: async () => {
      const state = await receiver.state();
      noneRefused(state);
      return state.changeIds;
    },
    checkDrain: async () => {
      noneRefused(await receiver.state());
      const tally = new EnvelopeTally(shape);
      for (const e of await receiver.changes()) tally.add(e);
      return tally.result();
    },
    cleanUp: () => receiver.stop(),
  };
}
