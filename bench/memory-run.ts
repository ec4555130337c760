/**
 * The memory benchmark alone: `npm run bench:memory`. MEMORY_ROWS (default 1,000,000),
 * MEMORY_BIG_ROWS (default 5,000,000), MEMORY_CRASH_ROWS (default 3,000,000), MEMORY_DOWN_SECONDS (default 10),
 * MEMORY_CLI (dist, built first, or tsx), MEMORY_SCENARIOS (default queue,big,crash).
 * Writes the memory section of BENCHMARKS.md, leaving the rest of the file as it is.
 */
import { join } from 'node:path';
import { availableBinDirs, startPgCluster } from '../test/support/pg-cluster.js';
import { writeSection } from './benchmarks-section.js';
import { memoryOptions, runMemoryBenchmark } from './memory.js';
import { memoryMarkdown, memoryPhaseTable, memorySummaryTable, memoryTargets } from './memory-report.js';
import { serviceCli } from './service-process.js';

const log = (message: string) => console.log(`[memory ${new Date().toISOString().slice(11, 19)}] ${message}`);

const options = memoryOptions(1, serviceCli());
const date = new Date();
const { binDir } = availableBinDirs()[0] as { binDir: string };
const stops: (() => Promise<void>)[] = [];
const stopAll = async () => {
  for (const stop of stops.reverse()) await stop().catch((error) => console.error('cleanup failed:', error));
  stops.length = 0;
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stopAll().finally(() => process.exit(130));
  });
}
try {
  const source = await startPgCluster('memory-source', binDir);
  stops.push(source.stop);
  const sink = await startPgCluster('memory-sink', binDir);
  stops.push(sink.stop);
  const results = await runMemoryBenchmark({
    sourceAdminUrl: source.adminUrl,
    sinkAdminUrl: sink.adminUrl,
    options,
    log,
  });
  console.log(`\n${memorySummaryTable(results)}\n\n${memoryPhaseTable(results)}\n`);
  console.log(memoryTargets(results).join('\n'));
  const path = join(process.cwd(), 'BENCHMARKS.md');
  if (options.scenarios.length === 3) {
    writeSection(path, 'memory', memoryMarkdown(results, date));
    console.log(`memory section written to ${path}`);
  } else {
    console.log(
      `MEMORY_SCENARIOS=${options.scenarios.join(',')}: only some scenarios ran, ${path} is left as it is`,
    );
  }
} catch (error) {
  console.error('memory benchmark failed:', error);
  process.exitCode = 1;
} finally {
  await stopAll();
}
