import { describe, expect, it } from 'vitest';
import { propertiesMarkdown } from '../../src/core/property-docs.js';
import { AppError } from '../../src/errors/app-error.js';
import {
  POSTGRES_SINK_PROPERTIES,
  parsePostgresSinkProperties,
  targetTableOf,
} from '../../src/sinks/postgres/config.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

function refusal(props: Record<string, string>): AppError {
  try {
    parsePostgresSinkProperties(props);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

describe('postgres sink properties', () => {
  it('has defaults', () => {
    const config = parsePostgresSinkProperties({});
    expect(config).toEqual({
      targetSchema: undefined,
      tableMap: new Map(),
      batch: { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 },
      createTables: true,
    });
  });

  it('parses every property', () => {
    const config = parsePostgresSinkProperties({
      target_schema: 'replica',
      'table.public.orders': 'orders_copy',
      'table.Sales.Line_Items': 'archive.items$2',
      batch_max_events: '1',
      batch_max_bytes: '1048576',
      batch_max_wait_ms: '0',
      create_tables: 'false',
    });
    expect(config.batch).toEqual({ maxEvents: 1, maxBytes: 1_048_576, maxWaitMs: 0 });
    expect(config.createTables).toBe(false);
    expect(targetTableOf(config, { schema: 'public', table: 'orders' })).toEqual({
      schema: 'replica',
      table: 'orders_copy',
    });
    expect(targetTableOf(config, { schema: 'Sales', table: 'Line_Items' })).toEqual({
      schema: 'archive',
      table: 'items$2',
    });
    expect(targetTableOf(config, { schema: 'public', table: 'other' })).toEqual({
      schema: 'replica',
      table: 'other',
    });
  });

  it('keeps the source names when nothing maps them', () => {
    const config = parsePostgresSinkProperties({ 'table.public.a': 'b' });
    expect(targetTableOf(config, { schema: 'public', table: 'a' })).toEqual({ schema: 'public', table: 'b' });
    expect(targetTableOf(config, { schema: 'x', table: 'y' })).toEqual({ schema: 'x', table: 'y' });
  });

  it('refuses an unknown key with a 422 listing the known ones', () => {
    const error = refusal({ target_shema: 'x' });
    expect(error.status).toBe(422);
    expect(error.details).toEqual({ field: 'sink.properties.target_shema' });
    for (const key of ['target_schema', 'table.<schema>.<table>', 'batch_max_events', 'create_tables']) {
      expect(error.message).toContain(key);
    }
  });

  it.each([
    ['batch_max_events', '0'],
    ['batch_max_events', '1000001'],
    ['batch_max_events', '1.5'],
    ['batch_max_events', '-1'],
    ['batch_max_events', ' 10'],
    ['batch_max_events', ''],
    ['batch_max_bytes', '1023'],
    ['batch_max_bytes', '1e6'],
    ['batch_max_wait_ms', '60001'],
    ['create_tables', 'yes'],
    ['create_tables', 'TRUE'],
    ['target_schema', 'a.b'],
    ['target_schema', 'x"; DROP'],
    ['target_schema', ''],
    ['table.public', 'x'],
    ['table.a.b.c', 'x'],
    ['table.public.t', 'a.b.c'],
    ['table.public.t', ''],
    ['table.public.t', 'bad name'],
  ])('refuses %s = %j', (key, value) => {
    const error = refusal({ [key]: value });
    expect(error.status).toBe(422);
    expect(error.details).toEqual({ field: `sink.properties.${key}` });
  });

  it('documents its properties as a markdown table', () => {
    const table = propertiesMarkdown(POSTGRES_SINK_PROPERTIES);
    expect(table.split('\n')).toHaveLength(8);
    expect(table).toContain('| `batch_max_bytes` | 16777216 |');
  });
});

describe('sink registry', () => {
  it('has the postgres sink first, then the other databases, then the message sinks', () => {
    expect(sinkTypes()).toEqual(['postgres', 'mysql', 'duckdb', 'redis', 'nats', 'rabbitmq', 'webhook']);
    const kind = findSinkKind('postgres');
    expect(kind?.parseProperties({ batch_max_events: '5' }).batch.maxEvents).toBe(5);
    expect(() => kind?.parseProperties({ nope: '1' })).toThrow(AppError);
    expect(findSinkKind('kafka')).toBeUndefined();
  });
});
