// `lexembed embed`: embeds a corpus file into JSONL ({id, embedding}) with the bundled model or a
// remote server, with a progress bar; restartable: rows already in the output are skipped and a
// torn last line (from an interruption) is cut off, so nothing is lost or duplicated. With
// --chunk-tokens, long documents are cut into token windows and each chunk is a row
// ({id, chunk, start, end, embedding}); a resumed run goes on from the last chunk written. A folder
// or files of PDF, DOCX, TXT and Markdown are documents: each file is chunked and every chunk row
// also names its page (PDF), paragraph (DOCX) or line (text) — src/node/documents.ts.
import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, fsyncSync, openSync, readFileSync, readSync, renameSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import { z } from 'zod';
import { Lexembed } from '../client/index.ts';
import { TASKS } from '../contract/index.ts';
import { BUNDLED_MODEL_DIR, loadModelFolder } from '../node/runtime/load-model.ts';
import { detectFormat, readCorpus, type CorpusFormat } from '../node/corpus.ts';
import { DEVICE_OPTIONS, deviceOptions } from './device-options.ts';
import { describeOptions, integerIn, parseOptions, remoteUrl, UsageError, type OptionValues } from './options.ts';
import { createProgress } from './progress.ts';
import { localIdentity, outputIdentity, remoteIdentity, type ModelIdentity } from './model-source.ts';
import { DENSE_PARTS, VECTOR_PARTS } from '../embedder/fingerprint.ts';
import { messageOf } from '../util/message-of.ts';
import { LEXEMBED_VERSION } from '../version.ts';
import type { TextChunk } from '../embedder/chunk.ts';
import { unitAt, type DocumentUnit } from '../documents/extract.ts';
import { describeLeftOut, DocumentReader, isDocumentFile, listDocuments } from '../node/documents.ts';

/** Chunk size for documents when --chunk-tokens is not given. */
export const DOCUMENT_CHUNK_TOKENS = 256;

export const EMBED_OPTIONS = {
  output: { value: z.string({ error: 'is required: the JSONL file to write' }).min(1), help: 'JSONL file to write (appended to, and resumed, if it exists)' },
  format: {
    default: 'auto',
    value: z.enum(['auto', 'jsonl', 'csv', 'text', 'documents'], { error: 'must be auto, jsonl, csv, text or documents' }),
    help: `input format: jsonl, csv, text (one text per line), documents (PDF, DOCX, TXT, Markdown files: one document each, chunked, every chunk with its page, paragraph or line) or auto (a folder, several files, or a file that is not text, such as .pdf or .docx: documents; else by extension)`,
  },
  'id-field': { value: z.string().min(1), default: 'id', help: 'id field (JSONL) or column (CSV)' },
  'text-field': { value: z.string().min(1), default: 'text', help: 'text field (JSONL) or column (CSV)' },
  task: { value: z.union([z.literal(''), z.enum(TASKS)], { error: `must be ${TASKS.join(' or ')}` }), default: '', help: 'retrieval/document for a corpus to search (the bundled models then embed it in their document form, which ranks better), retrieval/query for queries (default: none, the query form)' },
  dimensions: { value: z.union([z.literal(''), z.coerce.number().int().min(1)], { error: 'must be a positive integer' }), default: '', help: "embedding dimensions (default: the model's default)" },
  'batch-size': { value: integerIn(1, 1024), default: '64', help: 'texts (or chunks) per batch written to the output: one embed call locally (the model batches them further by tokens), one request remotely (at most 128)' },
  'chunk-tokens': { value: z.union([z.literal(''), z.coerce.number().int().min(1)], { error: 'must be a positive integer (tokens)' }), default: '', help: `cut each text into chunks of at most N tokens, one output row per chunk with its character offsets (local model only; at most what the model reads of a document; documents: default ${DOCUMENT_CHUNK_TOKENS})` },
  'overlap-tokens': { value: z.coerce.number({ error: 'must be a non-negative integer (tokens)' }).int({ error: 'must be a non-negative integer (tokens)' }).min(0, { error: 'must be a non-negative integer (tokens)' }), default: '0', help: 'with --chunk-tokens: tokens each chunk repeats from the end of the one before (whole words)' },
  model: { value: z.string().min(1), env: 'LEXEMBED_MODEL', default: BUNDLED_MODEL_DIR, help: 'local model folder' },
  ...DEVICE_OPTIONS,
  remote: { value: remoteUrl, env: 'LEXEMBED_BASE_URL', default: '', help: 'embed texts through a lexembed server instead, e.g. http://127.0.0.1:8080/v1 (key from LEXEMBED_API_KEY); for jsonl, csv and text input (one text per line) only: documents (PDF, DOCX, TXT, Markdown files) and --chunk-tokens are refused with it, as they are cut with the local model\'s tokenizer and embedded locally' },
  'model-name': { value: z.string().min(1), default: 'legal-2-embedder', help: 'model name sent to a remote server' },
  'on-error': { value: z.enum(['stop', 'skip'], { error: 'must be stop or skip' }), default: 'stop', help: 'bad input rows: stop (exit 1 at the first) or skip (report and go on)' },
  progress: { value: z.enum(['auto', 'always', 'never'], { error: 'must be auto, always or never' }), default: 'auto', help: 'progress bar: auto (on a terminal, else periodic lines), always, never' },
  shard: {
    env: 'LEXEMBED_SHARD',
    default: '',
    value: z.string().regex(/^$|^(\d+|auto)\/\d+$/, { error: 'must be I/N (e.g. 0/4) or auto/N' }),
    help: 'I/N: embed only the I-th (from 0) of N contiguous parts of the input, into this --output (run the N shards on N machines; their outputs concatenated in order are one run\'s); auto/N takes I from JOB_COMPLETION_INDEX (a Kubernetes indexed Job)',
  },
};

