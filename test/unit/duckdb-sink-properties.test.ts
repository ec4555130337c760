import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import {
  checkDuckdbSinkTables,
  duckdbTargetOf,
  parseDuckdbSinkProperties,
} from '../../src/sinks/duckdb/config.js';

function failure(run: () => unknown): AppError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('VALIDATION_FAILED');
    return error as AppError;
  }
  throw new Error('not refused');
}

const orders = { schema: 'public', table: 'orders' };
const shopOrders = { schema: 'shop', table: 'orders' };

describe('duckdb sink properties', () => {
  it('writes {schema}.{table} by default, with batch limits', () => {
    const config = parseDuckdbSinkProperties({});
    expect(duckdbTargetOf(config, orders)).toEqual(orders);
    expect(config.batch).toEqual({ maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 });
    expect(parseDuckdbSinkProperties({ batch_max_events: '5' }).batch.maxEvents).toBe(5);
  });

  it('fills a template, splitting schema and table at the first dot outside the placeholders', () => {
    const config = parseDuckdbSinkProperties({ table_id: 'raw.{schema}_{table}' });
    expect(duckdbTargetOf(config, orders)).toEqual({ schema: 'raw', table: 'public_orders' });
    // A dot inside a source name stays in its part.
    expect(duckdbTargetOf(config, { schema: 'a.b', table: 'c' })).toEqual({ schema: 'raw', table: 'a.b_c' });
    expect(duckdbTargetOf(parseDuckdbSinkProperties({ table_id: '{table}' }), orders)).toEqual({
      schema: 'main',
      table: 'orders',
    });
  });

  it.each([
    [{ table_id: '{tabel}' }, 'table_id', 'unknown placeholder'],
    [{ table_id: 'a.b.{table}' }, 'table_id', "'.'"],
    [{ table_id: '.{table}' }, 'table_id', 'empty'],
    [{ table_id: '{schema}.' }, 'table_id', 'empty'],
    [{ table_id: '' }, 'table_id', 'empty'],
    [{ table_id: 'x\n{table}' }, 'table_id', 'control'],
    [{ table_id: `${'x'.repeat(300)}{table}` }, 'table_id', 'at most'],
    [{ batch_max_events: '0' }, 'batch_max_events', 'integer'],
    [{ stream: 'x' }, 'stream', 'unknown property'],
  ])('refuses %j on sink.properties.%s', (props, key, message) => {
    const error = failure(() => parseDuckdbSinkProperties(props as Record<string, string>));
    expect(error.message).toContain(`sink.properties.${key}`);
    expect(error.message).toContain(message);
  });

  it('refuses a template mapping two source tables to one target, DuckDB comparing names without case', () => {
    const byTable = parseDuckdbSinkProperties({ table_id: '{table}' });
    const error = failure(() => checkDuckdbSinkTables(byTable, [orders, shopOrders]));
    expect(error.message).toContain('public.orders and shop.orders');
    failure(() =>
      checkDuckdbSinkTables(parseDuckdbSinkProperties({}), [orders, { schema: 'PUBLIC', table: 'Orders' }]),
    );
    failure(() =>
      checkDuckdbSinkTables(parseDuckdbSinkProperties({ table_id: 'all' }), [orders, shopOrders]),
    );
    expect(() => checkDuckdbSinkTables(parseDuckdbSinkProperties({}), [orders, shopOrders])).not.toThrow();
    expect(() =>
      checkDuckdbSinkTables(parseDuckdbSinkProperties({ table_id: 'all' }), [orders]),
    ).not.toThrow();
  });

  it('refuses a target in the bookkeeping schema or a schema DuckDB keeps', () => {
    for (const table_id of [
      '_replicator.{table}',
      '_REPLICATOR.{table}',
      'information_schema.{table}',
      'temp.{table}',
    ]) {
      const error = failure(() => checkDuckdbSinkTables(parseDuckdbSinkProperties({ table_id }), [orders]));
      expect(error.message).toContain('keeps for itself');
    }
    const error = failure(() =>
      checkDuckdbSinkTables(parseDuckdbSinkProperties({}), [{ schema: '_replicator', table: 't' }]),
    );
    expect(error.message).toContain('sink.properties.table_id');
  });
});
