import { type CopyStreamQuery, from as copyFrom } from 'pg-copy-streams';

interface CopyFromInternals {
  flushChunk(chunk: Buffer): boolean;
  connection: { stream: NodeJS.WritableStream };
}

/**
 * A `COPY ... FROM STDIN` fed chunks of whole CopyData messages (a binary snapshot as the source's
 * server sent it), written to the server as they are. pg-copy-streams frames every chunk as a
 * message of its own (its `flushChunk`); everything else of its copy (waiting for the server,
 * CopyDone, CopyFail on destroy, the row count) is kept. Whole messages are what make CopyDone and
 * CopyFail land on a message boundary.
 */
export function copyMessagesFrom(text: string): CopyStreamQuery {
  const copy = copyFrom(text);
  const internals = copy as unknown as CopyFromInternals;
  if (typeof internals.flushChunk !== 'function') {
    throw new Error(
      'pg-copy-streams no longer frames chunks in flushChunk: the binary snapshot cannot pass through',
    );
  }
  internals.flushChunk = (chunk) => internals.connection.stream.write(chunk);
  return copy;
}
