import { describe, expect, it } from 'vitest';
import {
  PgoutputStreamingPlugin,
  startReplicationCommand,
} from '../../src/source/postgres/pgoutput-plugin.js';

const base = {
  slotName: 'replicator_0123456789abcdef0123456789abcdef',
  startLsn: '16/B374D848',
  publicationNames: ['replicator_0123456789abcdef0123456789abcdef'],
  streaming: true,
  messages: false,
};

describe('pgoutput streaming plugin', () => {
  it('asks for protocol 2 with streaming on PostgreSQL 14 and later', () => {
    for (const serverVersionNum of [140000, 150007, 170002]) {
      expect(startReplicationCommand({ ...base, serverVersionNum })).toBe(
        `START_REPLICATION SLOT ${base.slotName} LOGICAL 16/B374D848 (proto_version '2', publication_names '${base.slotName}', streaming 'on')`,
      );
    }
    expect(startReplicationCommand({ ...base, serverVersionNum: 170002, streaming: false })).not.toContain(
      'streaming',
    );
    expect(startReplicationCommand({ ...base, serverVersionNum: 170002, messages: true })).toContain(
      "messages 'true'",
    );
  });

  it('falls back to protocol 1 without streaming before PostgreSQL 14', () => {
    expect(startReplicationCommand({ ...base, serverVersionNum: 130012 })).toBe(
      `START_REPLICATION SLOT ${base.slotName} LOGICAL 16/B374D848 (proto_version '1', publication_names '${base.slotName}')`,
    );
  });

  it('refuses names and positions that could break the command', () => {
    expect(() => startReplicationCommand({ ...base, serverVersionNum: 170000, slotName: "x' (y" })).toThrow(
      /plain identifier/,
    );
    expect(() =>
      startReplicationCommand({
        ...base,
        serverVersionNum: 170000,
        publicationNames: ["a', streaming 'off"],
      }),
    ).toThrow(/plain identifier/);
    expect(() => startReplicationCommand({ ...base, serverVersionNum: 170000, startLsn: '0/0 (x)' })).toThrow(
      /invalid start LSN/,
    );
    expect(() => new PgoutputStreamingPlugin({ publicationNames: [] })).toThrow(/at least one/);
  });

  it('hands each payload over undecoded and uncopied, for the change stream to decode in place', () => {
    const plugin = new PgoutputStreamingPlugin({ publicationNames: ['p'] });
    expect(plugin.name).toBe('pgoutput');
    const payload = Buffer.from('Z');
    expect(plugin.parse(payload)).toBe(payload);
  });
});
