import type { SourceLogger } from '../../core/source.js';
import { StreamVerdict } from '../../core/stream-verdict.js';
import { decodeChange, RelationCache, type TransactionInfo } from './change-mapper.js';
import type { PostgresStreamItem, PostgresStreamStats } from './change-stream.js';
import { encodedInsert, TupleSlabs } from './encoded-insert.js';
import { PgoutputProtocolError } from './errors.js';
import { Reader, readRelation } from './pgoutput-decoder.js';
import { SpoolDirectory, StreamSpool } from './stream-spool.js';
import { StreamedRelations } from './streamed-relations.js';

export interface TransactionAssemblerOptions {
  /** Receives the items of non-streamed transactions, relations and idle positions, in order. */
  emit: (item: PostgresStreamItem) => void;
  /** Where spool files of streamed transactions go; the OS temp directory by default. */
  spoolDir?: string;
  /** Bytes of a streamed transaction held in memory before it spills to a spool file. Default 8 MiB. */
  memoryLimitBytes?: number;
  logger?: SourceLogger;
  /**
   * Also emits the first streamed transaction in progress as it arrives (`stream-change` and the
   * other streamed items), still spooling it; its replay then waits for the consumer's verdict.
   */
  live?: boolean;
}

/** What the assembler counts; the rest of PostgresStreamStats is the runner's. */
export type AssemblerStats = Pick<
  PostgresStreamStats,
  | 'transactions'
  | 'streamedTransactions'
  | 'abortedStreamedTransactions'
  | 'abortedSubtransactions'
  | 'spilledTransactions'
  | 'arrivingSinceMs'
>;

const TAG = {
  begin: 0x42, // B
  commit: 0x43, // C
  relation: 0x52, // R
  insert: 0x49, // I
  update: 0x55, // U
  delete: 0x44, // D
  truncate: 0x54, // T
  streamStart: 0x53, // S
  streamStop: 0x45, // E
  streamCommit: 0x63, // c
  streamAbort: 0x41, // A
  type: 0x59, // Y
  origin: 0x4f, // O
  message: 0x4d, // M
} as const;

/**
 * Turns pgoutput messages (protocol 1 and 2, see "Logical Replication Message Formats" in the
 * PostgreSQL manual) into stream items, synchronously and in commit order. A transaction that was
 * not streamed is already committed when the server sends it, so its items are emitted as its
 * messages arrive. A streamed (in-progress) transaction comes in stream blocks, between Stream
 * Start and Stream Stop, whose data messages carry the (sub)transaction's xid after their tag:
 * they are spooled raw until the Stream Commit, which returns the transaction's replay, or the
 * Stream Abort, which drops the transaction or one of its subtransactions.
 *
 * Protocol violations throw PgoutputProtocolError; the assembler is unusable after one. Its only
 * I/O is the spool files, which dispose() deletes.
 */
/** The streamed transaction whose changes are handed over as they arrive. */
interface LiveTransaction {
  xid: number;
  relations: StreamedRelations;
  /** What its last change was decoded for (its subtransaction's xid). */
  txn: TransactionInfo | undefined;
}

export class TransactionAssembler {
  private readonly emit: (item: PostgresStreamItem) => void;
  private readonly relations = new RelationCache();
  // One reader for every message: each is read whole before the next comes.
  private readonly reader = new Reader(Buffer.alloc(0));
  /** Where kept inserts' tuples are copied to, so that they hold no read of the socket. */
  private readonly slabs = new TupleSlabs();
  private readonly directory: SpoolDirectory;
  private readonly memoryLimitBytes: number;
  private readonly logger: SourceLogger | undefined;
  private readonly streamed = new Map<number, StreamSpool>();
  /** When each streamed transaction's first message came (ms), for the lag. */
  private readonly arrivedAt = new Map<number, number>();
  /** The spool of the replay handed out and not finished yet, and its commit time (ms). */
  private replaying: StreamSpool | undefined;
  private replayingCommitMs: number | null = null;
  private txn: TransactionInfo | undefined;
  private streamXid: number | undefined;
  private lastIdle = 0n;
  private readonly liveWanted: boolean;
  /** The streamed transaction emitted as it arrives, with the relations its changes decode with. */
  private live: LiveTransaction | undefined;
  private readonly counters: Omit<AssemblerStats, 'arrivingSinceMs'> = {
    transactions: 0,
    streamedTransactions: 0,
    abortedStreamedTransactions: 0,
    abortedSubtransactions: 0,
    spilledTransactions: 0,
  };

  constructor(options: TransactionAssemblerOptions) {
    this.emit = options.emit;
    this.directory = new SpoolDirectory(options.spoolDir);
    this.memoryLimitBytes = options.memoryLimitBytes ?? 8 << 20;
    this.logger = options.logger;
    this.liveWanted = options.live ?? false;
  }

  stats(): AssemblerStats {
    let arrivingSinceMs = this.replaying ? this.replayingCommitMs : null;
    for (const at of this.arrivedAt.values()) {
      if (arrivingSinceMs === null || at < arrivingSinceMs) arrivingSinceMs = at;
    }
    return { ...this.counters, arrivingSinceMs };
  }

