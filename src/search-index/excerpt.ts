// The part of a passage that answers: the sentence that holds most of the query's words (weighted
// by length, so "convenience" counts more than "may"), with its neighbours up to a length, the
// rest marked with an ellipsis. A passage's first characters are often a neighbouring clause's
// end; a reader (CLI, MCP, the demo) should see the clause that matched. Pure: runs anywhere.

const STOPWORDS = new Set(
  'a an and are as at be by can could did do does for from had has have how i if in into is it its may might must my no not of on or our shall should so than that the their them then there these they this those to under upon us was we were what when where which who whom why will with would you your either any'.split(' '),
);

/** A word's crude stem: lower case, common English endings off, so "terminate" meets "termination". */
export function stemOf(word: string): string {
  const w = word.toLowerCase();
  const cut = /(?:ational|ations|ation|ments|ment|ings|ing|ives|ive|ies|ied|ed|es|s|e|y)$/.exec(w);
  const stem = cut && w.length - cut[0].length >= 4 ? w.slice(0, w.length - cut[0].length) : w;
  return stem.length > 6 ? stem.slice(0, 6) : stem;
}

const WORD = /[\p{L}\p{N}]+/gu;
/** A clause heading: a section number ("5.2", "(a)", "IV.") or capitals ("GOVERNING LAW."). */
const SECTION_NUMBER = /^\(?\d+(?:\.\d+)*[.)]$/;
const HEADING = /^(?:\(?[\dIVXivx]+(?:\.\d+)*[.)]?\s|\(?[a-z]\)\s|[\p{Lu}\d\s.,&-]+$)/u;

/** The query's content words as stems, each with its weight. */
function queryStems(query: string): Map<string, number> {
  const stems = new Map<string, number>();
  for (const [word] of query.matchAll(WORD)) {
    if (STOPWORDS.has(word.toLowerCase())) continue;
    stems.set(stemOf(word), Math.max(stems.get(stemOf(word)) ?? 0, Math.min(word.length, 10)));
  }
  return stems;
}

/** [start, end) of each sentence: cut after . ; : ! ? followed by space, and at line ends. */
function sentences(text: string): [number, number][] {
  const spans: [number, number][] = [];
  const cut = /(?<=[.;:!?]["'”’)\]]*)\s+|\n\s*/g;
  let at = 0;
  for (const m of text.matchAll(cut)) {
    if (m.index! > at) spans.push([at, m.index!]);
    at = m.index! + m[0].length;
  }
  if (at < text.length) spans.push([at, text.length]);
  return spans;
}

/**
 * At most about `length` characters of `text` around its sentence that best matches `query`,
 * whitespace collapsed, with "…" where text was left out.
 * @example excerptOf('1. Fees are due monthly. 2. Either party may terminate for convenience.', 'terminate for convenience', 60)
 *          // '… 2. Either party may terminate for convenience.'
 */
export function excerptOf(text: string, query: string, length = 320): string {
  const clean = (s: string) => s.replace(/\s+/g, ' ').trim();
  const spans = sentences(text);
  if (!spans.length) return '';
  const stems = queryStems(query);
  const scoreOf = ([s, e]: [number, number]) => {
    const seen = new Set<string>();
    for (const [word] of text.slice(s, e).matchAll(WORD)) seen.add(stemOf(word));
    let score = 0;
    for (const [stem, weight] of stems) if (seen.has(stem)) score += weight;
    return score;
  };
  const scores = spans.map(scoreOf);
  let best = 0;
  for (let i = 1; i < spans.length; i++) if (scores[i]! > scores[best]!) best = i;
  // The best sentence (with a short heading before it, "5.2 Termination."), then the ones after it
  // while they fit: a clause reads on, rarely back.
  const before = best > 0 ? clean(text.slice(...spans[best - 1]!)) : '';
  let first = before.length > 0 && before.length <= 40 && HEADING.test(before) ? best - 1 : best;
  // A heading's number cut off as a sentence of its own ("7." before "WARRANTY.") goes with it.
  if (first < best && first > 0 && SECTION_NUMBER.test(clean(text.slice(...spans[first - 1]!)))) first--;
  let last = best;
  const size = () => clean(text.slice(spans[first]![0], spans[last]![1])).length;
  while (last + 1 < spans.length && size() + clean(text.slice(...spans[last + 1]!)).length + 1 <= length) last++;
  let body = clean(text.slice(spans[first]![0], spans[last]![1]));
  let cutEnd = last < spans.length - 1;
  if (body.length > length) {
    body = body.slice(0, length).replace(/\s+\S*$/, '');
    cutEnd = true;
  }
  return `${first > 0 ? '… ' : ''}${body}${cutEnd ? ' …' : ''}`;
}
