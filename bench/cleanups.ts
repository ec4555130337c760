/**
 * Steps that undo what a benchmark started (servers, databases, keys), run newest first, once, on
 * success, failure or a signal.
 */
export const cleanups: { what: string; run: () => Promise<void> | void }[] = [];

let cleaning: Promise<void> | undefined;

export function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step.run();
      } catch (error) {
        console.error(`cleanup (${step.what}) failed:`, error);
      }
    }
  })();
  return cleaning;
}

/**
 * Runs a benchmark's `main`, reports its failure (`what` names the benchmark) with a failing exit
 * code, and undoes what it started either way.
 */
export async function runBenchmark(main: () => Promise<void>, what = 'benchmark'): Promise<void> {
  try {
    await main();
  } catch (error) {
    console.error(`${what} failed:`, error);
    process.exitCode = 1;
  } finally {
    await cleanUp();
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping what the benchmark started`);
    void cleanUp().finally(() => process.exit(130));
  });
}