export const EMBED_USAGE = `Usage: lexembed embed <input> --output <out.jsonl> [options]

Embeds every row of <input> (JSONL with id and text fields, CSV with a header row, or plain
text with one text per line, its line number as id) and appends {"id", "embedding"} lines to
the output. Run it again after an interruption: rows already written are skipped.

With --chunk-tokens N, each text is cut into chunks of at most N tokens (between words,
preferring line and sentence ends) and each chunk is a line {"id", "chunk", "start", "end",
"embedding"}: chunk is its number within the text (from 0), start and end its character offsets
(text.slice(start, end) is what was embedded). A resumed run goes on after the last chunk written.

Options:
${describeOptions(EMBED_OPTIONS)}
`;

type EmbedBatch = (texts: string[]) => Promise<number[][]>;


/** What an output's vectors depend on, kept beside it as OUT.meta.json. */
interface RunSettings {
  readonly model: ModelIdentity;
  readonly task: string | null;
  readonly dimensions: number | null;
  readonly chunk_tokens: number | null;
  readonly overlap_tokens: number | null;
  readonly shard?: string | null;
}

/** Where an output's texts came from (OUT.meta.json "source"): lexembed search reads the passages back from there. */
export interface EmbedSource {
  readonly format: string;
  readonly inputs: readonly string[];
  readonly id_field: string;
  readonly text_field: string;
}

/** The settings file beside an output. */
export const metaPathOf = (output: string) => `${output}.meta.json`;

