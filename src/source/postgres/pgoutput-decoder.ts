import { PgoutputProtocolError } from './errors.js';
import { formatLsn } from './lsn.js';

/**
 * Decoder of the pgoutput logical replication protocol, versions 1 and 2 (see "Logical
 * Replication Message Formats" in the PostgreSQL manual). Version 2 adds streamed in-progress
 * transactions: between Stream Start and Stream Stop every data message is prefixed by the xid of
 * the (sub)transaction it belongs to, which is why the decoder is stateful.
 */

/** One column value of a tuple as sent by pgoutput. */
export type TupleValue =
  | { kind: 'null' }
  /** A TOASTed value the update did not change, so it was not sent. */
  | { kind: 'unchanged-toast' }
  | { kind: 'text'; value: string }
  | { kind: 'binary'; value: Buffer };

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

/** The old image of an updated or deleted row: only its replica identity ('K'), or all of it ('O'). */
export interface OldTuple {
  kind: 'key' | 'full';
  values: TupleValue[];
}

/** `xid` is set on data messages inside a streamed transaction: the (sub)transaction they belong to. */
interface InStream {
  xid?: number;
}

export type PgoutputMessage =
  | { tag: 'begin'; finalLsn: string; commitTime: string; xid: number }
  | { tag: 'commit'; flags: number; commitLsn: string; endLsn: string; commitTime: string }
  | { tag: 'origin'; originLsn: string; name: string }
  | ({ tag: 'relation' } & RelationInfo & InStream)
  | ({ tag: 'type'; typeOid: number; schema: string; name: string } & InStream)
  | ({ tag: 'insert'; relationId: number; values: TupleValue[] } & InStream)
  | ({ tag: 'update'; relationId: number; old?: OldTuple; values: TupleValue[] } & InStream)
  | ({ tag: 'delete'; relationId: number; old: OldTuple } & InStream)
  | ({ tag: 'truncate'; relationIds: number[]; cascade: boolean; restartIdentity: boolean } & InStream)
  | ({ tag: 'message'; transactional: boolean; lsn: string; prefix: string; content: Buffer } & InStream)
  | { tag: 'stream-start'; xid: number; firstSegment: boolean }
  | { tag: 'stream-stop' }
  | {
      tag: 'stream-commit';
      xid: number;
      flags: number;
      commitLsn: string;
      endLsn: string;
      commitTime: string;
    }
  | { tag: 'stream-abort'; xid: number; subxid: number };

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

  lsn(): string {
    return formatLsn(this.lsnValue());
  }

  /** An LSN as its 64-bit number. */
  lsnValue(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  timestamp(): string {
    return pgTimestampToIso(this.micros());
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

  // A copy: the caller's buffer belongs to the connection's parser and is reused.
  bytes(n: number): Buffer {
    this.need(n);
    const b = Buffer.from(this.buf.subarray(this.offset, this.offset + n));
    this.offset += n;
    return b;
  }

  text(n: number): string {
    this.need(n);
    const s = this.buf.toString('utf8', this.offset, this.offset + n);
    this.offset += n;
    return s;
  }

  tuple(): TupleValue[] {
    const count = this.int16();
    const values: TupleValue[] = [];
    for (let i = 0; i < count; i++) {
      const kind = String.fromCharCode(this.uint8());
      if (kind === 'n') values.push({ kind: 'null' });
      else if (kind === 'u') values.push({ kind: 'unchanged-toast' });
      else if (kind === 't') values.push({ kind: 'text', value: this.text(this.int32()) });
      else if (kind === 'b') values.push({ kind: 'binary', value: this.bytes(this.int32()) });
      else throw new PgoutputProtocolError(`unknown tuple column kind '${kind}'`);
    }
    return values;
  }

  oldTuple(): OldTuple {
    const marker = String.fromCharCode(this.uint8());
    if (marker !== 'K' && marker !== 'O')
      throw new PgoutputProtocolError(`expected 'K' or 'O', got '${marker}'`);
    return { kind: marker === 'K' ? 'key' : 'full', values: this.tuple() };
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

/**
 * Decodes pgoutput messages one at a time, tracking whether a stream block (between Stream Start
 * and Stream Stop) is open, as that changes the layout of data messages.
 */
export class PgoutputDecoder {
  private streaming = false;

  /** Whether a stream block is open, i.e. data messages carry an xid. */
  get inStreamBlock(): boolean {
    return this.streaming;
  }

  /**
   * Decodes one message (the payload of an XLogData message).
   * @throws PgoutputProtocolError for an unknown or malformed message.
   */
  decode(buf: Buffer): PgoutputMessage {
    const r = new Reader(buf);
    const tag = String.fromCharCode(r.uint8());
    const xid = () => (this.streaming ? { xid: r.uint32() } : {});
    switch (tag) {
      case 'B':
        return { tag: 'begin', finalLsn: r.lsn(), commitTime: r.timestamp(), xid: r.uint32() };
      case 'C':
        return {
          tag: 'commit',
          flags: r.uint8(),
          commitLsn: r.lsn(),
          endLsn: r.lsn(),
          commitTime: r.timestamp(),
        };
      case 'O':
        return { tag: 'origin', originLsn: r.lsn(), name: r.string() };
      case 'R':
        return { tag: 'relation', ...xid(), ...readRelation(r) };
      case 'Y':
        return { tag: 'type', ...xid(), typeOid: r.uint32(), schema: r.string(), name: r.string() };
      case 'I': {
        const head = { tag: 'insert' as const, ...xid(), relationId: r.uint32() };
        const marker = String.fromCharCode(r.uint8());
        if (marker !== 'N') throw new PgoutputProtocolError(`insert: expected 'N', got '${marker}'`);
        return { ...head, values: r.tuple() };
      }
      case 'U': {
        const head = { tag: 'update' as const, ...xid(), relationId: r.uint32() };
        let marker = String.fromCharCode(r.uint8());
        let old: OldTuple | undefined;
        if (marker === 'K' || marker === 'O') {
          old = { kind: marker === 'K' ? 'key' : 'full', values: r.tuple() };
          marker = String.fromCharCode(r.uint8());
        }
        if (marker !== 'N') throw new PgoutputProtocolError(`update: expected 'N', got '${marker}'`);
        return old ? { ...head, old, values: r.tuple() } : { ...head, values: r.tuple() };
      }
      case 'D':
        return { tag: 'delete', ...xid(), relationId: r.uint32(), old: r.oldTuple() };
      case 'T': {
        const head = { tag: 'truncate' as const, ...xid() };
        const count = r.int32();
        const options = r.uint8();
        const relationIds: number[] = [];
        for (let i = 0; i < count; i++) relationIds.push(r.uint32());
        return { ...head, relationIds, cascade: (options & 1) === 1, restartIdentity: (options & 2) === 2 };
      }
      case 'M': {
        const head = { tag: 'message' as const, ...xid() };
        const transactional = (r.uint8() & 1) === 1;
        const lsn = r.lsn();
        const prefix = r.string();
        return { ...head, transactional, lsn, prefix, content: r.bytes(r.int32()) };
      }
      case 'S': {
        const message = { tag: 'stream-start' as const, xid: r.uint32(), firstSegment: r.uint8() === 1 };
        this.streaming = true;
        return message;
      }
      case 'E':
        this.streaming = false;
        return { tag: 'stream-stop' };
      case 'c':
        return {
          tag: 'stream-commit',
          xid: r.uint32(),
          flags: r.uint8(),
          commitLsn: r.lsn(),
          endLsn: r.lsn(),
          commitTime: r.timestamp(),
        };
      case 'A':
        return { tag: 'stream-abort', xid: r.uint32(), subxid: r.uint32() };
      default:
        throw new PgoutputProtocolError(
          `unknown pgoutput message type '${tag}' (0x${(buf[0] ?? 0).toString(16)})`,
        );
    }
  }
}