  /**
   * Takes one message (the payload of an XLogData message, in `payload` from `start` to `end`;
   * only read during the call). Returns
   * the replay of a streamed transaction at its Stream Commit, undefined otherwise. The replay
   * must be run to its end before the next accept() or keepalive(): its relations update the
   * cache as they are reached.
   * @throws PgoutputProtocolError for a malformed message or one out of the protocol's order
   */
  accept(
    payload: Buffer,
    start = 0,
    end = payload.length,
  ): Generator<PostgresStreamItem, void, undefined> | undefined {
    if (this.replaying) throw new Error('a message was accepted while a streamed transaction replays');
    const tag = payload[start];
    const r = this.reader.reset(payload, start + 1, end, start);
    switch (tag) {
      case TAG.begin: {
        if (this.txn || this.streamXid !== undefined)
          throw new PgoutputProtocolError('Begin inside a transaction');
        const commitLsn = r.lsnValue();
        const commitTime = r.timestamp();
        const xid = r.uint32();
        this.txn = { xid, commitLsn, commitTime: commitTime.iso };
        this.emit({ kind: 'begin', xid, commitTimeMs: commitTime.unixMs, commitLsn });
        return;
      }
      case TAG.commit: {
        const txn = this.txn;
        if (!txn) throw new PgoutputProtocolError('Commit without Begin');
        r.uint8(); // flags
        r.skip(8); // the commit record's LSN, given at Begin
        const endLsn = r.lsnValue();
        this.txn = undefined;
        this.counters.transactions++;
        this.emit({ kind: 'commit', xid: txn.xid, endLsn });
        return;
      }
      case TAG.relation:
      case TAG.insert:
      case TAG.update:
      case TAG.delete:
      case TAG.truncate: {
        if (this.streamXid !== undefined) {
          (this.streamed.get(this.streamXid) as StreamSpool).append(payload, start, end);
          if (this.live?.xid === this.streamXid) this.emit(this.liveItem(payload, start, end, this.live));
        } else if (tag === TAG.relation) {
          this.emit(this.relation(r));
        } else if (this.txn) {
          const change =
            (tag === TAG.insert ? encodedInsert(r, this.relations, this.txn, this.slabs) : undefined) ??
            decodeChange(r, dataTag(tag), this.relations, this.txn);
          this.emit({ kind: 'change', change });
        } else {
          throw new PgoutputProtocolError(`${String.fromCharCode(tag)} message outside a transaction`);
        }
        return;
      }
      case TAG.streamStart: {
        if (this.txn || this.streamXid !== undefined) {
          throw new PgoutputProtocolError('Stream Start inside a transaction');
        }
        const xid = r.uint32();
        const firstSegment = r.uint8() === 1;
        if (!this.streamed.has(xid)) {
          // A later segment of an unknown transaction means its first changes were never seen.
          if (!firstSegment) throw new PgoutputProtocolError(`Stream Start of unknown transaction ${xid}`);
          this.streamed.set(xid, this.newSpool(xid));
          this.arrivedAt.set(xid, Date.now());
          if (this.liveWanted && !this.live)
            this.live = { xid, relations: new StreamedRelations(this.relations), txn: undefined };
          this.logger?.debug({ xid }, 'spooling a streamed in-progress transaction');
        }
        this.streamXid = xid;
        return;
      }
      case TAG.streamStop:
        this.streamXid = undefined;
        return;
      case TAG.streamCommit: {
        if (this.txn || this.streamXid !== undefined) {
          throw new PgoutputProtocolError('Stream Commit inside a transaction');
        }
        const xid = r.uint32();
        r.uint8(); // flags
        const commitLsn = r.lsnValue();
        const endLsn = r.lsnValue();
        const commitTime = r.timestamp();
        let spool = this.streamed.get(xid);
        if (!spool) {
          this.logger?.warn({ xid }, 'Stream Commit of a transaction that streamed no change');
          spool = this.newSpool(xid);
        }
        this.streamed.delete(xid);
        this.arrivedAt.delete(xid);
        const verdict = this.live?.xid === xid ? new StreamVerdict() : undefined;
        if (verdict) this.live = undefined;
        this.counters.streamedTransactions++;
        if (spool.spilled) this.counters.spilledTransactions++;
        this.replaying = spool;
        this.replayingCommitMs = commitTime.unixMs;
        const txn = { xid, commitLsn, commitTime: commitTime.iso };
        return this.replay(spool, txn, endLsn, commitTime.unixMs, verdict);
      }
      case TAG.streamAbort: {
        const xid = r.uint32();
        const subxid = r.uint32();
        const spool = this.streamed.get(xid);
        if (this.live?.xid === xid) {
          if (subxid === xid) this.live = undefined;
          this.emit({ kind: 'stream-abort', xid, subxid });
        }
        if (subxid === xid) {
          this.streamed.delete(xid);
          this.arrivedAt.delete(xid);
          this.counters.abortedStreamedTransactions++;
          spool?.dispose();
        } else {
          this.counters.abortedSubtransactions++;
          spool?.abortSubtransaction(subxid);
        }
        return;
      }
      case TAG.type:
      case TAG.origin:
      case TAG.message:
        // Nothing a sink applies.
        return;
      default:
        throw new PgoutputProtocolError(
          `unknown pgoutput message type '${String.fromCharCode(tag ?? 0)}' (0x${(tag ?? 0).toString(16)})`,
        );
    }
  }

