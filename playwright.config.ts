// Browser tests of the built demo in Debian's Chromium (no Playwright browser download).
import { existsSync } from 'node:fs';
import { defineConfig } from '@playwright/test';

const CHROMIUM = process.env.LEXEMBED_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) {
  throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's package (apt-get install -y chromium; .ci/run does) or set LEXEMBED_CHROMIUM`);
}
export const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];

export default defineConfig({
  testDir: 'tests/browser',
  testMatch: '**/*.spec.ts',
  outputDir: 'test-results/browser',
  timeout: 120_000,
  workers: 1,
  reporter: [['list']],
  use: { baseURL: 'http://127.0.0.1:4173', browserName: 'chromium', screenshot: 'only-on-failure' },
  projects: [
    { name: 'wasm', testMatch: ['demo.spec.ts', 'private-window.spec.ts'], use: { launchOptions: { executablePath: CHROMIUM, args: CHROMIUM_FLAGS } } },
    { name: 'webgpu', testMatch: 'webgpu.spec.ts', use: { launchOptions: { executablePath: CHROMIUM, args: [...CHROMIUM_FLAGS, '--enable-unsafe-webgpu'] } } },
  ],
  webServer: {
    command: 'npx vite preview --config web-demo/vite.config.ts --host 127.0.0.1 --port 4173 --strictPort',
    url: 'http://127.0.0.1:4173',
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
