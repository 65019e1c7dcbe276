// Reads a corpus file as rows {line, id, text} or bad rows {line, error}: JSONL (id and text
// fields), CSV (header row; RFC 4180 quoting, fields may span lines) or plain text (one text
// per line, the line number as id).
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

export type CorpusFormat = 'jsonl' | 'csv' | 'text';
/** `id` is the row's id as text (for matching); `rawId` as the input has it (a JSON number stays a number). */
export type CorpusRow = { line: number; id: string; rawId: string | number; text: string } | { line: number; error: string };

export interface CorpusOptions {
  readonly format: CorpusFormat;
  readonly idField: string;
  readonly textField: string;
}

export function detectFormat(path: string): CorpusFormat {
  if (/\.jsonl?$/i.test(path) || /\.ndjson$/i.test(path)) return 'jsonl';
  if (/\.csv$/i.test(path)) return 'csv';
  return 'text';
}

export async function* readCorpus(path: string, options: CorpusOptions): AsyncGenerator<CorpusRow> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let lineNo = 0;
  if (options.format === 'text') {
    for await (const line of lines) {
      lineNo++;
      if (!line.trim()) continue; // blank lines separate nothing; skipped silently
      yield { line: lineNo, id: String(lineNo), rawId: lineNo, text: line };
    }
    return;
  }
  if (options.format === 'jsonl') {
    for await (const line of lines) {
      lineNo++;
      if (!line.trim()) continue;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch {
        yield { line: lineNo, error: 'not valid JSON' };
        continue;
      }
      yield toRow(lineNo, row as Record<string, unknown>, options);
    }
    return;
  }
  // CSV: accumulate physical lines until the quotes balance, then split the record.
  let header: string[] | undefined;
  let pending = '';
  let startLine = 0;
  for await (const line of lines) {
    lineNo++;
    if (!pending) startLine = lineNo;
    pending = pending ? `${pending}\n${line}` : line;
    if ((pending.match(/"/g)?.length ?? 0) % 2 === 1) continue;
    const record = pending;
    pending = '';
    if (!record.trim()) continue;
    const fields = splitCsvRecord(record);
    if (!fields) {
      yield { line: startLine, error: 'malformed CSV quoting' };
      continue;
    }
    if (!header) {
      header = fields;
      for (const needed of [options.idField, options.textField]) {
        if (!header.includes(needed)) throw new Error(`${path}: the CSV header has no "${needed}" column (columns: ${header.join(', ')}); use --id-field/--text-field`);
      }
      continue;
    }
    yield toRow(startLine, Object.fromEntries(header.map((h, i) => [h, fields[i]])), options);
  }
  if (pending) yield { line: startLine, error: 'unterminated quoted field at end of file' };
}

function toRow(line: number, row: Record<string, unknown>, options: CorpusOptions): CorpusRow {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return { line, error: 'not a JSON object' };
  const id = row[options.idField];
  const text = row[options.textField];
  if (typeof id !== 'string' && typeof id !== 'number') return { line, error: `missing "${options.idField}" (string or number)` };
  if (typeof text !== 'string') return { line, error: `missing "${options.textField}" (string)` };
  if (!/\S/u.test(text)) return { line, error: `"${options.textField}" has no non-whitespace character` };
  return { line, id: String(id), rawId: id, text };
}

function splitCsvRecord(record: string): string[] | null {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (record[i] === '"') {
      i++;
      for (;;) {
        const q = record.indexOf('"', i);
        if (q < 0) return null;
        field += record.slice(i, q);
        if (record[q + 1] === '"') {
          field += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      if (i < record.length && record[i] !== ',') return null;
    } else {
      const comma = record.indexOf(',', i);
      field = record.slice(i, comma < 0 ? record.length : comma);
      i = comma < 0 ? record.length : comma;
    }
    fields.push(field);
    if (i >= record.length) return fields;
    i++; // the comma
    if (i === record.length) return (fields.push(''), fields);
  }
}