  /**
   * The server has sent everything up to `walEnd`. Emits an idle item when no transaction or
   * stream block is open and `walEnd` is past the last idle item's.
   */
  keepalive(walEnd: bigint): void {
    if (this.replaying) throw new Error('a keepalive was accepted while a streamed transaction replays');
    // Inside a transaction (or a stream block) the server may not have sent all of it yet. A
    // streamed transaction still pending does not matter: its commit record lies beyond walEnd,
    // so acking walEnd cannot make the server skip it.
    if (this.txn || this.streamXid !== undefined) return;
    if (walEnd <= this.lastIdle) return;
    this.lastIdle = walEnd;
    this.emit({ kind: 'idle', walEnd });
  }

  /** Deletes every spool, the replaying one's included, and their directory. Safe to call twice. */
  dispose(): void {
    for (const spool of this.streamed.values()) spool.dispose();
    this.streamed.clear();
    this.arrivedAt.clear();
    this.replaying?.dispose();
    this.replaying = undefined;
    this.live = undefined;
    this.txn = undefined;
    this.streamXid = undefined;
    this.directory.remove();
  }

  private relation(r: Reader): PostgresStreamItem {
    const relation = readRelation(r);
    this.relations.set(relation);
    return { kind: 'relation', relation };
  }

  /** Decodes a spooled message, which carries its (sub)transaction's xid after its tag. */
  private replayed(message: Buffer, txn: TransactionInfo): PostgresStreamItem {
    const r = this.reader.reset(message, 5);
    const tag = message[0];
    if (tag === TAG.relation) return this.relation(r);
    return { kind: 'change', change: decodeChange(r, dataTag(tag), this.relations, txn) };
  }

  /** A spooled message of the transaction emitted as it arrives, decoded for it. */
  private liveItem(message: Buffer, start: number, end: number, live: LiveTransaction): PostgresStreamItem {
    const r = this.reader.reset(message, start + 5, end, start);
    const tag = message[start];
    if (tag === TAG.relation) {
      const relation = readRelation(r);
      live.relations.set(relation);
      return { kind: 'stream-relation', xid: live.xid, relation };
    }
    // Its commit is not known yet: the sink path these changes take reads neither field. One per
    // (sub)transaction in a row, not one per change.
    const xid = message.readUInt32BE(start + 1);
    if (live.txn?.xid !== xid) live.txn = { xid, commitLsn: UNKNOWN_COMMIT_LSN, commitTime: '' };
    const txn = live.txn;
    // An insert's row stays encoded: a sink that holds the transaction may COPY it as it came.
    const change =
      (tag === TAG.insert ? encodedInsert(r, live.relations, txn, this.slabs) : undefined) ??
      decodeChange(r, dataTag(tag), live.relations, txn);
    return { kind: 'stream-change', xid: live.xid, change };
  }

  private newSpool(xid: number): StreamSpool {
    return new StreamSpool(this.directory, `stream-${xid}`, this.memoryLimitBytes);
  }

  /** A streamed transaction's items, decoded from its spool as they are taken. */
  private *replay(
    spool: StreamSpool,
    txn: TransactionInfo,
    endLsn: bigint,
    commitTimeMs: number,
    verdict?: StreamVerdict,
  ): Generator<PostgresStreamItem, void, undefined> {
    try {
      if (verdict) {
        // The consumer had it as it arrived: the replay runs only if it did not deliver it.
        yield { kind: 'stream-commit', xid: txn.xid, endLsn, commitTimeMs, verdict };
        if (verdict.delivered) {
          this.counters.transactions++;
          return;
        }
      }
      yield { kind: 'begin', xid: txn.xid, commitTimeMs, commitLsn: txn.commitLsn };
      // Delegated: the spool's iterator results pass through, none is made per item here.
      yield* spool.messages((message) => this.replayed(message, txn));
      this.counters.transactions++;
      yield { kind: 'commit', xid: txn.xid, endLsn };
    } finally {
      spool.dispose();
      if (this.replaying === spool) this.replaying = undefined;
    }
  }
}

/** The commit position of a change of a transaction still in progress. */
const UNKNOWN_COMMIT_LSN = 0n;

function dataTag(tag: number | undefined): 'I' | 'U' | 'D' | 'T' {
  switch (tag) {
    case TAG.insert:
      return 'I';
    case TAG.update:
      return 'U';
    case TAG.delete:
      return 'D';
    case TAG.truncate:
      return 'T';
    default:
      throw new PgoutputProtocolError(
        `unexpected message '${String.fromCharCode(tag ?? 0)}' in a transaction`,
      );
  }
}
