import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { parseRedisSinkProperties, streamKeyOf } from '../../src/sinks/redis/config.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

function refusal(props: Record<string, string>): AppError {
  try {
    parseRedisSinkProperties(props);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected a refusal');
}

describe('redis sink properties', () => {
  it('has defaults', () => {
    expect(parseRedisSinkProperties({})).toEqual({
      stream: '{schema}.{table}',
      maxlen: 0,
      batch: { maxEvents: 10_000, maxBytes: 16 * 1024 * 1024, maxWaitMs: 0 },
    });
  });

  it('names each table stream from the template', () => {
    const config = parseRedisSinkProperties({ stream: 'cdc:{schema}:{table}:{table}', maxlen: '1000' });
    expect(streamKeyOf(config, { schema: 'public', table: 'orders' })).toBe('cdc:public:orders:orders');
    expect(config.maxlen).toBe(1000);
    // A template without a placeholder puts every table in one stream.
    expect(streamKeyOf(parseRedisSinkProperties({ stream: 'all' }), { schema: 's', table: 't' })).toBe('all');
    // Names are taken as they are, `$&` and all.
    expect(streamKeyOf(config, { schema: '$&', table: '{schema}' })).toBe('cdc:$&:{schema}:{schema}');
  });

  it.each([
    [{ stream: '' }, 'sink.properties.stream', 'must not be empty'],
    [{ stream: '  ' }, 'sink.properties.stream', 'must not be empty'],
    [{ stream: 'cdc.{tabel}' }, 'sink.properties.stream', 'unknown placeholder {tabel}'],
    [{ stream: 'cdc.{table' }, 'sink.properties.stream', 'brace'],
    [{ stream: 'cdc}' }, 'sink.properties.stream', 'brace'],
    [{ stream: 'a\nb' }, 'sink.properties.stream', 'control characters'],
    [{ stream: 'x'.repeat(513) }, 'sink.properties.stream', 'at most 512'],
    [{ maxlen: '-1' }, 'sink.properties.maxlen', 'from 0 to 1000000000'],
    [{ maxlen: '1000000001' }, 'sink.properties.maxlen', 'from 0 to 1000000000'],
    [{ maxlen: '1e3' }, 'sink.properties.maxlen', 'integer'],
    [{ batch_max_events: '0' }, 'sink.properties.batch_max_events', 'from 1 to 1000000'],
    [{ batch_max_bytes: '10' }, 'sink.properties.batch_max_bytes', 'from 1024'],
    [{ batch_max_wait_ms: '60001' }, 'sink.properties.batch_max_wait_ms', 'to 60000'],
    [
      { target_schema: 'x' },
      'sink.properties.target_schema',
      'unknown property; known properties are stream, maxlen',
    ],
  ])('refuses %j', (props, field, problem) => {
    const error = refusal(props);
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.details).toEqual({ field });
    expect(error.message).toContain(problem);
  });

  it('is the sink of redis connections', () => {
    expect(sinkTypes()).toContain('redis');
    expect(findSinkKind('redis')?.parseProperties({ maxlen: '5' })).toMatchObject({ maxlen: 5 });
  });
});
