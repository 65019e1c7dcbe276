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

/** A file that gives no text: which file, what is wrong in plain words, and what to do about it. */
export class DocumentError extends Error {
  constructor(
    readonly code: DocumentErrorCode,
    readonly file: string,
    /** What is wrong, e.g. "a legacy Word .doc file (Word 97–2003), a format lexembed does not read". */
    readonly problem: string,
    /** What to do, e.g. "save it as .docx … and try again". */
    readonly fix: string,
  ) {
    super(`${file}: ${problem}; ${fix}`);
    this.name = 'DocumentError';
  }

  /** What is wrong and what to do, for a caller that names the file itself. */
  get reason(): string {
    return `${this.problem}; ${this.fix}`;
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
/** Word-processor files it cannot read: a folder walk takes them as documents, so each fails saying what to do instead of being left out. */
export const UNREADABLE_DOCUMENT_EXTENSIONS = ['.doc', '.rtf', '.odt'] as const;

/** A name a folder walk takes as a document: one lexembed reads, or a word-processor file it names with what to do. */
export function isDocumentName(name: string): boolean {
  const lower = name.toLowerCase();
  return [...DOCUMENT_EXTENSIONS, ...UNREADABLE_DOCUMENT_EXTENSIONS].some((ext) => lower.endsWith(ext));
}

/** What a file's first bytes say it is, whatever its name: the extractor's dispatch. */
export type SniffedKind = 'pdf' | 'zip' | 'ole' | 'rtf' | 'image' | 'binary' | 'text';

/**
 * What `bytes` (a whole file, or at least its first 8 KiB) are by their content.
 * @example sniffDocument(readFileSync('old.doc')) // 'ole'
 */
export function sniffDocument(bytes: Uint8Array): SniffedKind {
  const head = bytes.subarray(0, 8192);
  const starts = (...b: number[]) => b.every((x, i) => head[i] === x);
  // pdf.js, like other readers, finds the header within the first 1 KiB.
  if (indexOfAscii(head.subarray(0, 1024), '%PDF-') >= 0) return 'pdf';
  if (starts(0x50, 0x4b, 0x03, 0x04) || starts(0x50, 0x4b, 0x05, 0x06)) return 'zip';
  if (starts(0xd0, 0xcf, 0x11, 0xe0)) return 'ole'; // the compound file's signature (all 8 bytes: D0 CF 11 E0 A1 B1 1A E1)
  if (indexOfAscii(head.subarray(0, 16), '{\\rtf') === 0) return 'rtf';
  if (starts(0x89, 0x50, 0x4e, 0x47) || starts(0xff, 0xd8, 0xff) || starts(0x47, 0x49, 0x46, 0x38) || starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return 'image';
  if (starts(0xff, 0xfe) || starts(0xfe, 0xff)) return 'text'; // UTF-16 with its byte order mark
  let control = 0;
  for (const b of head) {
    if (b === 0) return 'binary';
    if (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d && b !== 0x1b) control++;
  }
  return control > head.length / 100 ? 'binary' : 'text';
}

/**
 * The text of the document `name` with its units' starts. The bytes decide how it is read (a PDF
 * renamed .txt is read as a PDF, OLE bytes renamed .docx are named as a legacy Word file); the
 * name only says which text files are which and is what errors call the file.
 * @example await extractDocument(bytes, 'lease.pdf') // { kind: 'pdf', text: 'LEASE AGREEMENT…', unit: 'page', starts: [0, 2113, …] }
 */
export async function extractDocument(bytes: Uint8Array, name: string): Promise<ExtractedDocument> {
  const kind = sniffDocument(bytes);
  if (kind === 'pdf') return extractPdf(bytes, name);
  if (kind === 'zip') return extractDocx(bytes, name);
  if (kind === 'text') return extractText(bytes, name);
  throw unreadable(kind, bytes, name);
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
  const named = /\.(pdf|docx)$/i.exec(name)?.[1]?.toLowerCase();
  if (named) {
    const what = named === 'pdf' ? 'a PDF (it does not start with %PDF-)' : 'a Word document (a .docx is a ZIP archive; this is plain text)';
    throw new DocumentError('damaged', name, `named .${named}, but it is text, not ${what}`, `get the file again, or rename it to .txt if text is what it holds`);
  }
  const encoding = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : 'utf-8';
  let text: string;
  try {
    text = new TextDecoder(encoding, { fatal: true }).decode(bytes).replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  } catch {
    throw new DocumentError('damaged', name, `not ${encoding === 'utf-8' ? 'UTF-8' : 'UTF-16'} text (another encoding, such as Latin-1 or Windows-1252?)`, 'convert it to UTF-8 (e.g. iconv -f windows-1252 -t utf-8 in.txt > out.txt) and try again');
  }
  if (!text.trim()) throw new DocumentError('no-text', name, 'the file is empty (or only blank lines)', 'leave it out, or give it its text');
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
  notDocx(bytes, name);
  const mammoth = (await importParser('docx', () => import('mammoth'))).default as unknown as {
    extractRawText(input: { buffer: Uint8Array } | { arrayBuffer: ArrayBuffer }): Promise<{ value: string }>;
  };
  let raw: string;
  try {
    const isNode = typeof (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node === 'string';
    const input = isNode ? { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) } : { arrayBuffer: bytes.slice().buffer as ArrayBuffer };
    raw = (await mammoth.extractRawText(input)).value;
  } catch (error) {
    // jszip's and mammoth's own words, less the URLs they point developers to.
    const cause = messageOf(error).replace(/\s*\(?https?:\/\/\S+\)?/g, '').trim();
    throw new DocumentError('damaged', name, `a damaged Word document that cannot be read (${cause})`, 'open it in Word or LibreOffice and save it again as .docx, then try again');
  }
  // mammoth ends every paragraph with a blank line; empty paragraphs (spacing) are dropped.
  const paragraphs = raw
    .split('\n\n')
    .map((p) => p.trim())
    .filter(Boolean);
  if (!paragraphs.length) throw new DocumentError('no-text', name, 'the Word document has no text (only images, or empty paragraphs?)', 'if its pages are scanned images, save it as PDF, run OCR (e.g. ocrmypdf in.pdf out.pdf) and give the result');
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
    if (kind === 'PasswordException') throw new DocumentError('encrypted', name, 'the PDF is password-protected', 'save an unprotected copy (e.g. qpdf --decrypt --password=… in.pdf out.pdf) and try again');
    throw damagedPdf(bytes, name, messageOf(error));
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
        name,
        `none of its ${pdf.numPages} page${pdf.numPages === 1 ? '' : 's'} has a text layer (a scanned PDF?)`,
        'lexembed does no OCR: run OCR first (e.g. ocrmypdf in.pdf out.pdf) and give the result',
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

/** The DocumentError for a file of a kind lexembed does not read, by what its bytes are. */
function unreadable(kind: Exclude<SniffedKind, 'pdf' | 'zip' | 'text'>, bytes: Uint8Array, name: string): DocumentError {
  const misnamed = (what: string) => (/\.(pdf|docx|txt|md|markdown)$/i.test(name) ? `its name ends in ${/\.[^.]+$/.exec(name)![0]}, but it is ${what}` : what);
  if (kind === 'ole') {
    // An OLE compound file: Word 97–2003, or a password-protected .docx (Office encrypts OOXML into one).
    if (indexOfUtf16(bytes, 'EncryptedPackage') >= 0) return new DocumentError('encrypted', name, 'a password-protected Word (or other Office) file, which Office stores encrypted', 'open it with its password, remove the password (Word: File › Info › Protect Document › Encrypt with Password, then clear it), save it as .docx and try again');
    if (indexOfUtf16(bytes, 'WordDocument') >= 0 || /\.doc$/i.test(name)) return new DocumentError('unsupported', name, misnamed('a legacy Word .doc file (Word 97–2003), a format lexembed does not read'), 'save it as .docx (Word or LibreOffice: Save as … Word Document), or convert it with soffice --headless --convert-to docx, and try again');
    return new DocumentError('unsupported', name, misnamed('an old Microsoft Office file (Excel, PowerPoint or Outlook 97–2003?), not a document lexembed reads'), 'save its text as PDF or .docx and try again');
  }
  // Binary named .doc: a Word file whatever else it is (WordPerfect and Works saved .doc too).
  if (kind === 'binary' && /\.doc$/i.test(name)) return unreadable('ole', bytes, name);
  if (kind === 'rtf') return new DocumentError('unsupported', name, misnamed('a Rich Text (RTF) file, a format lexembed does not read'), 'save it as .docx or PDF (Word or LibreOffice: Save as) and try again');
  if (kind === 'image') return new DocumentError('no-text', name, misnamed('an image, which has no text layer (lexembed does no OCR)'), 'if it is a scanned page, make a PDF with a text layer (e.g. ocrmypdf --image-dpi 300 page.png page.pdf) and give that');
  return new DocumentError('unsupported', name, misnamed('binary data, not a PDF, Word (.docx), text or Markdown file'), `convert it to one of ${DOCUMENT_EXTENSIONS.join(', ')} and try again`);
}

/** Refuses a ZIP archive that is not a .docx, or one cut off, before mammoth says so in its own words. */
function notDocx(bytes: Uint8Array, name: string): void {
  // Entry names are stored uncompressed, so the parts an archive holds can be found by name.
  if (indexOfAscii(bytes.subarray(0, 200), 'mimetypeapplication/vnd.oasis.opendocument.text') >= 0) {
    throw new DocumentError('unsupported', name, 'an OpenDocument text (.odt), a format lexembed does not read', 'save it as .docx (LibreOffice: Save as … Word 2007–365) and try again');
  }
  // The end-of-central-directory record (PK 5 6) sits in the last 64 KiB + 22 bytes of every ZIP.
  if (indexOfAscii(bytes.subarray(Math.max(0, bytes.length - 65_557)), 'PK\x05\x06') < 0) {
    throw new DocumentError('damaged', name, `a ZIP archive (as a .docx is) that is cut off or damaged: its table of contents at the end is missing`, 'if it was cut off in a download or copy, get it again; otherwise open it in Word or LibreOffice, save it again as .docx and try again');
  }
  if (indexOfAscii(bytes, 'word/document') < 0) {
    throw new DocumentError('unsupported', name, 'a ZIP archive, but not a Word document (no word/document.xml: a spreadsheet, a presentation or a folder zipped?)', 'save the text as .docx or PDF, or unzip a zipped folder and give the folder, and try again');
  }
}

/** A PDF that pdf.js cannot open: cut off (no %%EOF at its end), or damaged otherwise. */
function damagedPdf(bytes: Uint8Array, name: string, cause: string): DocumentError {
  if (indexOfAscii(bytes.subarray(Math.max(0, bytes.length - 1024)), '%%EOF') < 0) {
    return new DocumentError('damaged', name, `a PDF cut off before its end (it has no %%EOF; pdf.js: ${cause})`, 'get the file again (an interrupted download or copy?) and try again');
  }
  return new DocumentError('damaged', name, `a damaged PDF that cannot be read (pdf.js: ${cause})`, 'open it in a PDF reader and save a new copy (or repair it: qpdf in.pdf out.pdf), then try again');
}

/** Where the ASCII string `s` starts in `bytes`, or -1. */
function indexOfAscii(bytes: Uint8Array, s: string): number {
  outer: for (let i = 0; i + s.length <= bytes.length; i++) {
    for (let j = 0; j < s.length; j++) if (bytes[i + j] !== s.charCodeAt(j)) continue outer;
    return i;
  }
  return -1;
}

/** Where `s` written in UTF-16LE (as OLE directory entries name their streams) starts in `bytes`, or -1. */
function indexOfUtf16(bytes: Uint8Array, s: string): number {
  return indexOfAscii(bytes, [...s].map((c) => `${c}\0`).join(''));
}