export async function embedCommand(args: string[], out: (s: string) => void, err: (s: string) => void): Promise<number> {
  const { values: config, positionals, help } = parseOptions('lexembed embed', args, EMBED_OPTIONS);
  if (help) return (out(EMBED_USAGE), 0);
  const { input, corpus, chunking, reader, ignored } = checkArguments(config, positionals);
  if (ignored.length) err(`lexembed embed: ${describeLeftOut(ignored)}`);
  const allRows = (): AsyncIterable<CorpusRow> => (reader ? reader.rows() : readCorpus(input, corpus as Parameters<typeof readCorpus>[1]));
  const shard = await shardOf(config.shard, async () => (reader ? reader.files.length : count(allRows())));
  const rowsOf = () => (shard ? inShard(allRows(), shard) : allRows());
  const resume = await scanForResume(rowsOf, input, config.output, chunking !== null, err);
  const contents = reader ? checkContents(config.output, reader.files, resume.done) : null;
  const task = config.task || null;
  const dimensions = config.dimensions === '' ? null : config.dimensions;
  const source = await openSource(config, task, dimensions, chunking, err);

  // The output records how it was made; a resumed run must make the same vectors.
  const made = { ...runSettings(outputIdentity(await source.identity(), task), task, dimensions, chunking), shard: shard ? `${shard.index}/${shard.count}` : null };
  // Where the texts are (for lexembed search's passages): recorded, not compared on resume.
  const from = { format: corpus.format, inputs: positionals.map((p) => resolve(p)), id_field: config['id-field'], text_field: config['text-field'] };
  checkOrWriteMeta(config.output, made, resume.last !== null, from);
  if (contents) recordContents(config.output, contents);
  if (resume.total === 0 && !reader) err(`lexembed embed: warning: ${input} has no rows to embed${corpus.format === 'jsonl' ? ` (JSONL lines with "${config['id-field']}" and "${config['text-field']}")` : ''}`);
  // A document cut off mid-way is counted as done by the scan; it is finished in this run.
  let already = resume.already;
  if (source.chunkText && resume.last?.chunk !== undefined && source.chunkText(resume.lastText).length - 1 > resume.last.chunk) already--;
  if (resume.done.size) {
    const what = chunking ? 'documents' : 'rows';
    const where = resume.last?.chunk !== undefined ? `chunk ${resume.last.chunk} of id "${resume.last.id}"` : `id "${resume.last?.id}"`;
    const missing = resume.total - resume.already;
    err(`lexembed embed: resuming: ${already} of ${resume.total} ${what} already in ${config.output} (its last row: ${where}); ${missing ? `${missing} not there yet will be embedded` : 'nothing new to embed'}${already < resume.already ? ', and the rest of the one cut off' : ''}`);
  }

  const writer = new RowWriter(config.output, source, resume.last);
  const progress = chunking
    ? createProgress(resume.total, already, config.progress, err, 'documents', () => ` · ${writer.chunksWritten} chunks`)
    : createProgress(resume.total, already, config.progress, err);
  writer.onRowsDone = (n) => progress.advance(n);
  const run = await embedRows(rowsOf(), writer, { input, batchSize: config['batch-size'], onError: config['on-error'], done: resume.done, last: resume.last }).finally(() => source.dispose());
  progress.end();
  if (run.failure) return (err(run.failure), 1);
  const what = chunking ? 'documents' : 'rows';
  if (run.stopped) {
    err(`lexembed embed: ${run.stopped}: stopped; ${writer.written} ${what} of this run are saved in ${config.output} (${already + writer.written} of ${resume.total} in all). Run the same command again to resume where it stopped.`);
    return 130;
  }
  if (source.truncated() > 0 && !chunking) {
    err(`lexembed embed: ${source.truncated()} text(s) were longer than the model's maximum input (${source.maxInputTokens ?? 'its'} tokens) and were cut (drop_end): their ends are not in the vectors. To embed long documents whole, use --chunk-tokens N (one row per chunk) into another --output.`);
  }
  for (const line of run.bad.slice(0, 20)) err(`skipped ${line}`);
  if (run.bad.length > 20) err(`skipped ${run.bad.length - 20} more bad rows`);
  const chunks = chunking ? ` as ${writer.chunksWritten} chunks` : '';
  const part = shard ? `; shard ${shard.index}/${shard.count}: input rows ${shard.from + 1}–${shard.to} of ${shard.rows}` : '';
  out(`embedded ${writer.written} ${what}${chunks} into ${config.output} (${already} already there, ${run.bad.length} skipped${part})`);
  return 0;
}

type EmbedConfig = OptionValues<typeof EMBED_OPTIONS>;
type Chunking = { size: number; overlap: number };
/** A row of the input; a document's also says where its units (pages, paragraphs, lines) start, and a bad document's which file it is. */
type CorpusRow = { id: string; rawId: string | number; text: string; line: number; unit?: DocumentUnit; starts?: readonly number[] } | { error: string; line: number; where?: string };

