// Document files (PDF, DOCX, TXT, Markdown) as corpus rows for `lexembed embed` and `lexembed
// search`: folders walked in a fixed order (so a resumed or sharded run sees the same rows), each
// file one row whose id is its path, its text extracted once per run (src/documents/extract.ts)
// with where each page, paragraph or line starts. A file that cannot be read is a bad row naming
// the file and why (--on-error decides), never a crash.
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { DocumentError, extractDocument, isDocumentName, sniffDocument, UNREADABLE_DOCUMENT_EXTENSIONS, type DocumentUnit, type ExtractedDocument } from '../documents/extract.ts';
import { messageOf } from '../util/message-of.ts';

export interface DocumentFile {
  /** The row's id: the path under the folder given (with /), or the file as given. */
  readonly id: string;
  readonly path: string;
}

/** A document row: the extracted text and how to find its units. */
export type DocumentRow =
  | { line: number; id: string; rawId: string; text: string; unit: DocumentUnit; starts: readonly number[] }
  | { line: number; error: string; where: string };

/** The file that marks a folder as a lexembed index (search-index/location.ts MARKER_FILE). */
const INDEX_MARKER = 'lexembed-index.json';

/**
 * The document files under `inputs` (folders, walked recursively, or files), sorted by id;
 * hidden files and folders are left out, and so are a lexembed index's folders (an index kept
 * inside the folder it indexes) and files of other kinds (counted in `ignored`).
 */
export function listDocuments(inputs: readonly string[]): { files: DocumentFile[]; ignored: string[] } {
  const files: DocumentFile[] = [];
  const ignored: string[] = [];
  for (const input of inputs) {
    if (!statSync(input).isDirectory()) {
      files.push({ id: input.split(sep).join('/'), path: input });
      continue;
    }
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        if (entry.name.startsWith('.')) continue;
        const path = join(dir, entry.name);
        // A lexembed index's own folder (its marker, search-index/location.ts) holds no documents.
        if (entry.isDirectory() && existsSync(join(path, INDEX_MARKER))) continue;
        if (entry.isDirectory()) walk(path);
        else if (entry.isFile() && isDocumentName(entry.name)) files.push({ id: relative(input, path).split(sep).join('/'), path });
        else if (entry.isFile()) ignored.push(path);
      }
    };
    walk(input);
  }
  return { files, ignored };
}

/**
 * Whether a file given alone is a document rather than a corpus of lines: by its content (a PDF,
 * a ZIP such as a .docx, a legacy Office file, an image, anything that is not text), whatever its
 * name, or by a name that only documents have (.pdf, .docx, .doc, .rtf, .odt).
 */
export function isDocumentFile(path: string): boolean {
  if (/\.(pdf|docx)$/i.test(path) || UNREADABLE_DOCUMENT_EXTENSIONS.some((ext) => path.toLowerCase().endsWith(ext))) return true;
  const head = new Uint8Array(8192);
  const fd = openSync(path, 'r');
  try {
    return sniffDocument(head.subarray(0, readSync(fd, head, 0, head.length, 0))) !== 'text';
  } finally {
    closeSync(fd);
  }
}

/** The line that says which files of a folder were left out, and how to have them read. */
export function describeLeftOut(ignored: readonly string[]): string {
  return `left out ${ignored.length} file(s) that are not PDF, DOCX, TXT or Markdown (convert them to one of those to have them read): ${ignored.slice(0, 5).join(', ')}${ignored.length > 5 ? ', …' : ''}`;
}

/** Reads documents into rows; each file is extracted once however often the rows are read. */
export class DocumentReader {
  private readonly cache = new Map<string, Promise<ExtractedDocument | DocumentError | Error>>();

  constructor(readonly files: readonly DocumentFile[]) {}

  /** The extracted document, or the error that says why it cannot be. */
  extract(file: DocumentFile): Promise<ExtractedDocument | DocumentError | Error> {
    let result = this.cache.get(file.path);
    if (!result) {
      result = (async () => {
        try {
          return await extractDocument(readFileSync(file.path), file.id);
        } catch (error) {
          return error instanceof DocumentError ? error : new Error(`${file.id}: ${messageOf(error)}`);
        }
      })();
      this.cache.set(file.path, result);
    }
    return result;
  }

  async *rows(): AsyncGenerator<DocumentRow> {
    for (const [i, file] of this.files.entries()) {
      const doc = await this.extract(file);
      if (doc instanceof Error) yield { line: i + 1, error: doc.message, where: file.path };
      else yield { line: i + 1, id: file.id, rawId: file.id, text: doc.text, unit: doc.unit, starts: doc.starts };
    }
  }
}
