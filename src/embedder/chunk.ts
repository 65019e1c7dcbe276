// Token-exact chunking with character offsets, for documents longer than the model reads. The
// text is split into words the way BERT's basic tokenizer splits it (whitespace, punctuation, CJK
// ideographs each their own word), each distinct word is counted once with the model's own
// tokenizer, and windows of at most `size` tokens are cut between words, preferring a sentence or
// line end in the window's last tenth. A window's text is `text.slice(start, end)`, and tokenising
// that slice gives exactly the window's tokens, so what is embedded is what the offsets say.

export interface ChunkOptions {
  /** Most tokens per chunk, special tokens not counted (at most what the model reads beside them). */
  readonly size: number;
  /** Tokens the next chunk repeats from the end of this one (whole words: at most this many). */
  readonly overlap?: number;
}

export interface TextChunk {
  /** `text.slice(start, end)`: the chunk as it stands in the original text. */
  readonly text: string;
  /** Offsets into the original text, in UTF-16 code units (JavaScript string indices). */
  readonly start: number;
  readonly end: number;
  /** Its tokens, special tokens not counted. */
  readonly tokens: number;
}

/** A word of the text: [start, end) offsets and its token count. */
interface Word {
  readonly start: number;
  readonly end: number;
  readonly tokens: number;
}

