// Every command's --help as a user reads it: each option's default said once (never "(none)"
// after a help text that already names it), and a missing required option said to be missing.
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

describe('--help and usage errors', () => {
  it('says each default once, and no "(none)"', async () => {
    for (const command of ['serve', 'embed', 'keys', 'usage']) {
      const help = await runCli([command, '--help']);
      expect(help.code, command).toBe(0);
      expect(help.stdout, command).not.toMatch(/\(none\)/);
      for (const block of help.stdout.split(/\n(?= {2}--)/)) expect(block.match(/\(default\b|; default\b/g)?.length ?? 0, `${command}: ${block}`).toBeLessThanOrEqual(1);
    }
    const serve = (await runCli(['serve', '--help'])).stdout;
    expect(serve).toMatch(/--host <value> +address to bind \(default 127\.0\.0\.1; 0\.0\.0\.0, all interfaces, in proxy mode\)\n +\(env LEXEMBED_HOST or HOST\)\n/);
  });

  it('a missing --output is "required", not "got null"; a bad value is quoted', async () => {
    const missing = await runCli(['embed', 'texts.jsonl']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim()).toBe('lexembed embed: --output is required: the JSONL file to write');
    const bad = await runCli(['embed', 'texts.jsonl', '--output', 'out.jsonl', '--dimensions', 'abc']);
    expect(bad.stderr).toMatch(/--dimensions must be a positive integer; got "abc"/);
  });
});

describe('embed --help says what --remote does not take (issue 66 item 7)', () => {
  it('--remote: documents and --chunk-tokens are embedded locally', async () => {
    const help = (await runCli(['embed', '--help'])).stdout;
    expect(help).toMatch(/--remote <value> +embed texts through a lexembed server instead[\s\S]*documents \(PDF, DOCX, TXT, Markdown files\) and --chunk-tokens are refused with it/);
  });
});
