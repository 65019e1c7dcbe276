import { defineConfig } from 'vitest/config';

/**
 * The fast tier (`npm run test:unit`): pure contract, auth decisions, the HTTP app through
 * app.request(), the embedder on real small models, the client against in-process servers.
 * No child processes, Redis, workerd, WebGPU or npm installs: under a minute here.
 */
const UNIT = [
  'tests/contract/**/*.test.ts',
  'tests/util/**/*.test.ts',
  'tests/auth/decide.test.ts',
  'tests/auth/key-format.test.ts',
  'tests/http/**/*.test.ts',
  'tests/embedder/**/*.test.ts',
  'tests/backend/**/*.test.ts',
  'tests/client/**/*.test.ts',
  'tests/usage/usage-app.test.ts',
  'tests/ecosystem/ai-sdk-7.test.ts',
  'tests/ecosystem/vector-store.test.ts',
  'tests/documents/**/*.test.ts',
  'tests/search-index/excerpt.test.ts',
  'tests/search-index/context.test.ts',
];

const IMAGE = ['tests/image/**/*.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Leak checks (tests/node/webgpu.test.ts) collect garbage before reading RSS.
    execArgv: ['--expose-gc'],
    // `vitest run` (npm test) runs both tiers; `--project unit` the fast one alone.
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      { extends: true, test: { name: 'integration', include: ['tests/**/*.test.ts'], exclude: [...UNIT, ...IMAGE] } },
      // npm run test:image: the container image with the real Docker engine (npm test runs it last).
      { extends: true, test: { name: 'image', include: IMAGE } },
    ],
  },
});
