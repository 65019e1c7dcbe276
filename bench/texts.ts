// Deterministic legal-sounding benchmark texts of a target token length (no data files needed).

const WORDS = (
  'the lessee shall pay rent monthly in advance to lessor at address notice termination agreement party parties ' +
  'indemnify hold harmless against claims losses damages liabilities arising out of breach warranty representation ' +
  'governing law jurisdiction courts province ontario district columbia federal regulation section subsection paragraph ' +
  'minister may by order prescribe fees conditions licence permit holder applicant application tribunal appeal decision ' +
  'within thirty days after receipt written consent confidential information disclose third person except required by ' +
  'statute creditor debtor consumer credit disclosure finance charge annual percentage rate billing error dispute ' +
  'employer employee wages overtime compensation benefits insurance premium policy coverage exclusion deductible ' +
  'property title deed mortgage lien encumbrance easement covenant zoning permit inspection compliance penalty offence ' +
  'summary conviction fine not exceeding imprisonment term years corporation director officer shareholder meeting ' +
  'resolution bylaw amendment repeal coming into force schedule definitions interpretation application purpose'
).split(' ');

/** Mulberry32: a tiny seeded PRNG so every run embeds the same texts. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` texts of about `words` words each (≈ 1.1–1.3 tokens per word with WordPiece). */
export function makeTexts(count: number, words: number, seed = 42): string[] {
  const next = rng(seed);
  return Array.from({ length: count }, () => {
    const n = Math.max(1, Math.round(words * (0.9 + 0.2 * next())));
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(next() * WORDS.length)]!);
    return out.join(' ') + '.';
  });
}

/** Words per text that give about `tokens` tokens for the given encoder. */
export function wordsForTokens(encode: (t: string) => number[], tokens: number): number {
  let words = tokens;
  for (let i = 0; i < 6; i++) {
    const sample = makeTexts(64, words, 7);
    const mean = sample.reduce((s, t) => s + encode(t).length, 0) / sample.length;
    words = Math.max(1, Math.round(words * (tokens / mean)));
  }
  return words;
}

/** The throughput benchmark's workloads (bench/run.ts, bench/gpu/): token targets and text counts. */
export function workloads(maxTokens: number): Record<string, { tokens: number[]; count: number }> {
  return {
    short: { tokens: [16], count: 1024 },
    medium: { tokens: [128], count: 256 },
    long: { tokens: [Math.min(512, maxTokens)], count: 64 },
    mixed: { tokens: [16, 16, 16, 64, 128, 128, 256, Math.min(512, maxTokens)], count: 256 },
  };
}

/** The texts of one workload, the same on every run and for every path that measures it. */
export function workloadTexts(name: string, encode: (t: string) => number[], maxTokens: number): string[] {
  const w = workloads(maxTokens)[name];
  if (!w) throw new Error(`unknown workload "${name}" (known: ${Object.keys(workloads(maxTokens)).join(', ')})`);
  const pick = rng(99);
  const byTarget = new Map(w.tokens.map((t) => [t, makeTexts(w.count, wordsForTokens(encode, t), t)]));
  return Array.from({ length: w.count }, (_, i) => byTarget.get(w.tokens[Math.floor(pick() * w.tokens.length)]!)![i]!);
}
