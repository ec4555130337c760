import { fileURLToPath } from 'node:url';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'vitest/config';
import { FAULT_SUITE_FILES, QUICK_FAULT_FILES } from './test/faults/suite-files.js';
import { HANG_MS } from './test/support/wait-for.js';

const repoRoot = fileURLToPath(new URL('.', import.meta.url));

/** The service the dev server proxies `/v1` (and the `/v1/live` WebSocket) to. */
const serviceUrl = process.env.REPLICATOR_URL ?? 'http://127.0.0.1:7600';

export default defineConfig({
  // The dashboard (ui/): `npm run build:ui` writes it to dist/ui, which the service serves at /app/.
  root: 'ui',
  base: '/app/',
  // Vitest runs the service's tests, which need no Svelte.
  plugins: process.env.VITEST ? [] : [svelte({ configFile: false })],
  build: {
    outDir: `${repoRoot}dist/ui`,
    emptyOutDir: true,
    rolldownOptions: {
      // Names are kept: the state machine diagram shows the machine's inline guards from their
      // source text, which must read as written in machines/pipeline.ts.
      output: { minify: { mangle: false, compress: true } },
    },
  },
  server: {
    // The Host header is passed on unchanged (no changeOrigin), so the service sees the page's
    // origin as its own and accepts the session cookie's state-changing calls (its CSRF check).
    proxy: {
      '/v1': { target: serviceUrl, ws: true },
    },
  },
  test: {
    // From the repository root, not from ui/.
    root: repoRoot,
    // The fault suite's files run at full scale only under `npm run test:faults` (FAULTS_SCALE=full),
    // which runs them and nothing else; the normal run takes its quick subset (RELIABILITY.md).
    include: process.env.FAULTS_SCALE
      ? FAULT_SUITE_FILES
      : ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', QUICK_FAULT_FILES],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll waits for a condition: its deadline bounds a hang, never a busy machine's
    // slowness (vitest's default is 1 s).
    expect: { poll: { timeout: HANG_MS } },
    // Integration files start servers; two cores are shared between them. A fault scenario has the
    // machine to itself: its timing faults are the ones it injects, not another scenario's load.
    maxWorkers: process.env.FAULTS_SCALE ? 1 : 2,
    pool: 'forks',
  },
});
