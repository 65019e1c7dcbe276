// Text out of legal documents: PDF (pdfjs-dist), DOCX (mammoth), plain text and Markdown, with
// where each page (PDF), paragraph (DOCX) or line (text) starts, so any character offset of the
// text — a chunk's start — leads back to "page 7". Isomorphic: bytes in, no file system (the CLI
// reads files, the demo page takes a dropped File). Nothing is silently empty: a PDF without a
// text layer (a scan) and an encrypted one are DocumentErrors that say so and what to do.
import { messageOf } from '../util/message-of.ts';

/** How a document is divided: what `unitAt` counts. */
export type DocumentUnit = 'page' | 'paragraph' | 'line';

export interface ExtractedDocument {
  readonly kind: 'pdf' | 'docx' | 'text';
  /** The text, pages (PDF) or paragraphs (DOCX) separated by a blank line. */
  readonly text: string;
  readonly unit: DocumentUnit;
  /** Where unit 1, 2, … starts in `text` (ascending, starts[0] = 0). */
  readonly starts: readonly number[];
}

export type DocumentErrorCode = 'unsupported' | 'encrypted' | 'no-text' | 'damaged';

export class DocumentError extends Error {
  constructor(
    readonly code: DocumentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DocumentError';
  }
}

/**
 * The parsers PDF and DOCX need: optional peer dependencies of the `lexembed` package (installed
 * with @lexembed/server), so an application that reads only text files does not carry them. The
 * ranges are the package.json's (tests/package/package.test.ts checks that they agree).
 */
export const DOCUMENT_PARSERS = { pdf: { name: 'pdfjs-dist', range: '~5.4.624' }, docx: { name: 'mammoth', range: '^1.13.0' } } as const;

/** File names the extractor reads, by extension. */
export const DOCUMENT_EXTENSIONS = ['.pdf', '.docx', '.txt', '.md', '.markdown'] as const;

export function isDocumentName(name: string): boolean {
  const lower = name.toLowerCase();
  return DOCUMENT_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/**
 * The text of the document `name` (its extension decides the parser) with its units' starts.
 * @example await extractDocument(bytes, 'lease.pdf') // { kind: 'pdf', text: 'LEASE AGREEMENT…', unit: 'page', starts: [0, 2113, …] }
 */
export async function extractDocument(bytes: Uint8Array, name: string): Promise<ExtractedDocument> {
  const lower = name.toLowerCase();
  if (lower.endsWith('.pdf')) return extractPdf(bytes, name);
  if (lower.endsWith('.docx')) return extractDocx(bytes, name);
  if (lower.endsWith('.txt') || lower.endsWith('.md') || lower.endsWith('.markdown')) return extractText(bytes, name);
  if (lower.endsWith('.doc')) throw new DocumentError('unsupported', `${name}: a legacy Word .doc file; save it as .docx (Word, LibreOffice: "Save as … Word Document") and try again`);
  throw new DocumentError('unsupported', `${name}: not a document lexembed reads (${DOCUMENT_EXTENSIONS.join(', ')})`);
}

/** The number (from 1) of the unit holding character `offset` of the document's text. */
export function unitAt(document: Pick<ExtractedDocument, 'starts'>, offset: number): number {
  const { starts } = document;
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}

function extractText(bytes: Uint8Array, name: string): ExtractedDocument {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  } catch {
    throw new DocumentError('damaged', `${name}: not UTF-8 text; convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8)`);
  }
  if (!text.trim()) throw new DocumentError('no-text', `${name}: the file is empty`);
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0 && i + 1 < text.length; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return { kind: 'text', text, unit: 'line', starts };
}

/** Joins parts (pages, paragraphs) with a blank line, recording where each starts. */
function joinUnits(parts: string[]): { text: string; starts: number[] } {
  let text = '';
  const starts: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (i > 0) text += '\n\n';
    starts.push(text.length);
    text += part;
  }
  return { text, starts };
}

