import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EnvelopeTally, type TalliedEnvelope } from './envelope-tally.js';
import { oneMessagePerRow, type RunShape, runTag, type SinkTarget } from './sink-target.js';

/**
 * An HTTP receiver in this process, on a loopback port of its own (which the service takes with
 * `connections.webhookAllowPrivate`): each `POST` of `{"events":[...]}` is parsed and answered
 * 200; `read` events are counted by id, the other events kept in the order received, each id
 * once. Its CPU is this process's, the service's. Backlog changes visible: the distinct ids of the
 * events other than `read`; the drain check tallies those events in the order received.
 */
export async function webhookTarget(shape: RunShape): Promise<SinkTarget> {
  const snapshotIds = new Set<string>();
  const changeIds = new Set<string>();
  const changes: TalliedEnvelope[] = [];
  let requests = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests++;
      const { events } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events: TalliedEnvelope[] };
      for (const e of events) {
        if (e.op === 'read') snapshotIds.add(e.id);
        else {
          changes.push({ id: e.id, op: e.op, key: e.key });
          changeIds.add(e.id);
        }
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  return {
    kind: 'webhook',
    dsn: `http://127.0.0.1:${port}/bench?secret=${runTag()}${runTag()}`,
    properties: {},
    where: `a receiver in this process at \`http://127.0.0.1:${port}/bench\``,
    checkSnapshot: async (source) => {
      const check = oneMessagePerRow(snapshotIds.size, source, 'distinct read event ids');
      return { ...check, detail: `${check.detail} (${requests.toLocaleString('en-US')} requests)` };
    },
    markDrainStart: async () => {},
    drainedChanges: async () => changeIds.size,
    checkDrain: async () => {
      const tally = new EnvelopeTally(shape);
      for (const e of changes) tally.add(e);
      return tally.result();
    },
    cleanUp: async () => {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    },
  };
}
