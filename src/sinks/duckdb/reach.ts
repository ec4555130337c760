import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ReachCheck } from '../../connections/reach-check.js';
import type { DuckdbSettings } from './duckdb-connection-type.js';

/** A DuckDB file: its directory exists and the service may write there. */
export async function reachDuckdb({ path }: DuckdbSettings): Promise<ReachCheck[]> {
  try {
    await access(dirname(path), constants.W_OK);
    return [{ name: 'reach', ok: true, message: 'The database file can be written in its directory.' }];
  } catch {
    return [
      { name: 'reach', ok: false, message: "The database file's directory is missing or not writable." },
    ];
  }
}
