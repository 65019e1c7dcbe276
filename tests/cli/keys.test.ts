// `lexembed keys` as a user meets it (issue 66 item 7): --help offers only the resources this
// server serves, and `keys list` says which store it read and that it is empty, where a server
// started elsewhere keeps its keys in another one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'lexembed-keys-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('lexembed keys', () => {
  it('--help offers the resources lexembed serves, and create refuses the others with why', async () => {
    const help = await runCli(['keys', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--resources <value> +comma-separated resources the key may use: embeddings, rerankings/);
    expect(help.stdout).not.toMatch(/enrichments|extractions|classifications/);
    const other = await runCli(['keys', 'create', '--account', 'acme', '--resources', 'embeddings,enrichments', '--data-dir', join(dir, 'refused')]);
    expect(other.code).toBe(2);
    expect(other.stderr).toMatch(/--resources .*lexembed serves embeddings, rerankings; it does not serve enrichments/);
  });

  it('keys list on an empty store names the store file and says it is empty, and where a server keeps its keys', async () => {
    const empty = join(dir, 'elsewhere');
    const listed = await runCli(['keys', 'list', '--data-dir', empty]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe('');
    expect(listed.stderr).toContain(`no keys in the file key store ${join(empty, 'keys.json')} (the file does not exist)`);
    expect(listed.stderr).toMatch(/a server keeps its keys in its own --data-dir \(default \.\/\.lexembed in the directory it was started from/);
    const created = await runCli(['keys', 'create', '--account', 'acme', '--data-dir', empty]);
    expect(created.code, created.stderr).toBe(0);
    const one = await runCli(['keys', 'list', '--data-dir', empty]);
    expect(one.stderr).toContain(`1 key in the file key store ${join(empty, 'keys.json')}`);
    expect(one.stdout).toMatch(/^id\taccount\tstate/);
    expect(one.stdout).toMatch(/\tacme\tactive\t/);
  });
});
