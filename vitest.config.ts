import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Vitest's own cache lives outside node_modules: a new folder there makes npm distrust its record
  // of the installed tree, and every `npx taskhook` then re-reads the tree (scripts/prepare.mjs).
  cacheDir: '.cache/vite',
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Every test file: connections and name lookups outside loopback are refused and fail the test.
    setupFiles: ['test/helpers/loopback-guard.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most test time is spent waiting on databases, child processes and sockets, not on the CPU:
    // four files at once on two cores finish the suite far sooner than one per core.
    poolOptions: { forks: { minForks: 1, maxForks: 4 } },
    reporters: ['default'],
  },
});
