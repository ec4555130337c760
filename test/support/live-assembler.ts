import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { PostgresStreamItem } from '../../src/source/postgres/change-stream.js';
import { TransactionAssembler } from '../../src/source/postgres/transaction-assembler.js';

/**
 * A transaction assembler that also hands the first streamed transaction over as it arrives, made
 * anew for each test of the calling suite with a spool directory of its own; `emitted` collects
 * what it emits.
 */
export function liveAssemblerEachTest(name: string): {
  assembler(): TransactionAssembler;
  emitted: PostgresStreamItem[];
} {
  const emitted: PostgresStreamItem[] = [];
  let parent: string | undefined;
  let assembler: TransactionAssembler | undefined;
  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), `${name}-`));
    emitted.length = 0;
    assembler = new TransactionAssembler({
      emit: (item) => emitted.push(item),
      spoolDir: parent,
      live: true,
    });
  });
  afterEach(() => {
    assembler?.dispose();
    if (parent) rmSync(parent, { recursive: true, force: true });
  });
  return {
    assembler: () => {
      if (!assembler) throw new Error('the assembler is made for each test');
      return assembler;
    },
    emitted,
  };
}
