import { readFileSync } from 'node:fs';

/**
 * What the service process holds, as `process.memoryUsage()` sees it from inside: VmRSS alone
 * does not say whether the memory is V8's heap or buffers outside it (socket reads, COPY data).
 * The probe is a module the service process imports first (`--import` of a data: URL, so it
 * works for the build and for tsx alike); it writes its figures to a file every `PROBE_MS`,
 * which the benchmark reads with its own samples.
 */
export const MEMORY_USAGE_FILE_ENV = 'REPLICATOR_BENCH_MEMORY_USAGE_FILE';
const PROBE_MS = 50;

// Written to a temporary name, then renamed, so that a read never sees half a file.
const PROBE_SOURCE = `
import { renameSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
const file = process.env.${MEMORY_USAGE_FILE_ENV};
if (file) {
  setInterval(() => {
    try {
      const spaces = getHeapSpaceStatistics();
      const newSpace = spaces.find((s) => s.space_name === 'new_space')?.space_size ?? 0;
      writeFileSync(file + '.tmp', JSON.stringify({ ...process.memoryUsage(), newSpace }));
      renameSync(file + '.tmp', file);
    } catch {}
  }, ${PROBE_MS}).unref();
}
`;

/** The node options that load the probe. */
export const memoryUsageProbeArgs = (): string[] => [
  '--import',
  `data:text/javascript,${encodeURIComponent(PROBE_SOURCE)}`,
];

/** `process.memoryUsage()` of the service process, and the part of the heap that is V8's young generation, in bytes. */
export interface MemoryUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** The young generation's space (its two semi-spaces), part of heapTotal: it grows while much is allocated. */
  newSpace: number;
}

/** The probe's last figures, or undefined before its first write (or once the process is gone). */
export function readMemoryUsage(file: string): MemoryUsage | undefined {
  try {
    return parseMemoryUsage(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

export function parseMemoryUsage(text: string): MemoryUsage | undefined {
  const m = JSON.parse(text) as Partial<MemoryUsage>;
  const fields = ['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'newSpace'] as const;
  return fields.every((f) => typeof m[f] === 'number') ? (m as MemoryUsage) : undefined;
}
