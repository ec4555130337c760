import { describe, expect, it } from 'vitest';
import { isRefusal, nameRefusals, SideRefusalError } from '../../src/core/side-refusal.js';
import { isRetryable } from '../../src/runtime/error-kinds.js';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
const mysqlError = (errno: number, code: string, message: string) =>
  Object.assign(new Error(message), { errno, code, sqlState: '28000' });

describe('a refusal names the side that refused', () => {
  it('tells refusals of a login or a privilege from other failures', () => {
    expect(isRefusal(pgError('28000', 'role "app" is not permitted to log in'))).toBe(true);
    expect(isRefusal(pgError('28P01', 'password authentication failed for user "app"'))).toBe(true);
    expect(isRefusal(pgError('42501', 'permission denied for table t'))).toBe(true);
    expect(isRefusal(mysqlError(1045, 'ER_ACCESS_DENIED_ERROR', "Access denied for user 'app'@'%'"))).toBe(
      true,
    );
    expect(isRefusal(pgError('57P01', 'terminating connection due to administrator command'))).toBe(false);
    expect(isRefusal(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(isRefusal(mysqlError(1213, 'ER_LOCK_DEADLOCK', 'Deadlock found'))).toBe(false);
  });

  it('names the side and connection, keeps the code, and is not retried', async () => {
    const sink = nameRefusals(
      {
        open: async () => {
          throw pgError('28000', 'role "app" is not permitted to log in');
        },
        lost: async () => {
          throw pgError('57P01', 'terminating connection');
        },
      },
      'sink',
      'replica',
    );
    const refused = await sink.open().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SideRefusalError);
    expect((refused as Error).message).toBe(
      `the sink refused: sink connection 'replica': role "app" is not permitted to log in`,
    );
    expect((refused as SideRefusalError).code).toBe('28000');
    expect(isRetryable(refused)).toBe(false);
    const lost = await sink.lost().catch((e: unknown) => e);
    expect(lost).not.toBeInstanceOf(SideRefusalError);
    expect(isRetryable(lost)).toBe(true);
  });
});