// BERT's basic tokenizer: whitespace (space, tab, line ends, Zs) separates; punctuation (Unicode
// P*, and the ASCII symbols it counts as punctuation) and CJK ideographs are words of their own;
// control characters stay inside their word (the tokenizer drops them, so they cut nothing).
const WHITESPACE = /[ \t\n\r\p{Zs}]/u;
const PUNCTUATION = /[\p{P}\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]/u;
const CJK = /[\u{4E00}-\u{9FFF}\u{3400}-\u{4DBF}\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B820}-\u{2CEAF}\u{F900}-\u{FAFF}\u{2F800}-\u{2FA1F}]/u;
const SENTENCE_END = /[.!?;:。！？]["'”’)\]]*$/u;

/**
 * Splits `text` into chunks of at most `size` tokens of `countTokens` (the model tokenizer's count
 * for one word, special tokens excluded), with about `overlap` tokens repeated between neighbours.
 * @example chunkText('First sentence. Second one.', { size: 4 }, (w) => 1)
 *          // [{ text: 'First sentence.', start: 0, end: 15, tokens: 3 }, { text: 'Second one.', start: 16, end: 27, tokens: 3 }]
 */
export function chunkText(text: string, options: ChunkOptions, countTokens: (word: string) => number): TextChunk[] {
  const size = options.size;
  const overlap = options.overlap ?? 0;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`size must be an integer of at least 1, got ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) throw new RangeError(`overlap must be an integer from 0 to size - 1 (${size - 1}), got ${overlap}`);
  const words = splitWords(text, countTokens);
  const chunks: TextChunk[] = [];
  let first = 0;
  while (first < words.length) {
    // The longest run of whole words within `size` tokens (a lone longer word is cut by itself).
    let last = first;
    let tokens = words[first]!.tokens;
    while (last + 1 < words.length && tokens + words[last + 1]!.tokens <= size) tokens += words[++last]!.tokens;
    if (tokens > size) {
      chunks.push(...splitLongWord(text, words[first]!, size, countTokens));
      first++;
      continue;
    }
    // Prefer ending at a line end in the last tenth of the window, else at a sentence end.
    if (last + 1 < words.length) {
      const floor = tokens - Math.max(1, Math.floor(size / 10));
      const cut = lastBreak(words, first, last, tokens, floor, (k) => endsLine(text, words[k]!, words[k + 1])) ?? lastBreak(words, first, last, tokens, floor, (k) => endsSentence(text, words[k]!));
      if (cut) (last = cut.last), (tokens = cut.tokens);
      // Never end just before punctuation attached to the word before it (the next chunk would open
      // with '. notice …'): end a word earlier.
      while (last > first && attachedPunctuation(text, words, last + 1)) tokens -= words[last--]!.tokens;
    }
    chunks.push({ text: text.slice(words[first]!.start, words[last]!.end), start: words[first]!.start, end: words[last]!.end, tokens });
    if (last + 1 >= words.length) break;
    // The next chunk starts on whole words within `overlap` tokens of this one's end, and always moves on.
    let next = last + 1;
    let repeated = 0;
    while (next - 1 > first && repeated + words[next - 1]!.tokens <= overlap) repeated += words[--next]!.tokens;
    // …nor start an overlap on such punctuation: from the word after it.
    while (next <= last && attachedPunctuation(text, words, next)) next++;
    first = next;
  }
  return chunks;
}

/**
 * A `countTokens` for chunkText from a tokenizer's `encode` (with its special tokens, as the
 * embedder's backends give), caching each distinct word.
 */
export function wordTokenCounter(encode: (text: string) => readonly number[]): (word: string) => number {
  const specials = encode('').length;
  const cache = new Map<string, number>();
  return (word) => {
    let n = cache.get(word);
    if (n === undefined) cache.set(word, (n = encode(word).length - specials));
    return n;
  };
}

/** A token of a text with its offsets (chunkText's words, split into the tokenizer's pieces). */
export interface TokenSpan {
  readonly token: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Each token of `text` (no special tokens) with its character offsets. Word boundaries are exact;
 * inside a word, pieces take their own length (WordPiece `##` not counted), which is exact unless
 * normalisation changed the word's length (an accent stripped, say), where they share it in
 * proportion. An unknown-word token spans its whole word.
 * @example tokenOffsets('Leasing.', tokenize) // [{token:'leas',start:0,end:4},{token:'##ing',start:4,end:7},{token:'.',start:7,end:8}]
 */
export function tokenOffsets(text: string, tokenize: (word: string) => readonly string[]): TokenSpan[] {
  const spans: TokenSpan[] = [];
  for (const word of splitWords(text, (w) => tokenize(w).length)) {
    const pieces = tokenize(text.slice(word.start, word.end));
    const lengths = pieces.map((p) => p.replace(/^##/, '').length);
    const total = lengths.reduce((a, b) => a + b, 0);
    const span = word.end - word.start;
    let done = 0;
    pieces.forEach((token, i) => {
      const at = (n: number) => word.start + (total === span ? n : Math.round((n * span) / Math.max(total, 1)));
      spans.push({ token, start: at(done), end: i === pieces.length - 1 ? word.end : at(done + lengths[i]!) });
      done += lengths[i]!;
    });
  }
  return spans;
}

/** The text's words (runs between whitespace, punctuation and CJK marks), with offsets and token counts. */
function splitWords(text: string, countTokens: (word: string) => number): Word[] {
  const words: Word[] = [];
  let start = -1;
  const close = (end: number) => {
    if (start < 0) return;
    const tokens = countTokens(text.slice(start, end));
    if (tokens > 0) words.push({ start, end, tokens });
    start = -1;
  };
  for (let i = 0; i < text.length; ) {
    const ch = String.fromCodePoint(text.codePointAt(i)!);
    const next = i + ch.length;
    if (WHITESPACE.test(ch)) close(i);
    else if (PUNCTUATION.test(ch) || CJK.test(ch)) {
      close(i);
      const tokens = countTokens(ch);
      if (tokens > 0) words.push({ start: i, end: next, tokens });
    } else if (start < 0) start = i;
    i = next;
  }
  close(text.length);
  return words;
}

/** The last word k in (first, last] with `breaks(k)` whose end leaves more than `floor` tokens in the chunk. */
function lastBreak(words: readonly Word[], first: number, last: number, tokens: number, floor: number, breaks: (k: number) => boolean): { last: number; tokens: number } | null {
  for (let k = last, t = tokens; k > first && t > floor; t -= words[k]!.tokens, k--) if (breaks(k)) return { last: k, tokens: t };
  return null;
}

function endsLine(text: string, word: Word, next: Word | undefined): boolean {
  return text.slice(word.end, next ? next.start : text.length).includes('\n');
}

/** Punctuation that closes on the word before it ('.', ',', '"' after a word, '-' inside one), not '(' or '§' opening one. */
function attachedPunctuation(text: string, words: readonly Word[], k: number): boolean {
  const word = words[k]!;
  return k > 0 && word.start === words[k - 1]!.end && PUNCTUATION.test(text.slice(word.start, word.end));
}

function endsSentence(text: string, word: Word): boolean {
  return SENTENCE_END.test(text.slice(Math.max(0, word.end - 4), word.end));
}

/**
 * A word longer than a chunk (rare: WordPiece reads a word over 100 characters as one unknown
 * token): halved on code-point boundaries until each piece's own count fits.
 */
function splitLongWord(text: string, word: Word, size: number, countTokens: (word: string) => number): TextChunk[] {
  const piece = text.slice(word.start, word.end);
  const chars = [...piece];
  if (word.tokens <= size || chars.length < 2) return [{ text: piece, start: word.start, end: word.end, tokens: word.tokens }];
  const cut = word.start + chars.slice(0, chars.length >> 1).join('').length;
  const halves = [
    { start: word.start, end: cut },
    { start: cut, end: word.end },
  ];
  return halves.flatMap((h) => splitLongWord(text, { ...h, tokens: countTokens(text.slice(h.start, h.end)) }, size, countTokens));
}
