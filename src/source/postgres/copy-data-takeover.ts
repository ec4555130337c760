import { EventEmitter } from 'node:events';
import { MessageFramer } from './message-framer.js';

const COPY_DATA = 0x64; // d

/** pg's connection, as far as reading its socket goes (pg's types leave these out). */
export interface PgConnectionInternals extends EventEmitter {
  stream: NodeJS.ReadableStream;
  attachListeners?(stream: EventEmitter): void;
}

/**
 * Reads the CopyData messages of a replication stream straight off the connection's socket, and
 * hands every other message on to pg's own parser: a message of the stream then costs a view of
 * the read, not a parsed message object, an event and a copy. Call it once the connection is
 * ready and idle (after its startup), before the replication starts: pg's parser holds no part of
 * a message then. False, with nothing changed, when pg's connection is not laid out as expected;
 * pg's parser then keeps reading everything.
 *
 * @param onCopyData each CopyData message's body, in `buffer` from `start` to `end`
 * @param onError a malformed message: the stream can no longer be read
 */
export function takeOverCopyData(
  connection: PgConnectionInternals,
  onCopyData: (buffer: Buffer, start: number, end: number) => void,
  onError: (error: Error) => void,
): boolean {
  const { stream } = connection;
  const readers = stream.listeners('data');
  const pgReader = readers[0];
  if (readers.length !== 1 || !pgReader || typeof connection.attachListeners !== 'function') return false;
  stream.removeListener('data', pgReader as (...args: unknown[]) => void);
  // pg's parser, fed whole messages only: it completes queries and reports errors as it always did.
  const relay = new EventEmitter();
  connection.attachListeners(relay);
  const framer = new MessageFramer((type, buffer, start, end) => {
    if (type === COPY_DATA) onCopyData(buffer, start, end);
    else relay.emit('data', buffer.subarray(start - 5, end));
  });
  let broken = false;
  stream.on('data', (read: Buffer) => {
    if (broken) return;
    try {
      framer.push(read);
    } catch (error) {
      broken = true;
      onError(error instanceof Error ? error : new Error(String(error)));
    }
  });
  return true;
}
