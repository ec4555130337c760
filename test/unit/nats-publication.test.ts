import { describe, expect, it } from 'vitest';
import type { AckOwner, InFlight } from '../../src/sinks/nats/ack-inbox.js';
import { type AckSender, type Outgoing, Publication } from '../../src/sinks/nats/publication.js';

const STREAM = 'S';

/** A server the test answers: it records what was published and acks it when told. */
class FakeServer implements AckSender {
  readonly sent: InFlight[] = [];
  refuseNext: Error | undefined;

  publish(
    owner: AckOwner,
    subject: string,
    _payload: string,
    _msgId: string,
    rows: readonly string[] | null,
  ) {
    if (this.refuseNext) throw this.refuseNext;
    this.sent.push({ owner, subject, rows, sentAt: 0 });
  }

  /** Acks the `i`th message published (stored in `stream`), or fails it. */
  ack(i: number, outcome: { stream: string } | { error: Error } = { stream: STREAM }) {
    const entry = this.sent[i] as InFlight;
    entry.owner.acked(entry, outcome);
  }

  subjects = () => this.sent.map((e) => e.subject);
}

const message = (subject: string, rows: readonly string[] | null = []): Outgoing => ({
  subject,
  payload: '{}',
  msgId: subject,
  rows,
});

/** Lets every pending promise callback run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function publication(server: FakeServer, window = 4) {
  return new Publication(
    server,
    STREAM,
    window,
    (error, subject) => new Error(`${subject}: ${error.message}`),
  );
}

describe('nats publication', () => {
  it('keeps at most the window awaiting acks, goes on once half of it is back, and settles on the last', async () => {
    const server = new FakeServer();
    const p = publication(server);
    const sending = p.send(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((s) => message(s)));
    await turn();
    expect(server.subjects()).toEqual(['a', 'b', 'c', 'd']);
    server.ack(0);
    await turn();
    expect(server.sent).toHaveLength(4);
    server.ack(1);
    await turn();
    expect(server.subjects()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    server.ack(2);
    await turn();
    expect(server.sent).toHaveLength(6);
    server.ack(3);
    await sending;
    expect(server.subjects()).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    let settled = false;
    const settling = p.settle().then(() => {
      settled = true;
    });
    for (const i of [4, 5]) server.ack(i);
    await turn();
    expect(settled).toBe(false);
    server.ack(6);
    await settling;
  });

  /** Row A's two changes, with a change of B between them and one of C after. */
  const twoChangesOfA = () => [
    message('a1', ['A']),
    message('b1', ['B']),
    message('a2', ['A']),
    message('c1', ['C']),
  ];

  it("publishes a row's change only once the one before is acknowledged, the ones after it waiting too", async () => {
    const server = new FakeServer();
    const p = publication(server, 100);
    const sending = p.send(twoChangesOfA());
    await turn();
    expect(server.subjects()).toEqual(['a1', 'b1']);
    server.ack(1);
    await turn();
    expect(server.subjects()).toEqual(['a1', 'b1']);
    server.ack(0);
    await sending;
    expect(server.subjects()).toEqual(['a1', 'b1', 'a2', 'c1']);
    server.ack(2);
    server.ack(3);
    await p.settle();
  });

  it('after a failed ack publishes nothing more, fails once every sent one is settled, and sends no later change of its row', async () => {
    const server = new FakeServer();
    const p = publication(server, 100);
    const sending = p.send(twoChangesOfA());
    await turn();
    // a1 is refused while b1 is stored: a2 must never be sent ahead of a1's retry.
    server.ack(0, { error: new Error('refused') });
    await turn();
    expect(server.subjects()).toEqual(['a1', 'b1']);
    let failed: unknown;
    void sending.catch((error: unknown) => {
      failed = error;
    });
    await turn();
    expect(failed).toBeUndefined();
    server.ack(1);
    await expect(sending).rejects.toThrow('a1: refused');
    expect(server.subjects()).toEqual(['a1', 'b1']);
    await expect(p.settle()).rejects.toThrow('a1: refused');
  });

  it('publishes a truncate alone: after every earlier ack, and nothing until its own', async () => {
    const server = new FakeServer();
    const p = publication(server, 100);
    const sending = p.send([message('a1', ['A']), message('t', null), message('b1', ['B'])]);
    await turn();
    expect(server.subjects()).toEqual(['a1']);
    server.ack(0);
    await turn();
    expect(server.subjects()).toEqual(['a1', 't']);
    await turn();
    expect(server.subjects()).toEqual(['a1', 't']);
    server.ack(1);
    await sending;
    expect(server.subjects()).toEqual(['a1', 't', 'b1']);
    server.ack(2);
    await p.settle();
  });

  it('moves a row to its new key: the new key waits for the change that moved it', async () => {
    const server = new FakeServer();
    const p = publication(server, 100);
    const sending = p.send([message('move', ['A', 'B']), message('b', ['B'])]);
    await turn();
    expect(server.subjects()).toEqual(['move']);
    server.ack(0);
    await sending;
    expect(server.subjects()).toEqual(['move', 'b']);
    server.ack(1);
    await p.settle();
  });

  it('fails on an ack from another stream, and on a publish the client refuses', async () => {
    const server = new FakeServer();
    const p = publication(server);
    await p.send([message('a')]);
    server.ack(0, { stream: 'OTHER' });
    await expect(p.settle()).rejects.toThrow('a: subject a is stored in stream OTHER, not in stream S');

    const refused = new FakeServer();
    refused.refuseNext = new Error('closed connection');
    await expect(publication(refused).send([message('x'), message('y')])).rejects.toThrow(
      'x: closed connection',
    );
    expect(refused.sent).toEqual([]);
  });
});
