import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PIPELINE_ACTIONS, PIPELINE_STATES } from '../../machines/pipeline.js';
import { isActionAllowed, stateAfter } from '../../machines/pipeline-transitions.js';
import { propertiesMarkdown } from '../../src/core/property-docs.js';
import { ERROR_CODES } from '../../src/errors/codes.js';
import { findSinkKind, sinkTypes } from '../../src/sinks/registry.js';

/** A page of the documentation site, by its path under docs/. */
const page = (path: string): string => readFileSync(`docs/${path}`, 'utf8');

describe('the documentation', () => {
  it.each(sinkTypes())('documents the properties the %s sink accepts', (type) => {
    expect(page(`sinks/${type}.md`)).toContain(propertiesMarkdown(findSinkKind(type)?.properties ?? []));
    expect(page('sinks/index.md')).toMatch(new RegExp(`^\\| \`${type}\` \\|`, 'm'));
  });

  it('shows exactly the transitions the state machine enforces', () => {
    const pipelines = page('api/pipelines.md');
    const table = pipelines.slice(pipelines.indexOf('| from | action | to |')).split('\n\n')[0] as string;
    const rows = table
      .split('\n')
      .slice(2)
      .map((line) => /^\| `(\w+)` \| (\w+) \| `(\w+)`/.exec(line)?.slice(1) ?? []);
    const documented = new Set(rows.map(([from, action]) => `${from}/${action}`));
    for (const state of PIPELINE_STATES) {
      for (const action of PIPELINE_ACTIONS) {
        expect(isActionAllowed(state, action), `${state} + ${action}`).toBe(
          documented.has(`${state}/${action}`),
        );
      }
    }
    for (const [from, action, to] of rows) {
      expect(stateAfter(from as never, action as never), `${from} + ${action}`).toBe(to);
    }
  });

  it('lists every error code with its status', () => {
    const errors = page('api/errors.md');
    for (const [code, status] of Object.entries(ERROR_CODES)) {
      const row = errors.split('\n').find((line) => line.startsWith('|') && line.includes(`\`${code}\``));
      expect(row, code).toBeDefined();
      expect(row, code).toContain(String(status));
    }
  });
});
