import { Readable } from 'node:stream';
import type pg from 'pg';
import type { CopyFormat } from '../../core/copy-binary.js';
import { CopyDataMessages } from './copy-data-messages.js';
import { CopyDataReader } from './copy-data-reader.js';

/** The parts of pg's connection a copy takes over while it runs (not in pg's types). */
interface PgConnection {
  stream: Omit<NodeJS.ReadableStream, 'read'> & { read(): Buffer | null };
  query(text: string): void;
}

/**
 * A `COPY ... TO STDOUT` as a Readable of the copied bytes, given to `pg.Client.query`. Works as
 * pg-copy-streams' `to` does (it takes the connection's socket over until CopyDone, then hands
 * what follows back to pg's parser), but reads each socket chunk whole with CopyDataReader:
 * pg-copy-streams handles every row, one message each, through a buffer list, which cost this
 * process a sizable share of a snapshot's CPU. In binary format it gives the CopyData messages
 * themselves (CopyDataMessages), which a PostgreSQL sink sends on as they are.
 */
export class CopyOutStream extends Readable implements pg.Submittable {
  /** Rows the server reports copied, once done. */
  rowCount = 0;
  private connection: PgConnection | undefined;
  private pgDataHandler: ((chunk: Buffer) => void) | undefined;
  private readonly reader: CopyDataReader | CopyDataMessages;
  private wanted = false;
  private forwarding = false;
  private over = false;
  private readonly onReadable = () => this.forward();

  constructor(
    private readonly text: string,
    format: CopyFormat = 'text',
  ) {
    super();
    this.reader = format === 'binary' ? new CopyDataMessages() : new CopyDataReader();
  }

  submit(connection: unknown): void {
    const conn = connection as PgConnection;
    this.connection = conn;
    const handlers = conn.stream.listeners('data') as ((chunk: Buffer) => void)[];
    if (handlers.length !== 1) throw new Error('the connection is not in the state a COPY needs');
    this.pgDataHandler = handlers[0];
    conn.stream.removeListener('data', this.pgDataHandler as (chunk: Buffer) => void);
    conn.stream.pause();
    conn.stream.on('readable', this.onReadable);
    conn.query(this.text);
  }

  override _read(): void {
    this.wanted = true;
    this.forward();
  }

  private forward(): void {
    if (this.forwarding || !this.wanted || !this.connection || this.over) return;
    this.forwarding = true;
    const socket = this.connection.stream;
    for (let chunk = socket.read(); chunk !== null; chunk = this.wanted ? socket.read() : null) {
      const { data, over, rest } = this.reader.read(chunk);
      for (const piece of data) this.wanted = this.push(piece) && this.wanted;
      if (over) {
        this.handBack(rest);
        break;
      }
    }
    this.forwarding = false;
  }

  /** The copy is over: pg's parser reads the rest (CommandComplete, an error, ReadyForQuery). */
  private handBack(rest: Buffer): void {
    this.over = true;
    const socket = (this.connection as PgConnection).stream;
    const handler = this.pgDataHandler as (chunk: Buffer) => void;
    socket.removeListener('readable', this.onReadable);
    socket.addListener('data', handler);
    handler(rest);
    // As pg-copy-streams does: the socket may have been paused meanwhile; it flows again after this turn.
    process.nextTick(() => socket.resume());
  }

  /** From pg: the server reported an error (the copy's data is over). */
  handleError(error: Error): void {
    this.emit('error', error);
  }

  handleCommandComplete(message: { text?: string } | undefined): void {
    const match = /COPY (\d+)/.exec(message?.text ?? '');
    if (match) this.rowCount = Number(match[1]);
    // The rows are all pushed before the server completes the command.
    this.push(null);
  }

  handleReadyForQuery(): void {}
}