/** The input file, how to read it, and the chunking asked for; refuses combinations that cannot work. */
function checkArguments(config: EmbedConfig, positionals: string[]) {
  const input = positionals[0];
  if (!input) throw new UsageError('lexembed embed: give the input file, e.g. lexembed embed corpus.jsonl --output vectors.jsonl (or a folder of PDF/DOCX files)');
  for (const p of positionals) if (!existsSync(p)) throw new UsageError(`lexembed embed: no such input file or folder: ${p}`);
  const documents = config.format === 'documents' || (config.format === 'auto' && (positionals.length > 1 || statSync(input).isDirectory() || isDocumentFile(input)));
  if (!documents && positionals.length > 1) throw new UsageError(`lexembed embed: --format ${config.format} reads one input file; give one, or --format documents for several document files`);
  if (!documents && statSync(input).isDirectory()) throw new UsageError(`lexembed embed: ${input} is a folder; --format ${config.format} reads one file (documents read folders)`);
  const format: CorpusFormat | 'documents' = documents ? 'documents' : config.format === 'auto' ? detectFormat(input) : (config.format as CorpusFormat);
  const corpus = { format, idField: config['id-field'], textField: config['text-field'] };
  if (config.remote && config['batch-size'] > 128) throw new UsageError('lexembed embed: --batch-size must be at most 128 with --remote (the API limit)');
  const size = config['chunk-tokens'] === '' ? (documents ? DOCUMENT_CHUNK_TOKENS : null) : config['chunk-tokens'];
  const chunking: Chunking | null = size === null ? null : { size, overlap: config['overlap-tokens'] };
  if (chunking && config.remote) {
    if (documents) throw new UsageError('lexembed embed: documents are chunked with the local model\'s tokenizer and embedded locally; leave out --remote');
    throw new UsageError('lexembed embed: --chunk-tokens cuts texts with the local model\'s tokenizer and embeds them locally; leave out --remote (or chunk the texts first, e.g. with the tokenize endpoint)');
  }
  if (!chunking && config['overlap-tokens'] > 0) throw new UsageError('lexembed embed: --overlap-tokens needs --chunk-tokens');
  const listed = documents ? listDocuments(positionals) : null;
  if (listed && !listed.files.length) throw new UsageError(`lexembed embed: no PDF, DOCX, TXT or Markdown files in ${positionals.join(', ')}`);
  return { input, corpus, chunking, reader: listed ? new DocumentReader(listed.files) : null, ignored: listed?.ignored ?? [] };
}

/**
 * What an earlier run left in the output: the ids it holds (every one of them is skipped, wherever
 * it stands in the input, and every input row it lacks is embedded, so a file added to a folder
 * is never left out) and its last row (a document cut off mid-way goes on after its last chunk).
 * Counts the input's rows and those already done, and checks the output came from this input.
 */
async function scanForResume(rowsOf: () => AsyncIterable<CorpusRow>, input: string, output: string, chunked: boolean, err: (s: string) => void) {
  const last = resumePoint(output, err, chunked);
  const lastId = last?.id ?? null;
  const done = last === null ? new Set<string>() : await outputIds(output);
  let total = 0;
  let already = 0;
  let found = lastId === null;
  let lastText = '';
  const counted = new Set<string>();
  for await (const row of rowsOf()) {
    if (!('id' in row)) continue;
    total++;
    if (done.has(row.id) && !counted.has(row.id)) (counted.add(row.id), already++);
    if (row.id === lastId) (found = true), (lastText = row.text);
  }
  if (!found) throw new UsageError(`lexembed embed: ${output} ends with id "${lastId}", which ${input} does not hold: it was written from another input; choose another --output`);
  return { last, total, already, lastText, done };
}

/** The ids of an output's rows (as strings), read line by line (streamed) without parsing the vectors. */
async function outputIds(path: string): Promise<Set<string>> {
  const ids = new Set<string>();
  for await (const line of createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    const head = /^\{"id":("(?:[^"\\]|\\.)*"|-?[\d.eE+-]+)[,}]/.exec(line);
    ids.add(String(head ? JSON.parse(head[1]!) : (JSON.parse(line) as { id: unknown }).id));
  }
  return ids;
}

/** Where vectors come from: the local model, or a server (--remote). */
interface Source {
  readonly embedBatch: EmbedBatch;
  readonly identity: () => Promise<ModelIdentity>;
  /** Texts cut to the model's maximum so far (local model only). */
  readonly truncated: () => number;
  readonly maxInputTokens: number | null;
  readonly chunkText: ((text: string) => TextChunk[]) | null;
  readonly dispose: () => Promise<void>;
}

