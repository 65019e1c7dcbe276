// npm in this repository, with the npm this machine has (11.x): no command warns, and
// onnxruntime-node's install script (it downloads CUDA libraries from a host an offline machine
// cannot reach, and fails the install there) never runs. The mechanism is npm's own: the
// `allowScripts` field of package.json (false: never run that package's install scripts), not an
// .npmrc key npm does not know (npm 11 warned about that one on every call).
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';

const run = promisify(execFile);
const rootPackage = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string }> };
/**
 * The environment without what would skip the script another way: npm passes its config to
 * children as npm_config_* (a parent `npm test` would pass the old .npmrc key on), and
 * onnxruntime-node also reads ONNXRUNTIME_NODE_INSTALL.
 */
const bareEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k) && !/^ONNXRUNTIME_NODE_INSTALL/.test(k)));
const scratch = mkdtempSync(join(tmpdir(), 'lexembed-npm-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** stdout and stderr of a command, whether it fails or not. */
async function outputOf(command: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  const r = await run(command, args, { cwd, env: bareEnv, maxBuffer: 16 << 20 }).then(
    (ok) => ({ code: 0, ...ok }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
  return { code: r.code, output: `${r.stdout}${r.stderr}` };
}

describe('npm in this repository', () => {
  it('npm and npx commands print no warning', async () => {
    for (const [command, args] of [['npm', ['--version']], ['npm', ['pkg', 'get', 'name']], ['npx', ['--no-install', 'tsc', '--version']]] as const) {
      const { code, output } = await outputOf(command, [...args], PROJECT_ROOT);
      expect(code, output).toBe(0);
      expect(output, `${command} ${args.join(' ')}`).not.toMatch(/npm warn/i);
    }
  }, 60_000);

  it('every installed package with an install script has been reviewed (npm ci lists none as skipped or unreviewed)', async () => {
    const { code, output } = await outputOf('npm', ['install-scripts', 'ls'], PROJECT_ROOT);
    expect(code, output).toBe(0);
    expect(output.trim()).toBe('No packages with unreviewed install scripts.');
    expect(rootPackage.allowScripts?.['onnxruntime-node']).toBe(false);
  }, 60_000);

  it("with this package.json's allowScripts, installing onnxruntime-node offline succeeds and never runs its install script", async () => {
    const dir = join(scratch, 'ort');
    const version = lock.packages['node_modules/onnxruntime-node']!.version!;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch-ort', private: true, dependencies: { 'onnxruntime-node': version }, allowScripts: rootPackage.allowScripts }));
    // --foreground-scripts: a script that runs prints its banner ("> onnxruntime-node@… postinstall").
    const { code, output } = await outputOf('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--foreground-scripts'], dir);
    expect(code, output).toBe(0);
    expect(output).not.toMatch(/onnxruntime-node@[\d.]+ postinstall|nuget|npm warn/i);
    // The CPU provider ships in the package: it loads without the script.
    const { output: loaded } = await outputOf(process.execPath, ['-e', "const ort = require('onnxruntime-node'); console.log(ort.listSupportedBackends().some((b) => b.name === 'cpu'))"], dir);
    expect(loaded.trim()).toBe('true');
  }, 300_000);
});
