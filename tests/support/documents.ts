// Real PDF and DOCX files for the tests, written here byte by byte (no fixtures to licence): PDFs
// with a text layer on every page (Helvetica, one text object per line), without one (a drawn
// rectangle: what a scan looks like to a text extractor), password-protected (AES-256, R5
// security handler) and damaged; DOCX files as Word writes them (a zip of WordprocessingML).
import { createHash, randomBytes } from 'node:crypto';
import JSZip from 'jszip';

const escapePdf = (s: string) => s.replace(/[\\()]/g, (c) => `\\${c}`);

/** A PDF of `pages`, each a list of lines. `scan`: pages carry no text, only a filled rectangle. `password`: encrypted for that user password. */
export function makePdf(pages: string[][], options: { scan?: boolean; password?: string } = {}): Uint8Array {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body) && objects.length;
  const catalog = add('');
  const pagesId = add('');
  const font = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const kids: number[] = [];
  for (const lines of pages) {
    const content = options.scan
      ? '0.2 0.2 0.2 rg 72 200 468 500 re f'
      : `BT /F1 11 Tf 14 TL 72 740 Td ${lines.map((l) => `(${escapePdf(l)}) Tj T*`).join(' ')} ET`;
    const stream = add(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
    kids.push(add(`<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${stream} 0 R >>`));
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesId} 0 R >>`;
  objects[pagesId - 1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${kids.length} >>`;
  let encrypt = '';
  if (options.password !== undefined) {
    // R5 (AES-256): U = SHA-256(password ‖ validation salt) ‖ validation salt ‖ key salt; a reader
    // that is not given the password cannot open the file (the content is never decrypted here).
    const hash = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
    const [uv, uk, ov, ok] = [randomBytes(8), randomBytes(8), randomBytes(8), randomBytes(8)];
    const u = Buffer.concat([hash(Buffer.from(options.password), uv), uv, uk]);
    const o = Buffer.concat([hash(Buffer.from('owner-secret'), ov, u), ov, ok]);
    const hex = (b: Buffer) => `<${b.toString('hex')}>`;
    encrypt = ` /Encrypt ${add(`<< /Filter /Standard /V 5 /R 5 /Length 256 /P -1028 /O ${hex(o)} /U ${hex(u)} /OE ${hex(randomBytes(32))} /UE ${hex(randomBytes(32))} /Perms ${hex(randomBytes(16))} /CF << /StdCF << /AuthEvent /DocOpen /CFM /AESV3 /Length 32 >> >> /StmF /StdCF /StrF /StdCF >>`)} 0 R`;
  }
  let out = '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n';
  const offsets: number[] = [];
  for (const [i, body] of objects.entries()) {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  }
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  const id = randomBytes(16).toString('hex');
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalog} 0 R${encrypt} /ID [<${id}> <${id}>] >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(Buffer.from(out, 'latin1'));
}

/** A DOCX whose body is `paragraphs` (an empty string: an empty paragraph, as Word writes spacing). */
export async function makeDocx(paragraphs: string[]): Promise<Uint8Array> {
  const zip = new JSZip();
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  zip.file(
    '[Content_Types].xml',
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
  );
  zip.file(
    '_rels/.rels',
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
  );
  const body = paragraphs.map((p) => (p ? `<w:p><w:r><w:t xml:space="preserve">${esc(p)}</w:t></w:r></w:p>` : '<w:p/>')).join('');
  zip.file('word/document.xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`);
  return new Uint8Array(await zip.generateAsync({ type: 'uint8array' }));
}

/**
 * The start of an OLE compound file (what Word 97–2003 .doc files and password-protected .docx
 * files are), its directory naming `stream` in UTF-16LE as real ones do: 'WordDocument' for a
 * .doc, 'EncryptedPackage' for an encrypted .docx. Enough for a reader that goes by the bytes.
 */
export function makeOle(stream: 'WordDocument' | 'EncryptedPackage' | 'Workbook'): Uint8Array {
  const bytes = new Uint8Array(2048);
  bytes.set([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
  bytes.set(Buffer.from(stream, 'utf16le'), 1024);
  return bytes;
}
