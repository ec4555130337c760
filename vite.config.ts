import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Integration files start servers; two cores are shared between them.
    maxWorkers: 2,
    pool: 'forks',
  },
});
