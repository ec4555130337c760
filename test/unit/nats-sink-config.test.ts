import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import {
  checkNatsSinkTables,
  parseNatsSinkProperties,
  streamSubjectOf,
  subjectOf,
} from '../../src/sinks/nats/config.js';
import { natsSinkKind } from '../../src/sinks/nats/kind.js';
import { subjectProblem, wildcardOf } from '../../src/sinks/nats/subjects.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

function refusal(act: () => unknown): AppError {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

describe('nats sink properties', () => {
  it('has defaults', () => {
    expect(parseNatsSinkProperties({})).toEqual({
      subject: 'replicator.{schema}.{table}',
      stream: 'REPLICATOR',
      duplicateWindowMs: 120_000,
      batch: { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 },
    });
  });

  it('names each table subject from the template', () => {
    const config = parseNatsSinkProperties({
      subject: 'cdc.{schema}.{table}.{table}',
      stream: 'Orders_cdc-1',
      duplicate_window_ms: '600000',
    });
    expect(subjectOf(config, { schema: 'public', table: 'orders' })).toBe('cdc.public.orders.orders');
    expect([config.stream, config.duplicateWindowMs]).toEqual(['Orders_cdc-1', 600_000]);
    // A template without a placeholder puts every table on one subject.
    expect(subjectOf(parseNatsSinkProperties({ subject: 'all' }), { schema: 's', table: 't' })).toBe('all');
    // Names are taken as they are, `$&` and all.
    expect(subjectOf(config, { schema: '$&', table: '{schema}' })).toBe('cdc.$&.{schema}.{schema}');
  });

  it.each([
    [{ subject: '' }, 'sink.properties.subject', 'must not be empty'],
    [{ subject: '  ' }, 'sink.properties.subject', 'must not be empty'],
    [{ subject: 'cdc.{tabel}' }, 'sink.properties.subject', 'unknown placeholder {tabel}'],
    [{ subject: 'cdc.{table' }, 'sink.properties.subject', 'brace'],
    [{ subject: 'cdc}' }, 'sink.properties.subject', 'brace'],
    [{ subject: 'a\nb' }, 'sink.properties.subject', 'control characters'],
    [{ subject: 'x'.repeat(256) }, 'sink.properties.subject', 'at most 255'],
    [{ subject: 'cdc..{table}' }, 'sink.properties.subject', 'empty token'],
    [{ subject: '.cdc.{table}' }, 'sink.properties.subject', 'empty token'],
    [{ subject: 'cdc.{table}.' }, 'sink.properties.subject', 'empty token'],
    [{ subject: 'cdc {table}' }, 'sink.properties.subject', 'white space'],
    [{ subject: 'cdc.*.{table}' }, 'sink.properties.subject', 'wildcard'],
    [{ subject: 'cdc.>' }, 'sink.properties.subject', 'wildcard'],
    [{ subject: '$JS.API.STREAM.DELETE.{table}' }, 'sink.properties.subject', "starts with '$'"],
    [{ subject: '_INBOX.{table}' }, 'sink.properties.subject', '_INBOX'],
    [{ stream: '' }, 'sink.properties.stream', '1 to 64 letters'],
    [{ stream: 'a.b' }, 'sink.properties.stream', '1 to 64 letters'],
    [{ stream: 'a b' }, 'sink.properties.stream', '1 to 64 letters'],
    [{ stream: 'a*' }, 'sink.properties.stream', '1 to 64 letters'],
    [{ stream: '../x' }, 'sink.properties.stream', '1 to 64 letters'],
    [{ stream: 'x'.repeat(65) }, 'sink.properties.stream', '1 to 64 letters'],
    [{ duplicate_window_ms: '999' }, 'sink.properties.duplicate_window_ms', 'from 1000 to 604800000'],
    [{ duplicate_window_ms: '2m' }, 'sink.properties.duplicate_window_ms', 'integer'],
    [{ batch_max_events: '0' }, 'sink.properties.batch_max_events', 'from 1 to 1000000'],
    [{ batch_max_bytes: '10' }, 'sink.properties.batch_max_bytes', 'from 1024'],
    [{ batch_max_wait_ms: '60001' }, 'sink.properties.batch_max_wait_ms', 'to 60000'],
    [
      { maxlen: '5' },
      'sink.properties.maxlen',
      'unknown property; known properties are subject, stream, duplicate_window_ms',
    ],
  ])('refuses %j', (props, field, problem) => {
    const error = refusal(() => parseNatsSinkProperties(props));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ field });
    expect(error.message).toContain(problem);
  });

  it.each([
    [{ schema: 'public', table: 'my.table' }, "its table name holds '.'", false],
    [{ schema: 'public', table: 'my table' }, 'its table name holds white space', false],
    [{ schema: 'public', table: 'a*' }, 'its table name holds a wildcard', false],
    [{ schema: 'public', table: '>' }, 'its table name holds a wildcard', false],
    [{ schema: 'public', table: 'tab\tle' }, 'its table name holds white space', false],
    [{ schema: 'sales.eu', table: 'orders' }, "its schema name holds '.'", true],
  ])('refuses a table whose names cannot be a subject token: %j', (table, problem, badSchema) => {
    const config = parseNatsSinkProperties({});
    const error = refusal(() => checkNatsSinkTables(config, [{ schema: 'public', table: 'ok' }, table]));
    expect(error.details).toEqual({ field: 'sink.properties.subject' });
    expect(error.message).toContain(problem);
    // Leaving the bad name's placeholder out of the template lets the table through.
    const without = parseNatsSinkProperties({ subject: badSchema ? 'cdc.{table}' : 'cdc.{schema}' });
    expect(() => checkNatsSinkTables(without, [table])).not.toThrow();
  });

  it('refuses a table whose name would make a reserved subject', () => {
    const config = parseNatsSinkProperties({ subject: '{schema}.{table}' });
    expect(() => checkNatsSinkTables(config, [{ schema: '$JS', table: 'API' }])).toThrow(/starts with '\$'/);
    expect(() => checkNatsSinkTables(config, [{ schema: '_INBOX', table: 'x' }])).toThrow(/_INBOX/);
    expect(() => checkNatsSinkTables(config, [{ schema: 'a$', table: 'é-ü' }])).not.toThrow();
  });

  it('refuses the same tables through the kind, as a pipeline is created', () => {
    expect(() =>
      natsSinkKind.checkTables?.({ subject: 'x.{table}' }, [{ schema: 'public', table: 'a.b' }]),
    ).toThrow(AppError);
    expect(() =>
      natsSinkKind.checkTables?.({ subject: 'x.{schema}' }, [{ schema: 'public', table: 'a.b' }]),
    ).not.toThrow();
  });

  it('captures a template with each placeholder token as a wildcard', () => {
    expect(wildcardOf('replicator.{schema}.{table}')).toBe('replicator.*.*');
    expect(wildcardOf('cdc.{schema}_{table}.v1')).toBe('cdc.*.v1');
    expect(wildcardOf('all')).toBe('all');
    expect(streamSubjectOf(parseNatsSinkProperties({ subject: 'a.b{table}' }))).toBe('a.*');
  });

  it('tells a valid subject from a bad one', () => {
    expect(subjectProblem('a.b.c')).toBeUndefined();
    expect(subjectProblem('a\u00a0b')).toBe('has white space');
    expect(subjectProblem('a\u0000b')).toBe('has a control character');
  });

  it('is registered for nats connections', () => {
    expect(findSinkKind('nats')).toBe(natsSinkKind);
    expect(sinkTypes()).toContain('nats');
  });
});