async function openSource(config: EmbedConfig, task: (typeof TASKS)[number] | null, dimensions: number | null, chunking: Chunking | null, err: (s: string) => void): Promise<Source> {
  if (config.remote) {
    // The key comes from LEXEMBED_API_KEY; without one, calls go unauthenticated (a --no-auth server).
    const client = new Lexembed({ baseURL: config.remote, apiKey: process.env.LEXEMBED_API_KEY?.trim() || null });
    return {
      embedBatch: async (texts) => (await client.embeddings.create({ model: config['model-name'], texts, task, dimensions })).embeddings.map((e) => e.embedding),
      identity: () => remoteIdentity(config.remote, config['model-name']),
      truncated: () => 0,
      maxInputTokens: null,
      chunkText: null,
      dispose: async () => {},
    };
  }
  // Batch limits on auto, as serve's (batch-plan.ts): fixed on the CPU, measured at load on WebGPU.
  // One batch at a time: a resumed run must write the very vectors an uninterrupted one would (load-model.ts).
  // A batch tool: its batches are full ones, so the one-thread copy for lone small batches
  // (--small-batch-tokens in serve) would only cost its load and memory.
  const embedder = await loadModelFolder(config.model, { ...deviceOptions(config), batch: { tokens: 'auto', size: 'auto' }, oneBatchAtATime: true, smallBatchTokens: 0 });
  if (config.device !== 'cpu') err(`lexembed embed: device: ${embedder.runtime.deviceReason}`);
  if (dimensions !== null && dimensions > embedder.maxDimensions) {
    await embedder.dispose();
    throw new UsageError(`lexembed embed: --dimensions ${dimensions} exceeds the maximum of ${embedder.maxDimensions} for model "${embedder.modelName}" (${config.model}); pass an integer from 1 to ${embedder.maxDimensions}, or leave it out for the default ${embedder.settings.dimensions.default}`);
  }
  if (chunking) {
    const check = embedder.chunkText('', chunking);
    if (!check.ok) throw new UsageError(`lexembed embed: --chunk-tokens/--overlap-tokens: ${check.problem.detail}`);
  }
  let truncated = 0;
  return {
    embedBatch: async (texts) => {
      const r = await embedder.embed({ texts, task, overflowStrategy: 'drop_end', dimensions });
      if (!r.ok) throw new Error(r.problem.detail ?? r.problem.code);
      truncated += r.value.truncatedTexts ?? 0;
      return r.value.vectors.map((v) => Array.from(v));
    },
    identity: async () => localIdentity(embedder),
    truncated: () => truncated,
    maxInputTokens: embedder.settings.max_input_tokens,
    chunkText: chunking
      ? (text) => {
          const chunks = embedder.chunkText(text, chunking);
          if (!chunks.ok) throw new Error(chunks.problem.detail ?? 'chunking failed');
          return chunks.value;
        }
      : null,
    dispose: () => embedder.dispose(),
  };
}

/** A text to embed: a row, or one chunk of a row (with `lastOfRow` on its final chunk). */
type Item = { id: string; rawId: string | number; text: string; chunk?: TextChunk & { index: number; lastOfRow: boolean; unit?: DocumentUnit; starts?: readonly number[] } };

/** { page: 2 } for a chunk on page 2; { page: 2, page_end: 3 } for one running on to page 3. */
function unitsOf(unit: DocumentUnit, starts: readonly number[], start: number, end: number): Record<string, number> {
  const first = unitAt({ starts }, start);
  const last = unitAt({ starts }, Math.max(start, end - 1));
  return last === first ? { [unit]: first } : { [unit]: first, [`${unit}_end`]: last };
}

/** Batches items, embeds them and appends their rows to the output, fsynced batch by batch. */
class RowWriter {
  private readonly fd: number;
  private batch: Item[] = [];
  written = 0;
  chunksWritten = 0;
  onRowsDone: (rows: number) => void = () => {};

  constructor(
    private readonly output: string,
    private readonly source: Source,
    private readonly last: ReturnType<typeof resumePoint>,
  ) {
    this.fd = openSync(output, 'a');
  }

  get pending(): number {
    return this.batch.length;
  }

