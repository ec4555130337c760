import { describe, expect, it } from 'vitest';
import { changeEnvelopes, envelopeText } from '../../src/sinks/change-envelope.js';
import { messageBytesBound } from '../../src/sinks/nats/payload-size.js';
import { ev, orders, tx } from '../support/message-sink-fixtures.js';

describe('nats sink, the bound on a message size', () => {
  it("is never below a message's bytes and its id, whatever the characters", () => {
    const t1 = tx(1);
    for (const note of ['plain', '\u0001\u001f'.repeat(500), 'é€😀'.repeat(300), '"\\'.repeat(400)]) {
      const change = ev(t1, {
        op: 'update',
        key: { id: '1' },
        before: { id: '1', total: '1.00', note },
        after: { id: '2', total: '2.00', note },
      });
      const [made] = changeEnvelopes([change], () => orders, new Map()).envelopes;
      const bytes = Buffer.byteLength(envelopeText(made?.envelope ?? {})) + (made?.envelope.id.length ?? 0);
      expect(messageBytesBound(change)).toBeGreaterThanOrEqual(bytes);
    }
  });
});
