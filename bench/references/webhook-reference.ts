import { Agent, request } from 'undici';
import { parseWebhookSinkProperties } from '../../src/sinks/webhook/config.js';
import { RequestChunks, type WebhookRequest } from '../../src/sinks/webhook/request-chunks.js';
import { signatureHeader } from '../../src/sinks/webhook/signature.js';
import type { ReferenceInput, SinkReference } from '../sink-reference.js';
import { runTag } from '../sink-target.js';
import { WebhookReceiverProcess } from '../webhook-receiver-process.js';
import { backlogEnvelopes, type EnvelopeText, snapshotEnvelopes } from './reference-envelopes.js';

/** Requests awaiting their answer at once, each on a kept-alive connection of its own. */
const IN_FLIGHT = 4;

/** The sink's envelopes as the sink's default properties cut them into request bodies. */
function requestsOf(events: EnvelopeText[]): WebhookRequest[] {
  const { maxEvents, maxBytes } = parseWebhookSinkProperties({}).batch;
  const chunks = new RequestChunks(maxEvents, maxBytes);
  const requests: WebhookRequest[] = [];
  for (const e of events) {
    const ready = chunks.add(e.text, e.id);
    if (ready) requests.push(ready);
  }
  const last = chunks.take();
  if (last) requests.push(last);
  return requests;
}

/**
 * The same request bodies as the sink's (its envelopes, cut by its default `batch_max_events` and
 * `batch_max_bytes`), each signed when it is sent, `POST`ed by undici with keep-alive and several
 * requests in flight, to a receiver process of its own that verifies every signature, as the
 * sink's does. A request counts once answered 200: what the sink's checkpoint waits for too.
 */
export function webhookReference(): SinkReference {
  const secret = `${runTag()}${runTag()}`;
  let receiver: WebhookReceiverProcess | undefined;
  let agent: Agent | undefined;
  let requests: WebhookRequest[] = [];

  const prepare = async (events: EnvelopeText[]) => {
    requests = requestsOf(events);
    receiver ??= await WebhookReceiverProcess.start(secret);
    agent ??= new Agent({ connections: IN_FLIGHT });
  };

  const post = async (url: string, dispatcher: Agent, body: WebhookRequest) => {
    const answer = await request(url, {
      dispatcher,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': body.key,
        'x-replicator-signature': signatureHeader(secret, Math.floor(Date.now() / 1000), body.body),
      },
      body: body.body,
    });
    await answer.body.dump();
    if (answer.statusCode !== 200) throw new Error(`the reference's receiver answered ${answer.statusCode}`);
  };

  const load = async () => {
    if (!receiver || !agent) throw new Error('the webhook reference was not prepared');
    const before = (await receiver.state()).events;
    const url = `http://127.0.0.1:${receiver.port}/reference`;
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < requests.length; i = next++)
        await post(url, agent as Agent, requests[i] as WebhookRequest);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const state = await receiver.state();
    const expected = requests.reduce((sum, r) => sum + r.events, 0);
    if (state.rejected > 0 || state.events - before !== expected)
      throw new Error(
        `the reference's receiver took ${state.events - before} events of ${expected}, refused ${state.rejected} requests`,
      );
  };

  return {
    method: `undici POSTs of the sink's request bodies, signed, ${IN_FLIGHT} in flight on kept-alive connections, to a receiver process verifying signatures`,
    prepareSnapshot: async (input: ReferenceInput) => {
      await prepare(await snapshotEnvelopes(input));
    },
    loadSnapshot: load,
    prepareDrain: async (input: ReferenceInput) => {
      await prepare(await backlogEnvelopes(input));
    },
    loadDrain: load,
    serverPid: () => receiver?.pid,
    cleanUp: async () => {
      requests = [];
      await agent?.close();
      agent = undefined;
      await receiver?.stop();
      receiver = undefined;
    },
  };
}