  /** Queues a row's items: itself, or its chunks (after chunk `after` when the row was cut off mid-way). */
  add(row: { id: string; rawId: string | number; text: string; unit?: DocumentUnit; starts?: readonly number[] }, after = -1): void {
    if (!this.source.chunkText) return void this.batch.push(row);
    const chunks = this.source.chunkText(row.text);
    if (after >= 0 && this.last?.end !== undefined && chunks[after]?.end !== this.last.end) {
      throw new UsageError(
        `lexembed embed: ${this.output} ends with chunk ${after} of id "${row.id}" ending at ${this.last.end}, but these options cut that chunk ${chunks[after] ? `to end at ${chunks[after]!.end}` : 'nowhere'}: it was written with other --chunk-tokens/--overlap-tokens; use those, or choose another --output`,
      );
    }
    for (const [index, c] of chunks.entries()) {
      if (index > after) this.batch.push({ id: row.id, rawId: row.rawId, text: c.text, chunk: { ...c, index, lastOfRow: index === chunks.length - 1, unit: row.unit, starts: row.starts } });
    }
  }

  /** Embeds and writes the first `size` queued items (all with no size). */
  async flush(size = this.batch.length): Promise<void> {
    const items = this.batch.splice(0, size);
    if (!items.length) return;
    const vectors = await this.source.embedBatch(items.map((r) => r.text));
    const lines = items.map((r, i) =>
      JSON.stringify(
        r.chunk
          ? {
              id: r.rawId,
              chunk: r.chunk.index,
              start: r.chunk.start,
              end: r.chunk.end,
              // A document's chunk: the page (PDF), paragraph (DOCX) or line (text) it starts on, and the one it ends on where that is another.
              ...(r.chunk.unit && r.chunk.starts ? unitsOf(r.chunk.unit, r.chunk.starts, r.chunk.start, r.chunk.end) : {}),
              embedding: vectors[i],
            }
          : { id: r.rawId, embedding: vectors[i] },
      ),
    );
    writeSync(this.fd, lines.join('\n') + '\n');
    fsyncSync(this.fd); // a batch is either fully on disk or cut off at the torn line on resume
    const rowsDone = items.filter((r) => !r.chunk || r.chunk.lastOfRow).length;
    this.written += rowsDone;
    this.chunksWritten += items.length;
    this.onRowsDone(rowsDone);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Reads the rows past the resume point into the writer, batch by batch. Ctrl-C (or SIGTERM)
 * stops after the batch being written; a bad row stops the run or is skipped (--on-error).
 */
async function embedRows(
  rows: AsyncIterable<CorpusRow>,
  writer: RowWriter,
  run: { input: string; batchSize: number; onError: 'stop' | 'skip'; done: ReadonlySet<string>; last: ReturnType<typeof resumePoint> },
): Promise<{ stopped: string | null; bad: string[]; failure?: string }> {
  const seen = new Set<string>();
  const bad: string[] = [];
  let interrupted: string | null = null;
  const onInt = () => void (interrupted = 'SIGINT');
  const onTerm = () => void (interrupted = 'SIGTERM');
  process.once('SIGINT', onInt);
  process.once('SIGTERM', onTerm);
  try {
    for await (const row of rows) {
      if (interrupted) break;
      if ('id' in row && run.done.has(row.id) && !seen.has(row.id)) {
        // In the output already: handled by the earlier run (its last row's later chunks, if it
        // was cut off mid-way, are still to do).
        seen.add(row.id);
        if (row.id === run.last?.id && run.last.chunk !== undefined) writer.add(row, run.last.chunk);
        continue;
      }
      if ('error' in row || seen.has(row.id)) {
        const why = 'error' in row ? row.error : `duplicate id "${row.id}"`;
        // A document's error names its file; a row's, the input and line.
        const place = 'where' in row && row.where ? '' : `${run.input}:${row.line}: `;
        if (run.onError === 'stop') {
          await writer.flush().catch(() => {});
          const next = place ? 'fix it, or pass --on-error skip (rows before it are saved; rerun to resume)' : 'or pass --on-error skip to leave it out (the documents before it are saved; rerun to resume)';
          return { stopped: 'error', bad, failure: `lexembed embed: ${place}${why}; ${next}` };
        }
        bad.push(`${place}${why}`);
        continue;
      }
      seen.add(row.id);
      writer.add(row);
      while (writer.pending >= run.batchSize) await writer.flush(run.batchSize);
    }
    if (!interrupted) await writer.flush();
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    writer.close();
  }
  return { stopped: interrupted, bad };
}

/**
 * The id of the output's last complete row, reading only the file's tail; cuts a torn last line
 * left by an interrupted run. null for a missing or empty output.
 */
function resumePoint(path: string, err: (s: string) => void, chunked: boolean): { id: string; chunk?: number; end?: number } | null {
  if (!existsSync(path)) return null;
  const size = statSync(path).size;
  if (size === 0) return null;
  const fd = openSync(path, 'r');
  let keep = 0;
  let line: string | null = null;
  try {
    // Grow the window from the end until it holds the newline ending the last complete line and
    // the one before it (or the file's start).
    for (let window = 64 * 1024; ; window *= 4) {
      const start = Math.max(0, size - window);
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      const end = buf.lastIndexOf(0x0a);
      if (end < 0 && start === 0) break; // no complete line at all
      if (end >= 0) {
        const before = end > 0 ? buf.lastIndexOf(0x0a, end - 1) : -1;
        if (before >= 0 || start === 0) {
          line = buf.subarray(before + 1, end).toString('utf8');
          keep = start + end + 1;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  if (keep < size) {
    err(`lexembed embed: ${path}: cutting an incomplete last line left by an interrupted run`);
    truncateSync(path, keep);
  }
  if (line === null) return null;
  let row: { id?: unknown; embedding?: unknown; chunk?: unknown; end?: unknown };
  try {
    row = JSON.parse(line);
  } catch {
    row = {};
  }
  if ((typeof row.id !== 'string' && typeof row.id !== 'number') || !Array.isArray(row.embedding)) {
    throw new UsageError(`lexembed embed: ${path} does not end with an {id, embedding} row, so it is not an earlier run's output; choose another --output`);
  }
  const isChunk = typeof row.chunk === 'number' && typeof row.end === 'number';
  if (isChunk !== chunked) {
    throw new UsageError(
      `lexembed embed: ${path} was written ${isChunk ? 'with' : 'without'} --chunk-tokens (its rows ${isChunk ? 'are' : 'are not'} chunks); run with the same options, or choose another --output`,
    );
  }
  const id = String(row.id);
  return isChunk ? { id, chunk: row.chunk as number, end: row.end as number } : { id };
}

function runSettings(model: ModelIdentity, task: string | null, dimensions: number | null, chunking: { size: number; overlap: number } | null): RunSettings {
  return { model, task, dimensions, chunk_tokens: chunking?.size ?? null, overlap_tokens: chunking ? chunking.overlap : null };
}

/**
 * A new output gets OUT.meta.json; an output with rows must have one that matches this run,
 * field by field, or the run is refused naming the difference (its vectors would not mix).
 */
function checkOrWriteMeta(output: string, run: RunSettings, hasRows: boolean, from: EmbedSource): void {
  const path = metaPathOf(output);
  if (hasRows) {
    if (!existsSync(path)) {
      throw new UsageError(
        `lexembed embed: ${output} has rows but no ${path} saying how they were made (an older lexembed wrote it, or it was copied without it), so this run cannot be checked against them; choose another --output`,
      );
    }
    let recorded: RunSettings;
    try {
      recorded = JSON.parse(readFileSync(path, 'utf8')).settings;
    } catch (error) {
      throw new UsageError(`lexembed embed: ${path} is not readable JSON (${messageOf(error)}); choose another --output`);
    }
    // Document vectors recorded with their vectors fingerprint are compared by it (a release that
    // keeps the graph, the tokenizer and the document settings keeps the output); else by the model's whole identity.
    const [made, now] = [recorded?.model?.vectors, run.model.vectors];
    const model: [string, unknown, unknown][] =
      made && now
        ? DENSE_PARTS.map((part) => [`model vectors: ${VECTOR_PARTS[part]}`, made[part], now[part]])
        : [
            ['model name', recorded?.model?.name, run.model.name],
            ['model id', recorded?.model?.id, run.model.id],
            ['model fingerprint (the weights)', recorded?.model?.fingerprint, run.model.fingerprint],
          ];
    const fields: [string, unknown, unknown][] = [
      ...model,
      ['task', recorded?.task, run.task],
      ['dimensions', recorded?.dimensions, run.dimensions],
      ['--chunk-tokens', recorded?.chunk_tokens, run.chunk_tokens],
      ['--overlap-tokens', recorded?.overlap_tokens, run.overlap_tokens],
      ['--shard', recorded?.shard, run.shard],
    ];
    const differ = fields.filter(([, a, b]) => (a ?? null) !== (b ?? null));
    if (differ.length) {
      const show = (v: unknown) => (v === null || v === undefined ? 'none (default)' : JSON.stringify(v));
      throw new UsageError(
        `lexembed embed: ${output} was made with other settings than this run, and its vectors would not mix with these: ${differ.map(([name, a, b]) => `${name} ${show(a)} there, ${show(b)} now`).join('; ')} (${path}). Rerun with the same settings to resume, or choose another --output`,
      );
    }
    return;
  }
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ lexembed: LEXEMBED_VERSION, created: new Date().toISOString(), settings: run, source: from }, null, 2)}\n`);
  renameSync(tmp, path);
}

/**
 * The documents' content hashes, checked against those OUT.meta.json recorded when they were
 * embedded: a document in the output whose file has changed since is refused (an output is
 * appended to, so its old rows cannot be replaced), with what to do. Returns every input file's
 * hash, to record.
 */
function checkContents(output: string, files: readonly { id: string; path: string }[], done: ReadonlySet<string>): Map<string, string> {
  const now = new Map(files.map((f) => [f.id, createHash('sha256').update(readFileSync(f.path)).digest('hex')]));
  const path = metaPathOf(output);
  const recorded = recordedContents(path);
  const changed = [...now].filter(([id, sha]) => done.has(id) && recorded[id] !== undefined && recorded[id] !== sha).map(([id]) => id);
  if (changed.length) {
    throw new UsageError(
      `lexembed embed: ${changed.length} document(s) changed since they were embedded into ${output}: ${changed.slice(0, 5).join(', ')}${changed.length > 5 ? ', …' : ''}. Their rows there are the old versions', and an output is only appended to. Embed into a new --output, or index the folder with lexembed index (it re-embeds what changed)`,
    );
  }
  return now;
}

/** The content hashes OUT.meta.json holds; none where it is missing or unreadable (checkOrWriteMeta says which). */
function recordedContents(path: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')).contents ?? {};
  } catch {
    return {};
  }
}

