import { backlogChanges, type CheckResult, type RunShape } from './sink-target.js';

/** The fields of a change envelope the drain check reads. */
export interface TalliedEnvelope {
  id: string;
  op: string;
  key: { id: string | number } | null;
}

/**
 * Counts the backlog's messages as a broker sink delivered them, for the drain check: every
 * change once (distinct ids), as many inserts and updates as the backlog made, and the inserts in
 * commit order. A consumer that drops redelivered ids is assumed: a repeated id counts once.
 */
export class EnvelopeTally {
  private readonly ids = new Set<string>();
  private readonly ops = { insert: 0, update: 0, other: 0 };
  private messages = 0;
  private inOrder = true;
  private lastInsert: number;
  /** Messages whose broker-level id was checked, and those of them unlike their envelope's id. */
  private readonly messageIds = { checked: 0, unlike: 0 };

  constructor(private readonly shape: RunShape) {
    this.lastInsert = shape.rows;
  }

  /**
   * One message, in the order delivered. `messageId`, for a broker that carries an id of its own
   * next to the body (NATS's `Nats-Msg-Id`, AMQP's `message_id`), must be the envelope's id: a
   * caller checking it passes '' for a message without one.
   */
  add(event: TalliedEnvelope, messageId?: string): void {
    this.messages++;
    if (messageId !== undefined) {
      this.messageIds.checked++;
      if (messageId !== event.id) this.messageIds.unlike++;
    }
    if (this.ids.has(event.id)) return;
    this.ids.add(event.id);
    if (event.op === 'insert') {
      this.ops.insert++;
      const id = Number(event.key?.id);
      if (id !== this.lastInsert + 1) this.inOrder = false;
      this.lastInsert = id;
    } else if (event.op === 'update') this.ops.update++;
    else this.ops.other++;
  }

  result(): CheckResult {
    const { insert, update, other } = this.ops;
    const { checked, unlike } = this.messageIds;
    const ok =
      this.ids.size === backlogChanges(this.shape) &&
      insert === this.shape.transactions &&
      update === this.shape.transactions &&
      other === 0 &&
      unlike === 0;
    const count = (x: number) => x.toLocaleString('en-US');
    const idNote =
      checked === 0
        ? ''
        : unlike === 0
          ? ', message ids equal to the envelope ids'
          : `, ${count(unlike)} message ids UNLIKE the envelope's`;
    return {
      ok: ok && this.inOrder,
      detail:
        `${count(this.messages)} messages after the snapshot's: ${count(insert)} inserts, ${count(update)} updates` +
        `${other ? `, ${other} others` : ''}, ${count(this.ids.size)} distinct ids` +
        `${this.inOrder ? ', inserts in commit order' : ', inserts OUT of order'}${idNote}`,
    };
  }
}
