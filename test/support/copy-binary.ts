import { COPY_BINARY_SIGNATURE } from '../../src/core/copy-binary.js';

/** A binary COPY stream of `tuples` (each field its bytes, or NULL), as the server writes one. */
export function binaryCopy(
  tuples: readonly (Buffer | null)[][],
  options: { trailer?: boolean } = {},
): Buffer {
  const parts: Buffer[] = [COPY_BINARY_SIGNATURE, int32(0), int32(0)];
  for (const tuple of tuples) {
    parts.push(int16(tuple.length));
    for (const field of tuple) {
      if (field === null) parts.push(int32(-1));
      else parts.push(int32(field.length), field);
    }
  }
  if (options.trailer !== false) parts.push(int16(-1));
  return Buffer.concat(parts);
}

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
