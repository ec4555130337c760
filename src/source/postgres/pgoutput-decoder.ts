import { PgoutputProtocolError } from './errors.js';

/**
 * Reading of pgoutput logical replication messages (see "Logical Replication Message Formats" in
 * the PostgreSQL manual): the byte reader, Relation messages and timestamps. Data messages are
 * decoded by change-mapper.ts, the order of messages is followed by transaction-assembler.ts.
 */

export type ReplicaIdentity = 'default' | 'nothing' | 'full' | 'index';

export interface RelationColumn {
  name: string;
  typeOid: number;
  /** Type modifier (`atttypmod`), -1 when none. */
  typeMod: number;
  /** Part of the replica identity (every column under REPLICA IDENTITY FULL). */
  isKey: boolean;
}

/** A table as described by a pgoutput Relation message. */
export interface RelationInfo {
  relationId: number;
  schema: string;
  table: string;
  replicaIdentity: ReplicaIdentity;
  columns: RelationColumn[];
}

const PG_EPOCH_UNIX_MICROS = 946_684_800_000_000n;
const REPLICA_IDENTITIES: Record<string, ReplicaIdentity> = {
  d: 'default',
  n: 'nothing',
  f: 'full',
  i: 'index',
};

/** Converts microseconds since 2000-01-01 UTC to milliseconds since the Unix epoch. */
export function pgTimestampToUnixMs(micros: bigint): number {
  return Number((micros + PG_EPOCH_UNIX_MICROS) / 1000n);
}

/** Converts microseconds since 2000-01-01 UTC to ISO 8601 with microsecond precision. */
export function pgTimestampToIso(micros: bigint): string {
  const unixMicros = micros + PG_EPOCH_UNIX_MICROS;
  let millis = unixMicros / 1000n;
  let rest = unixMicros % 1000n;
  if (rest < 0n) {
    rest += 1000n;
    millis -= 1n;
  }
  const date = new Date(Number(millis));
  if (Number.isNaN(date.getTime())) throw new PgoutputProtocolError(`timestamp out of range: ${micros}`);
  return `${date.toISOString().slice(0, -1)}${rest.toString().padStart(3, '0')}Z`;
}

/** Sequential big-endian reader over one message. */
export class Reader {
  constructor(
    private readonly buf: Buffer,
    public offset = 0,
  ) {}

  /** Whether every byte was read. */
  get atEnd(): boolean {
    return this.offset >= this.buf.length;
  }

  private need(n: number): void {
    if (this.offset + n > this.buf.length) {
      throw new PgoutputProtocolError(
        `truncated pgoutput message '${String.fromCharCode(this.buf[0] ?? 0)}' (${this.buf.length} bytes)`,
      );
    }
  }

  uint8(): number {
    this.need(1);
    return this.buf.readUInt8(this.offset++);
  }

  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.offset);
    this.offset += 2;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  uint32(): number {
    this.need(4);
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  /** An LSN as its 64-bit number. */
  lsnValue(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  /** A timestamp as microseconds since 2000-01-01 UTC. */
  micros(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  string(): string {
    const end = this.buf.indexOf(0, this.offset);
    if (end < 0) throw new PgoutputProtocolError('unterminated string in pgoutput message');
    const s = this.buf.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return s;
  }

  /** `n` bytes of UTF-8 (a length read from the message: a negative one is refused). */
  text(n: number): string {
    if (n < 0) throw new PgoutputProtocolError(`negative length ${n} in pgoutput message`);
    this.need(n);
    const s = this.buf.toString('utf8', this.offset, this.offset + n);
    this.offset += n;
    return s;
  }
}

/** Reads the body of a Relation message (after its tag and, in a stream block, its xid). */
export function readRelation(r: Reader): RelationInfo {
  const relationId = r.uint32();
  const schema = r.string();
  const table = r.string();
  const identity = String.fromCharCode(r.uint8());
  const replicaIdentity = REPLICA_IDENTITIES[identity];
  if (!replicaIdentity) throw new PgoutputProtocolError(`unknown replica identity '${identity}'`);
  const count = r.int16();
  const columns: RelationColumn[] = [];
  for (let i = 0; i < count; i++) {
    const flags = r.uint8();
    columns.push({ isKey: (flags & 1) === 1, name: r.string(), typeOid: r.uint32(), typeMod: r.int32() });
  }
  return { relationId, schema, table, replicaIdentity, columns };
}
