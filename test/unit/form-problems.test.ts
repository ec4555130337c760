import { describe, expect, it } from 'vitest';
import {
  connectionField,
  connectionProblems,
  nameProblem,
  pipelineProblems,
  plainWords,
  serviceProblems,
  withoutChanged,
} from '../../ui/src/lib/form-problems.js';
import { groupOf } from '../../ui/src/lib/pipeline-form.js';

describe('form problems', () => {
  it('checks names by the service rule, in plain words', () => {
    expect(nameProblem('orders_to-dw1')).toBeUndefined();
    expect(nameProblem('  ')).toBe('Enter a name.');
    expect(nameProblem('-orders')).toBe('Start the name with a letter or a digit.');
    expect(nameProblem('my orders')).toBe('Use only letters, digits, "_" and "-" (no spaces).');
    expect(nameProblem('a'.repeat(64))).toMatch(/^Use at most 63 characters/);
  });

  it('lists every problem of an empty connection form at once, and none of a test without a name', () => {
    const empty = { name: '', type: 'postgres', dsn: '', editing: false };
    expect(Object.keys(connectionProblems(empty))).toEqual(['name', 'dsn']);
    expect(Object.keys(connectionProblems(empty, true))).toEqual(['dsn']);
    expect(connectionProblems({ ...empty, editing: true }).name).toBeUndefined();
    expect(connectionProblems({ ...empty, name: 'src', dsn: 'mysql://h/db' }).dsn).toBe(
      'A postgres DSN starts with postgres:// or postgresql://.',
    );
    expect(connectionProblems({ ...empty, name: 'src', dsn: 'postgres://u@h/db' })).toEqual({});
    expect(connectionProblems({ ...empty, type: 'duckdb', name: 'd', dsn: 'duckdb:w.duckdb' })).toEqual({});
  });

  it('lists every problem of an empty create-pipeline form, and number ranges', () => {
    const empty = {
      name: '',
      source: '',
      tables: [],
      sink: '',
      parallelism: null,
      partitionRows: Number.NaN,
    };
    expect(Object.keys(pipelineProblems(empty))).toEqual(['name', 'source', 'sink']);
    const chosen = { ...empty, name: 'p', source: 'src', sink: 'dst' };
    expect(pipelineProblems(chosen)).toEqual({ tables: 'Pick at least one table to replicate.' });
    const numbers = pipelineProblems({
      ...chosen,
      tables: ['public.a'],
      parallelism: 40,
      partitionRows: 1.5,
    });
    expect(numbers.parallelism).toMatch(/^Enter a number from 1 to 32/);
    expect(numbers.partitionRows).toBe('Enter a whole number.');
  });

  it('puts the service answers at their fields, in plain words', () => {
    const at = (
      status: number,
      code: string,
      message: string,
      toField: (path: string) => string | null = groupOf,
    ) => serviceProblems({ status, code, message }, toField);
    expect(at(422, 'VALIDATION_FAILED', 'snapshot.parallelism: must be <= 32')).toEqual({
      parallelism: 'Enter 32 or less.',
    });
    expect(at(400, 'BAD_REQUEST', 'name: is required')).toEqual({ name: 'This is required.' });
    expect(at(422, 'VALIDATION_FAILED', 'source.tables[1]: public.x has no primary key')).toEqual({
      tables: 'public.x has no primary key',
    });
    expect(at(409, 'ALREADY_EXISTS', "pipeline 'p' already exists")).toEqual({
      name: 'This name is taken: choose another.',
    });
    expect(at(422, 'INVALID_DSN', 'dsn: must NOT have fewer than 1 characters', connectionField)).toEqual({
      dsn: 'This is required.',
    });
    expect(at(422, 'VALIDATION_FAILED', 'tls.ca_cert: is not PEM text', connectionField)).toEqual({
      'tls.ca_cert': 'is not PEM text',
    });
    expect(at(422, 'VALIDATION_FAILED', 'verify.interval: bad', connectionField)).toEqual({});
    expect(at(500, 'INTERNAL', 'name: x')).toEqual({});
  });

  it('words the schema messages plainly', () => {
    expect(plainWords('must NOT have fewer than 1 characters')).toBe('This is required.');
    expect(plainWords('must NOT have more than 63 characters')).toBe('Use at most 63 characters.');
    expect(plainWords('must be integer')).toBe('Enter a whole number.');
    expect(plainWords('must be one of review, auto, ignore')).toBe('Choose one of review, auto, ignore.');
  });

  it('clears the problem of a field as soon as it changes', () => {
    const problems = { name: 'Enter a name.', dsn: 'Enter the DSN.' };
    expect(withoutChanged(problems, { name: '', dsn: '' }, { name: 'x', dsn: '' })).toEqual({
      dsn: 'Enter the DSN.',
    });
  });
});
