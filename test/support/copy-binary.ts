import { COPY_BINARY_SIGNATURE } from '../../src/core/copy-binary.js';

/** `data` cut into pieces of `size` bytes. */
export const chunksOf = (data: Buffer, size: number): Buffer[] => {
  const chunks: Buffer[] = [];
  for (let at = 0; at < data.length; at += size) chunks.push(data.subarray(at, at + size));
  return chunks;
};

export function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}

export function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

export function int64(n: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
}

/** `payload` in a protocol message of type `code` ('d' is CopyData). */
export function message(code: string, payload: Buffer | string): Buffer {
  const body = Buffer.from(payload);
  const header = Buffer.alloc(5);
  header.write(code, 0, 'latin1');
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/**
 * A binary COPY of `tuples` (each field its bytes, or NULL) in CopyData messages as the server sends
 * them: a tuple per message, the header in the first, the trailer alone in the last.
 */
export function binaryCopyMessages(
  tuples: readonly (Buffer | null)[][],
  options: { trailer?: boolean; header?: Buffer } = {},
): Buffer[] {
  const header = options.header ?? Buffer.concat([COPY_BINARY_SIGNATURE, int32(0), int32(0)]);
  const tuple = (fields: readonly (Buffer | null)[]) =>
    Buffer.concat([
      int16(fields.length),
      ...fields.flatMap((f) => (f === null ? [int32(-1)] : [int32(f.length), f])),
    ]);
  const payloads: Buffer[] = tuples.map(tuple);
  if (options.trailer !== false) payloads.push(int16(-1));
  payloads[0] = Buffer.concat([header, payloads[0] ?? Buffer.alloc(0)]);
  return payloads.map((p) => message('d', p));
}

/** `messages` joined into chunks of `perChunk` messages each. */
export const messageChunks = (messages: readonly Buffer[], perChunk: number): Buffer[] => {
  const chunks: Buffer[] = [];
  for (let at = 0; at < messages.length; at += perChunk)
    chunks.push(Buffer.concat(messages.slice(at, at + perChunk)));
  return chunks;
};
