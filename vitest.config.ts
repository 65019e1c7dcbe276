import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Leak checks (tests/node/webgpu.test.ts) collect garbage before reading RSS.
    execArgv: ['--expose-gc'],
  },
});
