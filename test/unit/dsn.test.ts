import { describe, expect, it } from 'vitest';
import { findConnectionType } from '../../src/connections/connection-types.js';
import { joinDsn, maskDsn, splitDsn } from '../../src/connections/dsn.js';
import { AppError } from '../../src/errors/app-error.js';

const postgres = findConnectionType('postgres');
if (!postgres) throw new Error('postgres type missing');

describe('DSN handling', () => {
  it('splits out the password, decoded, and joins it back encoded', () => {
    const split = splitDsn('postgres://al%40ice:p%40ss%3Aw%2Frd@db:5432/shop?sslmode=require', postgres);
    expect(split).toEqual({
      publicDsn: 'postgres://al%40ice@db:5432/shop?sslmode=require',
      password: 'p@ss:w/rd',
    });
    const joined = joinDsn(split.publicDsn, split.password);
    expect(new URL(joined).password).toBe('p%40ss%3Aw%2Frd');
    expect(maskDsn(split.publicDsn, true)).toBe('postgres://al%40ice:****@db:5432/shop?sslmode=require');
  });

  it('takes a password from the query options too', () => {
    expect(splitDsn('postgresql://u@h/db?password=x&sslmode=disable', postgres)).toEqual({
      publicDsn: 'postgresql://u@h/db?sslmode=disable',
      password: 'x',
    });
  });

  it('keeps a DSN without password as it is', () => {
    expect(splitDsn('postgres://h/db', postgres)).toEqual({
      publicDsn: 'postgres://h/db',
      password: undefined,
    });
    expect(maskDsn('postgres://h/db', false)).toBe('postgres://h/db');
    expect(joinDsn('postgres://h/db', undefined)).toBe('postgres://h/db');
  });

  it.each([
    ['', 'must be a URL'],
    ['h/db', 'must be a URL'],
    ['http://h/db', 'scheme must be postgres:// or postgresql://'],
    ['postgres:///db', 'must name a host'],
    ['postgres://h', 'must name one database'],
    ['postgres://h/a/b', 'must name one database'],
    ['postgres://u:p@h/db?password=q', 'both in the user part and in the query'],
  ])('refuses %j', (dsn, message) => {
    const attempt = () => splitDsn(dsn, postgres);
    expect(attempt).toThrow(AppError);
    expect(attempt).toThrow(message);
  });
});