async function extractDocx(bytes: Uint8Array, name: string): Promise<ExtractedDocument> {
  const mammoth = (await importParser('docx', () => import('mammoth'))).default as unknown as {
    extractRawText(input: { buffer: Uint8Array } | { arrayBuffer: ArrayBuffer }): Promise<{ value: string }>;
  };
  let raw: string;
  try {
    const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
    const input = isNode ? { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) } : { arrayBuffer: bytes.slice().buffer as ArrayBuffer };
    raw = (await mammoth.extractRawText(input)).value;
  } catch (error) {
    throw new DocumentError('damaged', `${name}: not a readable .docx (${messageOf(error)}); open it in Word or LibreOffice and save it again`);
  }
  // mammoth ends every paragraph with a blank line; empty paragraphs (spacing) are dropped.
  const paragraphs = raw
    .split('\n\n')
    .map((p) => p.trim())
    .filter(Boolean);
  if (!paragraphs.length) throw new DocumentError('no-text', `${name}: the document has no text (only images or empty paragraphs?)`);
  return { kind: 'docx', unit: 'paragraph', ...joinUnits(paragraphs) };
}

interface PdfTextItem {
  str?: string;
  hasEOL?: boolean;
}

async function extractPdf(bytes: Uint8Array, name: string): Promise<ExtractedDocument> {
  const pdfjs = await loadPdfjs();
  // pdfjs takes ownership of (detaches) the buffer it is given, and refuses a Node Buffer: a plain copy.
  const task = pdfjs.getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, useSystemFonts: false, verbosity: 0, stopAtErrors: false });
  let pdf: Awaited<typeof task.promise>;
  try {
    pdf = await task.promise;
  } catch (error) {
    const kind = (error as { name?: string }).name;
    if (kind === 'PasswordException') throw new DocumentError('encrypted', `${name}: the PDF is password-protected; save an unprotected copy (e.g. qpdf --decrypt --password=… in.pdf out.pdf) and try again`);
    throw new DocumentError('damaged', `${name}: not a readable PDF (${messageOf(error)})`);
  }
  try {
    const pages: string[] = [];
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items as PdfTextItem[]) {
        if (typeof item.str !== 'string') continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      pages.push(text.replace(/[ \t]+\n/g, '\n').trim());
      page.cleanup();
    }
    if (!pages.some((p) => p.length > 0)) {
      throw new DocumentError(
        'no-text',
        `${name}: none of its ${pdf.numPages} page${pdf.numPages === 1 ? '' : 's'} has a text layer (a scanned PDF?); lexembed does no OCR: run OCR first (e.g. ocrmypdf in.pdf out.pdf) and embed the result`,
      );
    }
    return { kind: 'pdf', unit: 'page', ...joinUnits(pages) };
  } finally {
    await pdf.destroy();
  }
}

type Pdfjs = typeof import('pdfjs-dist');
let pdfjsModule: Promise<Pdfjs> | undefined;

/** pdfjs-dist's build for this runtime: the legacy build on Node (no DOMMatrix and the like), the modern one in browsers. */
function loadPdfjs(): Promise<Pdfjs> {
  const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string' && typeof (globalThis as { window?: unknown }).window === 'undefined';
  pdfjsModule ??= importParser('pdf', () => (isNode ? (import('pdfjs-dist/legacy/build/pdf.mjs') as Promise<Pdfjs>) : import('pdfjs-dist'))).catch((error) => {
    pdfjsModule = undefined;
    throw error;
  });
  return pdfjsModule;
}

/** The parser's module; where it is not installed, an error that says what to install (not "Cannot find package"). */
async function importParser<M>(kind: keyof typeof DOCUMENT_PARSERS, load: () => Promise<M>): Promise<M> {
  const { name, range } = DOCUMENT_PARSERS[kind];
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missing = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || new RegExp(`Cannot find (package|module) '${name}`).test(messageOf(error));
    if (!missing) throw error;
    throw new Error(
      `lexembed/documents reads ${kind.toUpperCase()} files with the package ${name}, which is not installed here: it is an optional peer dependency of lexembed (@lexembed/server installs it); run \`npm install ${name}@${range}\`. Text and Markdown files need nothing more.`,
      { cause: error },
    );
  }
}

/**
 * Where the browser's pdfjs worker script is (pdfjs-dist/build/pdf.worker.mjs, e.g. a bundler's
 * `?url` import); PDFs parse on the main thread (or the calling worker) otherwise.
 */
export async function setPdfWorkerSrc(url: string): Promise<void> {
  (await loadPdfjs()).GlobalWorkerOptions.workerSrc = url;
}
