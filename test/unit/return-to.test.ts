import { describe, expect, it } from 'vitest';
import { checkReturnTo } from '../../src/auth/sso/return-to.js';
import { AppError } from '../../src/errors/app-error.js';

const refused = (value: string) => {
  try {
    checkReturnTo(value);
  } catch (error) {
    return error instanceof AppError;
  }
  return false;
};

describe('checkReturnTo', () => {
  it('keeps a path on this service, normalised', () => {
    expect(checkReturnTo('/app/pipelines?tab=all')).toBe('/app/pipelines?tab=all');
    expect(checkReturnTo('/app/./pipelines#x')).toBe('/app/pipelines#x');
    expect(checkReturnTo('/app/x/../pipelines')).toBe('/app/pipelines');
    expect(checkReturnTo('/app/a%20b')).toBe('/app/a%20b');
  });

  it.each([
    'https://evil.example/',
    '//evil.example/x',
    '/\\evil.example',
    'app',
    '/.//evil.example',
    '/..//evil.example',
    '/%2e//evil.example',
    '/%2E%2E//evil.example',
    '/a/..//evil.example',
    '/a/b/../..//evil.example',
    '/./\\evil.example',
    '/%5cevil.example',
    '/%5c%5cevil.example',
    '/%2f%2fevil.example',
    '/%2f/evil.example',
    '/%252f%252fevil.example',
    '/.%2f/evil.example',
    '/\tevil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    '/%09/evil.example',
    '/%0a/evil.example',
    '/a\tb',
    '/%zz',
  ])('refuses %j', (value) => {
    expect(refused(value)).toBe(true);
  });
});
