// The `lexembed` command line: dispatches to serve, keys and accounts. Each command's module is
// imported when it runs, so `--help` and `keys` do not load the model runtime (start-up time).
import { UsageError } from './options.ts';
import { messageOf } from '../util/message-of.ts';

const USAGE = `lexembed — self-hosted legal embedding API

Usage:
  lexembed serve [options]      serve POST /v1/embeddings (lexembed serve --help)
  lexembed embed <file|folder> --output <out.jsonl>   embed a corpus file, or PDF/DOCX/TXT/Markdown documents (lexembed embed --help)
  lexembed index <folder> --index <where>   keep a search index of documents up to date: hybrid, incremental (lexembed index --help)
  lexembed search <where> <query>   the best passages of an index (or of an embed output), with file and page (lexembed search --help)
  lexembed mcp [--transport stdio|http]   a Model Context Protocol server: embed, rerank, chunk, tokenize, search (lexembed mcp --help)
  lexembed keys <create|update|list|revoke>   manage API keys and their rate limits (lexembed keys --help)
  lexembed accounts <set|list>            manage account states and monthly quotas (lexembed accounts --help)
  lexembed usage [--account <id>] [--json|--csv]   requests and input tokens per account, key and day
`;

export async function main(argv: string[]): Promise<number> {
  const out = (s: string) => void process.stdout.write(s + '\n');
  const err = (s: string) => void process.stderr.write(s + '\n');
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        return await (await import('./serve.ts')).serveCommand(rest, out, err);
      case 'embed':
        return await (await import('./embed.ts')).embedCommand(rest, out, err);
      case 'index':
        return await (await import('./index-folder.ts')).indexCommand(rest, out, err);
      case 'search':
        return await (await import('./search.ts')).searchCommand(rest, out, err);
      case 'mcp':
        return await (await import('./mcp.ts')).mcpCommand(rest, out, err);
      case 'keys':
        return await (await import('./keys.ts')).keysCommand(rest, out, err);
      case 'accounts':
        return await (await import('./keys.ts')).accountsCommand(rest, out, err);
      case 'usage':
        return await (await import('./usage.ts')).usageCommand(rest, out, err);
      case '--help':
      case '-h':
      case 'help':
        return (out(USAGE), 0);
      case undefined:
        return (err(USAGE), 2);
      default:
        return (err(`lexembed: unknown command "${command}"; run lexembed --help`), 2);
    }
  } catch (error) {
    if (error instanceof UsageError) return (err(error.message), 2);
    err(`lexembed ${command}: ${messageOf(error)}`);
    return 1;
  }
}
