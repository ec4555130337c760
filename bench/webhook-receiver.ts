import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The benchmark's webhook receiver, a process of its own (started by bench/webhook-receiver-process.ts
 * with an IPC channel): it takes each `POST` of `{"events":[...]}` as a real receiver must, the
 * signature (`X-Replicator-Signature`, docs/sinks/webhook.md) verified over the raw body before it
 * is parsed, with the secret of `WEBHOOK_RECEIVER_SECRET`; a request without a valid one is answered
 * 401 and counted as rejected. `read` events are counted by id, the others kept in the order
 * received. The parent asks over IPC for the counts (`state`) and the events (`changes`).
 */

const secret = process.env.WEBHOOK_RECEIVER_SECRET;
if (!secret || !process.send) throw new Error('start with WEBHOOK_RECEIVER_SECRET and an IPC channel');
const send = process.send.bind(process);
/** A timestamp further than this from the receiver's clock is refused: a recorded request is not replayed. */
const TOLERANCE_S = 300;

/** Whether `header` signs `body` with the secret, at a time close enough to now. */
function signedByTheSecret(header: string | string[] | undefined, body: Buffer): boolean {
  if (typeof header !== 'string') return false;
  const fields = new Map(header.split(',').map((part) => part.split('=', 2) as [string, string]));
  const t = Number(fields.get('t'));
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > TOLERANCE_S) return false;
  const expected = createHmac('sha256', secret as string)
    .update(`${t}.`)
    .update(body)
    .digest();
  const given = Buffer.from(fields.get('v1') ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

interface Event {
  id: string;
  op: string;
  key: { id: string | number } | null;
}

const readIds = new Set<string>();
const changeIds = new Set<string>();
/** The events other than `read`, in the order received: id, op and key alone, for the tally. */
const changes: Event[] = [];
let accepted = 0;
let rejected = 0;
let events = 0;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.method !== 'POST' || !signedByTheSecret(req.headers['x-replicator-signature'], body)) {
      rejected++;
      res.writeHead(401).end('bad signature');
      return;
    }
    const parsed = JSON.parse(body.toString('utf8')) as { events: Event[] };
    for (const e of parsed.events) {
      if (e.op === 'read') readIds.add(e.id);
      else {
        changes.push({ id: e.id, op: e.op, key: e.key });
        changeIds.add(e.id);
      }
    }
    accepted++;
    events += parsed.events.length;
    res.writeHead(200).end();
  });
});

/** What the parent may ask. */
type Ask = { ask: 'state' } | { ask: 'changes' };

process.on('message', (message: Ask) => {
  if (message.ask === 'state')
    send({ state: { accepted, rejected, events, readIds: readIds.size, changeIds: changeIds.size } });
  else send({ changes });
});
// The parent gone, the receiver goes too.
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => send({ port: (server.address() as AddressInfo).port }));
