/** Builders of pgoutput messages laid out the way the server sends them (big-endian). */

/** One tuple value: null, 'u!' (unchanged TOAST), a string (text) or a Buffer (binary). */
export type TupleInput = string | null | 'u!' | Buffer;

/** Builds a pgoutput message field by field. */
export class Msg {
  private readonly parts: Buffer[] = [];

  constructor(tag: string) {
    this.char(tag);
  }

  char(c: string): this {
    return this.u8(c.charCodeAt(0));
  }

  u8(v: number): this {
    const b = Buffer.alloc(1);
    b.writeUInt8(v);
    this.parts.push(b);
    return this;
  }

  i16(v: number): this {
    const b = Buffer.alloc(2);
    b.writeInt16BE(v);
    this.parts.push(b);
    return this;
  }

  i32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v);
    this.parts.push(b);
    return this;
  }

  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v);
    this.parts.push(b);
    return this;
  }

  u64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64BE(v);
    this.parts.push(b);
    return this;
  }

  i64(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(v);
    this.parts.push(b);
    return this;
  }

  str(s: string): this {
    this.parts.push(Buffer.from(s, 'utf8'), Buffer.from([0]));
    return this;
  }

  bytes(b: Buffer): this {
    this.parts.push(b);
    return this;
  }

  /** The xid of a data message inside a stream block, when given. */
  xid(xid: number | undefined): this {
    return xid === undefined ? this : this.u32(xid);
  }

  /** TupleData. */
  tuple(values: TupleInput[]): this {
    this.i16(values.length);
    for (const v of values) {
      if (v === null) this.char('n');
      else if (v === 'u!') this.char('u');
      else if (Buffer.isBuffer(v)) this.char('b').i32(v.length).bytes(v);
      else {
        const text = Buffer.from(v, 'utf8');
        this.char('t').i32(text.length).bytes(text);
      }
    }
    return this;
  }

  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** A timestamp in microseconds since 2000-01-01 UTC. */
export function pgMicros(date: Date, extraMicros = 0): bigint {
  return BigInt(date.getTime() - Date.UTC(2000, 0, 1)) * 1000n + BigInt(extraMicros);
}

export interface ColumnInput {
  name: string;
  key?: boolean;
  /** 25 (text) by default. */
  typeOid?: number;
  typeMod?: number;
}

export interface RelationInput {
  relationId: number;
  schema?: string;
  table: string;
  /** d, n, f or i; d by default. */
  identity?: string;
  columns: ColumnInput[];
}

/** The old tuple of an update or delete: its key ('K') or the whole row ('O'). */
export interface OldInput {
  kind: 'K' | 'O';
  values: TupleInput[];
}

/** Messages of protocol 1 and 2; `xid` is given for data messages inside a stream block. */
export const pgoutput = {
  begin: (finalLsn: bigint, micros: bigint, xid: number): Buffer =>
    new Msg('B').u64(finalLsn).i64(micros).u32(xid).build(),

  commit: (commitLsn: bigint, endLsn: bigint, micros: bigint): Buffer =>
    new Msg('C').u8(0).u64(commitLsn).u64(endLsn).i64(micros).build(),

  origin: (lsn: bigint, name: string): Buffer => new Msg('O').u64(lsn).str(name).build(),

  relation(relation: RelationInput, xid?: number): Buffer {
    const m = new Msg('R')
      .xid(xid)
      .u32(relation.relationId)
      .str(relation.schema ?? 'public')
      .str(relation.table)
      .char(relation.identity ?? 'd')
      .i16(relation.columns.length);
    for (const c of relation.columns)
      m.u8(c.key ? 1 : 0)
        .str(c.name)
        .u32(c.typeOid ?? 25)
        .i32(c.typeMod ?? -1);
    return m.build();
  },

  type: (typeOid: number, schema: string, name: string, xid?: number): Buffer =>
    new Msg('Y').xid(xid).u32(typeOid).str(schema).str(name).build(),

  insert: (relationId: number, values: TupleInput[], xid?: number): Buffer =>
    new Msg('I').xid(xid).u32(relationId).char('N').tuple(values).build(),

  update(relationId: number, values: TupleInput[], old?: OldInput, xid?: number): Buffer {
    const m = new Msg('U').xid(xid).u32(relationId);
    if (old) m.char(old.kind).tuple(old.values);
    return m.char('N').tuple(values).build();
  },

  delete: (relationId: number, old: OldInput, xid?: number): Buffer =>
    new Msg('D').xid(xid).u32(relationId).char(old.kind).tuple(old.values).build(),

  /** `options`: 1 cascade, 2 restart identity. */
  truncate(relationIds: number[], options = 0, xid?: number): Buffer {
    const m = new Msg('T').xid(xid).i32(relationIds.length).u8(options);
    for (const id of relationIds) m.u32(id);
    return m.build();
  },

  message: (transactional: boolean, lsn: bigint, prefix: string, content: Buffer, xid?: number): Buffer =>
    new Msg('M')
      .xid(xid)
      .u8(transactional ? 1 : 0)
      .u64(lsn)
      .str(prefix)
      .i32(content.length)
      .bytes(content)
      .build(),

  streamStart: (xid: number, firstSegment: boolean): Buffer =>
    new Msg('S')
      .u32(xid)
      .u8(firstSegment ? 1 : 0)
      .build(),

  streamStop: (): Buffer => new Msg('E').build(),

  streamCommit: (xid: number, commitLsn: bigint, endLsn: bigint, micros: bigint): Buffer =>
    new Msg('c').u32(xid).u8(0).u64(commitLsn).u64(endLsn).i64(micros).build(),

  streamAbort: (xid: number, subxid: number): Buffer => new Msg('A').u32(xid).u32(subxid).build(),
};
