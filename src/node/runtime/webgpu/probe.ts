// Asks a child process which WebGPU adapters exist (probe-main.ts), so Dawn's own stderr lines stay
// in that child: a server that decides on the CPU never shows them between its JSON log lines.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WebGPUHandle } from './detect.ts';

/** How long the probe may take (Dawn loads its Vulkan drivers) before it counts as no adapter. */
const PROBE_TIMEOUT_MS = 30_000;

export function probeAdapters(adapterName = ''): Promise<Pick<WebGPUHandle, 'adapters' | 'errors'>> {
  // From source (tests, a dev checkout) the probe registers tsx first; built, it is plain JS.
  const entry = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './probe.mjs' : './probe-main.js', import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, [entry, adapterName], { timeout: PROBE_TIMEOUT_MS, maxBuffer: 1 << 20 }, (error, stdout) => {
      try {
        const found = JSON.parse(stdout) as Pick<WebGPUHandle, 'adapters' | 'errors'>;
        if (Array.isArray(found.adapters) && Array.isArray(found.errors)) return resolve(found);
      } catch {}
      resolve({ adapters: [], errors: [`the WebGPU probe failed (${error ? error.message.split('\n')[0] : 'no answer'})`] });
    });
  });
}
