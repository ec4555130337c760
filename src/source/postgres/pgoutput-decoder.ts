import type { SourceRelation, SourceRelationColumn } from '../../core/change-stream.js';
import { PgoutputProtocolError } from './errors.js';

/**
 * Reading of pgoutput logical replication messages (see "Logical Replication Message Formats" in
 * the PostgreSQL manual): the byte reader, Relation messages and timestamps. Data messages are
 * decoded by change-mapper.ts, the order of messages is followed by transaction-assembler.ts.
 */

export type ReplicaIdentity = 'default' | 'nothing' | 'full' | 'index';

/** A column of a Relation message; `isKey`: part of the replica identity (every column under REPLICA IDENTITY FULL). */
export type RelationColumn = SourceRelationColumn;

/** A table as described by a pgoutput Relation message. */
export interface RelationInfo extends SourceRelation {
  replicaIdentity: ReplicaIdentity;
  columns: RelationColumn[];
}

const PG_EPOCH_UNIX_MS = 946_684_800_000;
const REPLICA_IDENTITIES: Record<string, ReplicaIdentity> = {
  d: 'default',
  n: 'nothing',
  f: 'full',
  i: 'index',
};

/** A pgoutput timestamp in the two forms a change carries. */
export interface PgTimestamp {
  /** Milliseconds since the Unix epoch. */
  unixMs: number;
  /** ISO 8601 with microsecond precision. */
  iso: string;
}

// Transactions come many to a second: the text of the second is made once for all of them.
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * The timestamp given by the two 32-bit words of its microseconds since 2000-01-01 UTC (as they
 * stand in a message), in plain numbers: no bigint arithmetic, and no date formatting but once a
 * second, for what runs at every transaction.
 */
export function pgTimestampOfWords(high: number, low: number): PgTimestamp {
  // high * 2^32 + low microseconds, with 2^32 = 4294967 * 1000 + 296: each part stays exact.
  const spill = high * 296 + low;
  const spillMs = Math.floor(spill / 1000);
  const pgMs = high * 4_294_967 + spillMs;
  const micros = spill - spillMs * 1000;
  const unixMs = pgMs + PG_EPOCH_UNIX_MS;
  const second = Math.floor(unixMs / 1000);
  if (second !== cachedSecond) {
    const date = new Date(second * 1000);
    if (Number.isNaN(date.getTime())) {
      const text = ((BigInt(high) << 32n) | BigInt(low >>> 0)).toString();
      throw new PgoutputProtocolError(`timestamp out of range: ${text}`);
    }
    const iso = date.toISOString();
    cachedPrefix = iso.slice(0, iso.length - 4); // through the seconds' dot
    cachedSecond = second;
  }
  const ms = unixMs - second * 1000;
  return {
    unixMs,
    iso: `${cachedPrefix}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}${micros < 10 ? '00' : micros < 100 ? '0' : ''}${micros}Z`,
  };
}

const wordsOf = (micros: bigint): [number, number] => [
  Number(BigInt.asIntN(32, micros >> 32n)),
  Number(micros & 0xffffffffn),
];

/** Converts microseconds since 2000-01-01 UTC to milliseconds since the Unix epoch. */
export function pgTimestampToUnixMs(micros: bigint): number {
  return pgTimestampOfWords(...wordsOf(micros)).unixMs;
}

/** Converts microseconds since 2000-01-01 UTC to ISO 8601 with microsecond precision. */
export function pgTimestampToIso(micros: bigint): string {
  return pgTimestampOfWords(...wordsOf(micros)).iso;
}

/** Sequential big-endian reader over one message. */
export class Reader {
  private start: number;
  private limit: number;

  /** Reads `buf`, a message from its first byte to its end, from `offset` on. */
  constructor(
    private buf: Buffer,
    public offset = 0,
  ) {
    this.start = 0;
    this.limit = buf.length;
  }

  /**
   * Reads `buf` from `offset` to `end`, the message's first byte at `start`: one reader serves
   * every message of a stream.
   */
  reset(buf: Buffer, offset: number, end = buf.length, start = 0): this {
    this.buf = buf;
    this.offset = offset;
    this.limit = end;
    this.start = start;
    return this;
  }

  /** The message being read: for a part kept as it came. */
  get buffer(): Buffer {
    return this.buf;
  }

  /** Where the message ends in `buffer`. */
  get end(): number {
    return this.limit;
  }

  /** Whether every byte was read. */
  get atEnd(): boolean {
    return this.offset >= this.limit;
  }

  private need(n: number): void {
    if (this.offset + n > this.limit) {
      const tag = String.fromCharCode(this.buf[this.start] ?? 0);
      throw new PgoutputProtocolError(
        `truncated pgoutput message '${tag}' (${this.limit - this.start} bytes)`,
      );
    }
  }

  /** Passes over `n` bytes (a field not needed: nothing is made of it). */
  skip(n: number): void {
    this.need(n);
    this.offset += n;
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

  /** A timestamp (microseconds since 2000-01-01 UTC), read as its two words. */
  timestamp(): PgTimestamp {
    this.need(8);
    const t = pgTimestampOfWords(this.buf.readInt32BE(this.offset), this.buf.readUInt32BE(this.offset + 4));
    this.offset += 8;
    return t;
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
    if (end < 0 || end >= this.limit)
      throw new PgoutputProtocolError('unterminated string in pgoutput message');
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
