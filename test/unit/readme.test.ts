import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { propertiesMarkdown } from '../../src/sinks/postgres/config.js';

describe('README', () => {
  it('documents the sink properties the code accepts', () => {
    expect(readFileSync('README.md', 'utf8')).toContain(propertiesMarkdown());
  });
});
