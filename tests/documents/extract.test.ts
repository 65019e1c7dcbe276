// Text out of real PDF and DOCX files (written by tests/support/documents.ts) with pdfjs-dist and
// mammoth, page and paragraph numbers for any offset, and a DocumentError that says what to do
// for every file that gives no text: a scan, an encrypted PDF, a damaged one, a legacy .doc.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DOCUMENT_PARSERS, type DocumentError, extractDocument, isDocumentName, unitAt } from '../../src/documents/extract.ts';
import { PROJECT_ROOT } from '../../src/node/runtime/load-model.ts';
import { makeDocx, makePdf } from '../support/documents.ts';

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
    expect(await failure(new TextEncoder().encode('%PDF-1.7\nnot really'), 'broken.pdf')).toMatchObject({ code: 'damaged', message: expect.stringMatching(/^broken\.pdf: not a readable PDF/) });
    expect(await failure(new TextEncoder().encode('PK not a zip'), 'broken.docx')).toMatchObject({ code: 'damaged', message: expect.stringMatching(/^broken\.docx: not a readable \.docx/) });
    expect(await failure(await makeDocx(['', '']), 'empty.docx')).toMatchObject({ code: 'no-text' });
    expect(await failure(new Uint8Array([0xd0, 0xcf, 0x11, 0xe0]), 'old.doc')).toMatchObject({ code: 'unsupported', message: expect.stringContaining('save it as .docx') });
    expect(await failure(new Uint8Array([0xff, 0xfe, 0x00]), 'latin.txt')).toMatchObject({ code: 'damaged', message: expect.stringContaining('not UTF-8') });
    expect(await failure(new Uint8Array([1]), 'photo.png')).toMatchObject({ code: 'unsupported' });
  });

  it('knows its file names', () => {
    expect(['a.PDF', 'b.docx', 'c.txt', 'd.md'].every(isDocumentName)).toBe(true);
    expect(['e.doc', 'f.png', 'g.jsonl'].some(isDocumentName)).toBe(false);
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
