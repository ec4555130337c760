import { describe, expect, it } from 'vitest';
import type { TableSchema } from '../../src/core/change.js';
import type { SourceRelation } from '../../src/core/change-stream.js';
import { relationFits, typeModOf } from '../../src/runtime/apply/streamed-relation.js';

const relation = (typeMod: number, typeOid = 1043): SourceRelation => ({
  schema: 'public',
  table: 't',
  relationId: 5,
  columns: [
    { name: 'id', typeOid: 23, typeMod: -1, isKey: true },
    { name: 'v', typeOid, typeMod, isKey: false },
  ],
});
const known = (typeName: string): TableSchema => ({
  schema: 'public',
  table: 't',
  keyColumns: ['id'],
  columns: [
    { name: 'id', typeName: 'integer', typeOid: 23, nullable: false, isKey: true },
    { name: 'v', typeName, typeOid: 1043, nullable: true, isKey: false },
  ],
});

describe('relationFits', () => {
  it('compares with the shape seen before, type modifiers included', () => {
    expect(relationFits(relation(14), relation(14), undefined)).toBe(true);
    expect(relationFits(relation(24), relation(14), known('character varying(10)'))).toBe(false);
    expect(relationFits(relation(14, 25), relation(14), undefined)).toBe(false);
  });

  it('else compares with the shape the pipeline knows, reading the modifier from its type name', () => {
    expect(relationFits(relation(14), undefined, known('character varying(10)'))).toBe(true);
    expect(relationFits(relation(24), undefined, known('character varying(10)'))).toBe(false);
    expect(relationFits(relation(14), undefined, 'cut')).toBe(false);
    expect(relationFits(relation(14), undefined, undefined)).toBe(true);
  });
});

describe('typeModOf', () => {
  it('reads the modifiers format_type prints, and no other', () => {
    expect(typeModOf('text')).toBe(-1);
    expect(typeModOf('character varying(10)[]')).toBe(14);
    expect(typeModOf('numeric(12,2)')).toBe(((12 << 16) | 2) + 4);
    expect(typeModOf('timestamp(3) with time zone')).toBe(3);
    expect(typeModOf('bit(8)')).toBe(8);
    expect(typeModOf('interval')).toBe(-1);
    expect(typeModOf('interval day')).toBeUndefined();
    expect(typeModOf('geometry(Point,4326)')).toBeUndefined();
  });
});
