// The repository's `engines` says what its own dependencies need: on a Node it allows, `npm ci`
// prints no EBADENGINE. (The published packages promise less, Node ≥ 20.19, and
// tests/package/package.test.ts checks what they install.)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { semver } from '../support/semver.ts';

const read = (file: string) => JSON.parse(readFileSync(join(PROJECT_ROOT, file), 'utf8'));
const root = read('package.json') as { engines: { node: string } };
const { packages } = read('package-lock.json') as { packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean }> };

describe("the repository's engines", () => {
  it('allow only Node versions every installed package (development ones included) accepts', () => {
    // Installed: the lock also lists other platforms' optional packages, which npm never installs here.
    const refusing = Object.entries(packages)
      .filter(([path, meta]) => path && existsSync(join(PROJECT_ROOT, path)) && !Array.isArray(meta.engines) && meta.engines?.node && !semver.subset(root.engines.node, meta.engines.node))
      .map(([path, meta]) => `${path.replace(/^.*node_modules\//, '')} wants node ${(meta.engines as { node: string }).node}`);
    expect(refusing, `package.json's engines.node is ${root.engines.node}`).toEqual([]);
  });

  it('are what the README tells a clone to use (Node 22.13+ or 24), and leave out Node 20', () => {
    expect(root.engines.node).toBe('^22.13.0 || >=24');
    expect(readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8')).toContain('A clone of this repository needs Node.js 22 (22.13 or later) or 24');
    for (const version of ['22.13.0', '24.0.0']) expect(semver.satisfies(version, root.engines.node), version).toBe(true);
    expect(semver.satisfies('20.20.0', root.engines.node)).toBe(false);
  });
});
