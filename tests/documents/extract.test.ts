// Text out of real PDF and DOCX files (written by tests/support/documents.ts) with pdfjs-dist and
// mammoth, page and paragraph numbers for any offset, and a DocumentError that says what to do
// for every file that gives no text: a scan, an encrypted PDF, a damaged one, a legacy .doc.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_PARSERS, type DocumentError, extractDocument, isDocumentName, unitAt } from '../../src/documents/extract.ts';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { makeDocx, makeOle, makePdf } from '../support/documents.ts';

const failure = async (bytes: Uint8Array, name: string) => {
  try {
    await extractDocument(bytes, name);
  } catch (error) {
    return error as DocumentError;
  }
  throw new Error(`${name} was read`);
};

describe('extractDocument', () => {
  it('reads a PDF page by page, and every offset leads back to its page', async () => {
    const pdf = makePdf([
      ['LEASE AGREEMENT', 'The Lessee shall pay the rent (monthly) in advance.'],
      ['2. Termination', 'Either party may terminate this lease on thirty days written notice.'],
      ['3. Governing law', 'This lease is governed by the laws of Ontario.'],
    ]);
    const doc = await extractDocument(pdf, 'lease.pdf');
    expect(doc).toMatchObject({ kind: 'pdf', unit: 'page' });
    expect(doc.starts).toHaveLength(3);
    expect(doc.text).toContain('The Lessee shall pay the rent (monthly) in advance.');
    expect(unitAt(doc, doc.text.indexOf('thirty days'))).toBe(2);
    expect(unitAt(doc, doc.text.indexOf('Ontario'))).toBe(3);
    expect(unitAt(doc, 0)).toBe(1);
    expect(pdf[0], 'the caller keeps its bytes (pdfjs detaches what it is given)').toBe(0x25);
  });

  it('reads a DOCX paragraph by paragraph (empty paragraphs are spacing, not paragraphs)', async () => {
    const doc = await extractDocument(await makeDocx(['MUTUAL NON-DISCLOSURE AGREEMENT', '', '1. "Confidential Information" means any information disclosed.', '2. Term. This Agreement lasts two years & a day.']), 'nda.docx');
    expect(doc).toMatchObject({ kind: 'docx', unit: 'paragraph', starts: [0, 33, 97] }); // 31 + 2, then + 62 + 2
    expect(doc.text.slice(doc.starts[2]!)).toBe('2. Term. This Agreement lasts two years & a day.');
    expect(unitAt(doc, doc.text.indexOf('Confidential'))).toBe(2);
  });

  it('reads text and Markdown line by line (UTF-8, BOM and CRLF handled)', async () => {
    const doc = await extractDocument(new TextEncoder().encode('\uFEFF# Policy\r\nSection 1. Data is kept for one year.\r\n'), 'policy.md');
    expect(doc).toMatchObject({ kind: 'text', unit: 'line', text: '# Policy\nSection 1. Data is kept for one year.\n', starts: [0, 9] });
  });

  it('refuses, saying so and what to do, every file it cannot read text from', async () => {
    expect(await failure(makePdf([['anything']], { scan: true }), 'scan.pdf')).toMatchObject({ code: 'no-text', message: expect.stringMatching(/^scan\.pdf: none of its 1 page has a text layer \(a scanned PDF\?\); lexembed does no OCR: run OCR first/) });
    expect(await failure(makePdf([['secret']], { password: 'hunter2' }), 'locked.pdf')).toMatchObject({ code: 'encrypted', message: expect.stringMatching(/^locked\.pdf: the PDF is password-protected; save an unprotected copy/) });
    expect(await failure(new TextEncoder().encode('%PDF-1.7\nnot really\n%%EOF\n'), 'broken.pdf')).toMatchObject({ code: 'damaged', message: expect.stringMatching(/^broken\.pdf: a damaged PDF that cannot be read \(pdf\.js: .*\); open it in a PDF reader and save a new copy/) });
    expect(await failure(new TextEncoder().encode('PK\x03\x04 not a zip'), 'broken.docx')).toMatchObject({ code: 'damaged', message: expect.stringMatching(/^broken\.docx: a ZIP archive \(as a \.docx is\) that is cut off or damaged.*; if it was cut off in a download or copy, get it again/) });
    expect(await failure(await makeDocx(['', '']), 'empty.docx')).toMatchObject({ code: 'no-text' });
    expect(await failure(makeOle('WordDocument'), 'old.doc')).toMatchObject({ code: 'unsupported', message: expect.stringMatching(/^old\.doc: a legacy Word \.doc file .*; save it as \.docx/) });
    expect(await failure(new Uint8Array([0x43, 0x61, 0x66, 0xe9]), 'latin.txt')).toMatchObject({ code: 'damaged', message: expect.stringMatching(/^latin\.txt: not UTF-8 text .*; convert it to UTF-8/) });
    expect(await failure(new Uint8Array([1]), 'photo.png')).toMatchObject({ code: 'unsupported' });
    expect(await failure(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]), 'photo.png')).toMatchObject({ code: 'no-text', message: expect.stringMatching(/^photo\.png: an image, .*lexembed does no OCR.*; if it is a scanned page, make a PDF/) });
  });

  // Each message: the file, what is wrong in plain words, what to do; never a parser's own words alone.
  it('goes by the bytes, not the name: a renamed, cut-off or misnamed file is told for what it is, with what to do', async () => {
    const bad = async (bytes: Uint8Array, name: string) => {
      const error = await failure(bytes, name);
      expect(error.message, name).toBe(`${name}: ${error.reason}`);
      expect(error.file).toBe(name);
      return error;
    };
    // Word 97–2003 bytes renamed .docx: not jszip's "Can't find end of central directory : is this a zip file ?" and its URL.
    const renamed = await bad(makeOle('WordDocument'), 'report.docx');
    expect(renamed).toMatchObject({ code: 'unsupported', problem: 'its name ends in .docx, but it is a legacy Word .doc file (Word 97–2003), a format lexembed does not read', fix: expect.stringMatching(/^save it as \.docx/) });
    expect(renamed.message).not.toMatch(/central directory|https?:/);
    expect(await bad(makeOle('EncryptedPackage'), 'secret.docx')).toMatchObject({ code: 'encrypted', problem: expect.stringContaining('password-protected'), fix: expect.stringContaining('remove the password') });
    // A PDF cut off in a download: said to be cut off, and what to do (pdf.js alone says "Invalid Root reference." or the like).
    const pdf = makePdf([['1. Rent. The Tenant shall pay rent monthly.'], ['2. Notice. Sixty days.']]);
    expect(await bad(pdf.slice(0, Math.floor(pdf.length * 0.6)), 'cut.pdf')).toMatchObject({ code: 'damaged', problem: expect.stringMatching(/^a PDF cut off before its end/), fix: expect.stringContaining('get the file again') });
    const docx = await makeDocx(['1. Term.', '2. Notice.']);
    expect(await bad(docx.slice(0, docx.length - 30), 'cut.docx')).toMatchObject({ code: 'damaged', problem: expect.stringContaining('cut off or damaged') });
    expect(await bad(new TextEncoder().encode('{\\rtf1\\ansi Lease}'), 'lease.rtf')).toMatchObject({ code: 'unsupported', problem: expect.stringContaining('Rich Text (RTF)'), fix: expect.stringContaining('save it as .docx or PDF') });
    expect(await bad(new TextEncoder().encode('just words'), 'lease.pdf')).toMatchObject({ code: 'damaged', problem: expect.stringContaining('named .pdf, but it is text') });
    expect(await bad(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0]), 'tool')).toMatchObject({ code: 'unsupported', problem: expect.stringMatching(/^binary data/) });
    // The other way round: a real PDF named .txt is read as the PDF it is.
    expect(await extractDocument(pdf, 'lease.txt')).toMatchObject({ kind: 'pdf', unit: 'page' });
  });

  it('knows its file names: what it reads, and the word-processor files it names with what to do', () => {
    expect(['a.PDF', 'b.docx', 'c.txt', 'd.md', 'e.doc', 'f.rtf', 'g.odt'].every(isDocumentName)).toBe(true);
    expect(['f.png', 'g.jsonl', 'h.xlsx'].some(isDocumentName)).toBe(false);
  });
});

describe('DOCUMENT_PARSERS', () => {
  it('name the ranges package.json asks for (what the missing-parser error tells a user to install), and the docs list them', () => {
    const { dependencies } = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const { name, range } of Object.values(DOCUMENT_PARSERS)) expect(range, name).toBe(dependencies[name]);
    const install = `npm install ${Object.values(DOCUMENT_PARSERS).map(({ name, range }) => `${name}@${range}`).join(' ')}`;
    for (const doc of ['docs/documents.md', 'docs/running.md']) expect(readFileSync(join(PROJECT_ROOT, doc), 'utf8').replace(/\s+/g, ' '), doc).toContain(install);
  });
});
