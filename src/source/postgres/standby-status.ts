/** Milliseconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC. */
const PG_EPOCH_UNIX_MS = 946_684_800_000;

const COPY_DATA = 0x64; // d
const STANDBY_STATUS_UPDATE = 0x72; // r
const BODY_BYTES = 34;

/**
 * A Standby Status Update (see "Streaming Replication Protocol" in the PostgreSQL manual) framed
 * as the CopyData message that carries it: `lsn` as the position written, flushed and applied
 * (the server may forget everything before it), `nowMs` as the client's clock, no reply asked.
 */
export function standbyStatusUpdate(lsn: bigint, nowMs: number): Buffer {
  const message = Buffer.alloc(5 + BODY_BYTES);
  message[0] = COPY_DATA;
  message.writeInt32BE(4 + BODY_BYTES, 1);
  message[5] = STANDBY_STATUS_UPDATE;
  message.writeBigUInt64BE(lsn, 6); // written
  message.writeBigUInt64BE(lsn, 14); // flushed
  message.writeBigUInt64BE(lsn, 22); // applied
  message.writeBigInt64BE(BigInt(Math.round(nowMs - PG_EPOCH_UNIX_MS)) * 1000n, 30);
  message[38] = 0; // no reply requested
  return message;
}
