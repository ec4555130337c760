// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${NAME} here is the documents' own syntax, not a mistaken template
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeReferences, readDocument } from '../../src/cli/document-file.js';
import { CliError, EXIT } from '../../src/cli/exit-codes.js';

const dir = mkdtempSync(join(tmpdir(), 'cli-document-'));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

function refusal(run: () => unknown): CliError {
  try {
    run();
  } catch (error) {
    if (error instanceof CliError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('apply documents', () => {
  it('reads YAML and JSON alike, filling ${NAME} from the environment in values only', () => {
    const yaml = file(
      'doc.yaml',
      'connections:\n  - name: src\n    type: postgres\n    dsn: postgres://app:${PW}@db/app\npipelines: []\n',
    );
    expect(readDocument(yaml, { PW: 's3cret: {x}' })).toEqual({
      connections: [{ name: 'src', type: 'postgres', dsn: 'postgres://app:s3cret: {x}@db/app' }],
      pipelines: [],
    });
    const json = file('doc.json', JSON.stringify({ pipelines: [{ name: '${N}' }] }));
    expect(readDocument(json, { N: 'orders' })).toEqual({ pipelines: [{ name: 'orders' }] });
  });

  it('names every unset variable with where it is used, as a usage error', () => {
    const path = file('unset.yaml', 'connections:\n  - dsn: ${A}\n    name: ${B}\n');
    const error = refusal(() => readDocument(path, {}));
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain('A (at connections[0].dsn), B (at connections[0].name)');
  });

  it('keeps $${NAME} as the literal ${NAME}, and a lone $ as it is', () => {
    const path = file('literal.yaml', 'pipelines:\n  - name: "a$${X}b$c"\n');
    expect(readDocument(path, { X: 'no' })).toEqual({ pipelines: [{ name: 'a${X}b$c' }] });
  });

  it('reads back exactly what was escaped, whatever the text', () => {
    const text = fc.stringMatching(/^[$a-zA-Z{}_0-9 ]*$/);
    fc.assert(
      fc.property(text, (value) => {
        const path = file('round.json', JSON.stringify({ pipelines: [{ name: escapeReferences(value) }] }));
        expect(readDocument(path, {})).toEqual({ pipelines: [{ name: value }] });
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['not a mapping', '- a\n- b\n', 'must be a mapping'],
    ['several documents', 'connections: []\n---\npipelines: []\n', 'holds 2 YAML documents'],
    ['broken YAML', 'connections: [\n', 'doc'],
  ])('refuses %s as a usage error', (_what, text, message) => {
    const path = file('bad.yaml', text);
    const error = refusal(() => readDocument(path, {}));
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain(message);
  });

  it('refuses a file it cannot read, naming it', () => {
    const error = refusal(() => readDocument(join(dir, 'missing.yaml'), {}));
    expect(error.message).toBe(`cannot read ${join(dir, 'missing.yaml')}: ENOENT`);
  });
});
