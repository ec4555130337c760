import type pg from 'pg';
import { AbstractPlugin } from 'pg-logical-replication/dist/output-plugins/abstract.plugin.js';

/** Options of {@link PgoutputStreamingPlugin}. */
export interface PgoutputStreamingOptions {
  publicationNames: string[];
  /** Ask for streamed in-progress transactions when the server can (PostgreSQL 14+). Default true. */
  streaming?: boolean;
  /** Also receive logical decoding messages (`pg_logical_emit_message`). Default false. */
  messages?: boolean;
}

// Slot and publication names go into the command unquoted-safe only if they are plain identifiers.
const PLAIN_IDENTIFIER = /^[a-z_][a-z0-9_$]{0,62}$/;

/** pgoutput protocol version 2 (streaming) exists from PostgreSQL 14 on. */
function protoVersionFor(serverVersionNum: number): 1 | 2 {
  return serverVersionNum >= 140000 ? 2 : 1;
}

/**
 * The START_REPLICATION command: protocol 2 with `streaming 'on'` on PostgreSQL 14+ (unless
 * `streaming` is false), protocol 1 before. Names must be plain identifiers.
 */
export function startReplicationCommand(p: {
  serverVersionNum: number;
  slotName: string;
  startLsn: string;
  publicationNames: string[];
  streaming: boolean;
  messages: boolean;
}): string {
  for (const name of [p.slotName, ...p.publicationNames]) {
    if (!PLAIN_IDENTIFIER.test(name)) throw new Error(`'${name}' is not a plain identifier`);
  }
  if (!/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/.test(p.startLsn))
    throw new Error(`invalid start LSN '${p.startLsn}'`);
  const proto = protoVersionFor(p.serverVersionNum);
  const options = [`proto_version '${proto}'`, `publication_names '${p.publicationNames.join(',')}'`];
  if (p.messages) options.push(`messages 'true'`);
  if (proto === 2 && p.streaming) options.push(`streaming 'on'`);
  return `START_REPLICATION SLOT ${p.slotName} LOGICAL ${p.startLsn} (${options.join(', ')})`;
}

/**
 * pgoutput output plugin for pg-logical-replication that speaks protocol version 2 with
 * `streaming 'on'` on PostgreSQL 14+ (version 1 before). It hands each message over undecoded:
 * the change stream decodes it synchronously, straight into change events (the library's own
 * pgoutput plugin requests neither streaming nor knows the stream messages).
 */
export class PgoutputStreamingPlugin extends AbstractPlugin<PgoutputStreamingOptions> {
  private replicationClient: pg.Client | undefined;
  private version: number | undefined;

  constructor(options: PgoutputStreamingOptions) {
    for (const name of options.publicationNames) {
      if (!PLAIN_IDENTIFIER.test(name))
        throw new Error(`publication name '${name}' is not a plain identifier`);
    }
    if (options.publicationNames.length === 0) throw new Error('at least one publication name is required');
    super(options);
  }

  get name(): string {
    return 'pgoutput';
  }

  /** The replication connection, once start() was called. */
  get client(): pg.Client | undefined {
    return this.replicationClient;
  }

  /** The server's `server_version_num`, once start() was called. */
  get serverVersionNum(): number | undefined {
    return this.version;
  }

  /** The protocol version requested: 2 on PostgreSQL 14+, else 1. */
  get protoVersion(): 1 | 2 {
    return protoVersionFor(this.version ?? 0);
  }

  /** The START_REPLICATION command for the detected server version. */
  startCommand(slotName: string, lastLsn: string): string {
    return startReplicationCommand({
      serverVersionNum: this.version ?? 0,
      slotName,
      startLsn: lastLsn,
      publicationNames: this.options.publicationNames,
      streaming: this.options.streaming !== false,
      messages: this.options.messages === true,
    });
  }

  /**
   * Detects the server version on the replication connection, then starts streaming. The returned
   * promise settles when replication ends (rejects on a server error).
   */
  async start(client: pg.Client, slotName: string, lastLsn: string): Promise<unknown> {
    this.replicationClient = client;
    const { rows } = await client.query<{ server_version_num: string }>('SHOW server_version_num');
    this.version = Number(rows[0]?.server_version_num);
    return client.query(this.startCommand(slotName, lastLsn));
  }

  /** The payload itself, a view into the connection's read buffer: decoded by the change stream. */
  parse(buffer: Buffer): Buffer {
    return buffer;
  }
}
