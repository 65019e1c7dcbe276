// Long texts are tokenised in slices, with a yield to the event loop between slices: a 3.6 MB text
// is a second of WordPiece in one call, during which nothing else (health checks, other
// requests) would be answered. Cutting at ASCII whitespace keeps the tokens exactly as one call
// makes them: BERT's normaliser works character by character and its pre-tokeniser splits on
// whitespace anyway (other "whitespace", e.g. U+FEFF, may be dropped inside a word, so it is
// never a cut).

/** Characters per slice: about 2 ms of WordPiece here. */
export const SLICE_CHARS = 8192;

const CUT = /[ \t\n\r]/;

/** [start, end) offsets covering `text`, each about `size` characters, cut only at ASCII whitespace. */
export function textSlices(text: string, size = SLICE_CHARS): [number, number][] {
  const slices: [number, number][] = [];
  let start = 0;
  while (text.length - start > size) {
    let cut = start + size;
    while (cut > start && !CUT.test(text[cut]!)) cut--;
    if (cut === start) {
      // One word longer than a slice: cut after it instead.
      cut = start + size;
      while (cut < text.length && !CUT.test(text[cut]!)) cut++;
      if (cut === text.length) break;
    }
    slices.push([start, cut]);
    start = cut;
  }
  slices.push([start, text.length]);
  return slices;
}

/**
 * Token ids of `text` with special tokens, as `encode(text)` gives them, computed slice by slice
 * with `pause()` between slices. With `enough`, stops once the ids are longer than it (the caller
 * truncates or refuses anyway): what is returned then is a prefix, closed by the final special token.
 */
export async function encodeInSlices(encode: (text: string) => number[], text: string, pause: () => Promise<void>, enough = Infinity): Promise<number[]> {
  const slices = textSlices(text);
  if (slices.length === 1) return encode(text);
  let first: number | undefined;
  let last: number | undefined;
  const inner: number[] = [];
  for (const [start, end] of slices) {
    await pause();
    const ids = encode(text.slice(start, end));
    first ??= ids[0];
    last = ids.at(-1);
    for (let i = 1; i < ids.length - 1; i++) inner.push(ids[i]!);
    if (inner.length + 2 > enough) break;
  }
  return [first!, ...inner, last!];
}

/** The pieces of `text` (slices) with their start offsets, to run a per-piece function over and shift back. */
export function* slicesOf(text: string): Generator<{ offset: number; piece: string }> {
  for (const [start, end] of textSlices(text)) yield { offset: start, piece: text.slice(start, end) };
}