/** Records the content hash of each document embedded or about to be (what checkContents compares the next run with). */
function recordContents(output: string, contents: ReadonlyMap<string, string>): void {
  const path = metaPathOf(output);
  const meta = JSON.parse(readFileSync(path, 'utf8'));
  meta.contents = { ...meta.contents, ...Object.fromEntries(contents) };
  writeFileSync(`${path}.tmp`, `${JSON.stringify(meta, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
}

interface Shard {
  readonly index: number;
  readonly count: number;
  /** Input rows (good and bad, in file order) [from, to) of `rows`. */
  readonly from: number;
  readonly to: number;
  readonly rows: number;
}

/** The --shard part of the input: contiguous, so the shards' outputs concatenated are one run's. */
async function shardOf(spec: string, countRows: () => Promise<number>): Promise<Shard | null> {
  if (!spec) return null;
  const [which, of] = spec.split('/') as [string, string];
  const count = Number(of);
  let index: number;
  if (which === 'auto') {
    const fromJob = process.env.JOB_COMPLETION_INDEX;
    if (fromJob === undefined || !/^\d+$/.test(fromJob)) {
      throw new UsageError(`lexembed embed: --shard auto/${of} takes the shard from JOB_COMPLETION_INDEX (set by a Kubernetes indexed Job), which is ${fromJob === undefined ? 'not set' : `"${fromJob}"`}; give --shard I/${of} instead`);
    }
    index = Number(fromJob);
  } else index = Number(which);
  if (count < 1 || index >= count) throw new UsageError(`lexembed embed: --shard ${spec}: the shard index must be from 0 to ${Math.max(0, count - 1)} (N = ${count} shards)`);
  const rows = await countRows();
  return { index, count, from: Math.floor((index * rows) / count), to: Math.floor(((index + 1) * rows) / count), rows };
}

async function count(rows: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const _ of rows) n++;
  return n;
}

async function* inShard<T>(rows: AsyncIterable<T>, shard: Shard): AsyncGenerator<T> {
  let k = 0;
  for await (const row of rows) {
    if (k >= shard.to) return;
    if (k++ >= shard.from) yield row;
  }
}
