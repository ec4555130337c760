import { spawnSync } from 'node:child_process';

const INSTALL_HINT =
  "promtool is not installed: install Debian's prometheus package " +
  '(apt-get install -y --no-install-recommends prometheus) or put promtool from a Prometheus release on PATH; ' +
  '.ci/run installs it';

/**
 * Runs `promtool check metrics` on a scrape. Fails with how to install promtool when it is missing,
 * rather than skipping: the check is what proves the endpoint speaks the format.
 */
export function promtoolCheckMetrics(text: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if ((result.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    throw new Error(process.env.CI === 'true' ? `${INSTALL_HINT} (it should have, in CI)` : INSTALL_HINT);
  }
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
