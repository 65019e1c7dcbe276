// The usage-based plan's commands as a user types them: limits on keys, quotas on accounts,
// `lexembed usage` in its three formats, and clear refusals of bad input.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'lexembed-usage-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const store = ['--data-dir', dir];

describe('keys and accounts', () => {
  it('creates a key with --rpm/--tpm, lists them, updates and removes them; sets and lists a monthly quota', async () => {
    const created = await runCli(['keys', 'create', '--account', 'acme', '--rpm', '60', '--tpm', '100000', ...store]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/rpm 60, tpm 100000\)/);
    const id = /created (key_\w+)/.exec(created.stdout)![1]!;
    expect((await runCli(['keys', 'list', ...store])).stdout).toMatch(new RegExp(`${id}\\tacme\\tactive\\t.*\\t60\\t100000`));
    const updated = await runCli(['keys', 'update', id, '--rpm', 'none', '--tpm', '500', ...store]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toMatch(/rpm none, tpm 500/);
    const quota = await runCli(['accounts', 'set', 'acme', '--monthly-tokens', '2000000', ...store]);
    expect(quota.stdout).toMatch(/monthly tokens 2000000/);
    expect((await runCli(['accounts', 'list', ...store])).stdout).toMatch(/acme\ttrue\ttrue\ttrue\tfalse\t2000000/);
    expect((await runCli(['accounts', 'set', 'acme', '--monthly-tokens', 'none', ...store])).stdout).toMatch(/monthly tokens none/);
  });

  it('refuses bad limits and unknown keys with what to do', async () => {
    const bad = await runCli(['keys', 'create', '--account', 'acme', '--rpm', '0', ...store]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--rpm.* must be a positive integer \(or "none" to remove the limit\); got "0"/);
    const nothing = await runCli(['keys', 'update', 'key_x', ...store]);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/give --rpm and\/or --tpm/);
    const unknown = await runCli(['keys', 'update', 'key_missing', '--rpm', '5', ...store]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no key with id key_missing .*lexembed keys list/);
    expect((await runCli(['accounts', 'set', 'acme', '--monthly-tokens', '1.5', ...store])).stderr).toMatch(/--monthly-tokens.* must be a positive integer/);
  });
});

describe('lexembed usage', () => {
  const rows = [
    { day: '2026-11-01', account: 'acme', key_id: 'key_a', operation: 'embeddings', requests: 3, input_tokens: 120 },
    { day: '2026-11-02', account: 'acme', key_id: 'key_a', operation: 'rerankings', requests: 1, input_tokens: 40 },
    { day: '2026-11-02', account: 'beta, "inc"', key_id: 'key_b', operation: 'embeddings', requests: 2, input_tokens: 9 },
    { day: '2026-11-02', account: 'acme', key_id: 'key_a', operation: 'embeddings', requests: 1, input_tokens: 5 },
    { day: '2026-11-02', account: 'acme', key_id: 'key_a', operation: 'embeddings', requests: 2, input_tokens: 10 },
  ];
  const logDir = join(dir, 'log');
  const logStore = ['--data-dir', logDir];
  const write = (text: string) => writeFileSync(join(logDir, 'usage.log'), text);

  it('reads the server\'s log: rows summed per account, key, operation and day, as JSON, CSV or a table with totals; filters by account and days', async () => {
    await runCli(['keys', 'list', ...logStore]); // creates nothing; the directory comes next
    (await import('node:fs')).mkdirSync(logDir, { recursive: true });
    write(rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const json = await runCli(['usage', '--json', ...logStore]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      { account: 'acme', key_id: 'key_a', operation: 'embeddings', day: '2026-11-01', requests: 3, input_tokens: 120 },
      { account: 'acme', key_id: 'key_a', operation: 'embeddings', day: '2026-11-02', requests: 3, input_tokens: 15 },
      { account: 'acme', key_id: 'key_a', operation: 'rerankings', day: '2026-11-02', requests: 1, input_tokens: 40 },
      { account: 'beta, "inc"', key_id: 'key_b', operation: 'embeddings', day: '2026-11-02', requests: 2, input_tokens: 9 },
    ]);
    const csv = await runCli(['usage', '--csv', '--since', '2026-11-02', ...logStore]);
    expect(csv.stdout.trim().split('\n')).toEqual([
      'day,account,key_id,operation,requests,input_tokens',
      '2026-11-02,acme,key_a,embeddings,3,15',
      '2026-11-02,acme,key_a,rerankings,1,40',
      '2026-11-02,"beta, ""inc""",key_b,embeddings,2,9',
    ]);
    const table = await runCli(['usage', '--account', 'acme', '--until', '2026-11-01', ...logStore]);
    expect(table.stdout).toMatch(/2026-11-01\tacme\tkey_a\tembeddings\t3\t120\ntotal\t\t\t\t3\t120/);
    expect(table.stderr).toMatch(/file key store in /);
  });

  it('ignores a last line a crash cut short; refuses bad days, both formats, and a reversed range', async () => {
    write(`${JSON.stringify(rows[0])}\n{"day":"2026-11-02","acc`);
    expect(JSON.parse((await runCli(['usage', '--json', ...logStore])).stdout)).toHaveLength(1);
    const badDay = await runCli(['usage', '--since', '2026-02-30', ...logStore]);
    expect(badDay.code).toBe(2);
    expect(badDay.stderr).toMatch(/--since.* must be a day like 2026-11-01/);
    expect((await runCli(['usage', '--json', '--csv', ...logStore])).stderr).toMatch(/choose one of --json and --csv/);
    expect((await runCli(['usage', '--since', '2026-11-03', '--until', '2026-11-01', ...logStore])).stderr).toMatch(/--since 2026-11-03 is after --until 2026-11-01/);
    expect((await runCli(['usage', 'acme', ...logStore])).stderr).toMatch(/unexpected argument "acme"; filter with --account/);
  });

  it('with no log yet prints no rows, and --help explains what is counted', async () => {
    expect(JSON.parse((await runCli(['usage', '--json', '--data-dir', join(dir, 'empty')])).stdout)).toEqual([]);
    const help = await runCli(['usage', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/answered \(200\) requests/);
    expect((await runCli(['--help'])).stdout).toMatch(/lexembed usage/);
  });
});
