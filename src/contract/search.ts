// POST /v1/search, an extension served where the server holds a search index (lexembed serve
// --index): a question in, the index's best passages out, each with its file, page and the
// sentences that match, ranked as `lexembed search <index>` ranks them. The server keeps the model
// and the index open, so a search costs the query's embedding and the index's lookup alone.
import { z } from 'zod';
import { problem } from './problems.ts';
import { formatIssues } from './request.ts';
import type { Result } from './result.ts';
import { fieldsOf, integerFromTo, nonBlankText, oneOf, required } from './rules.ts';
import { perModel } from './schema-cache.ts';

export const SEARCH_MODES = ['hybrid', 'dense', 'sparse'] as const;
/** The longest query, in characters: a query is one text the model reads whole. */
export const MAX_SEARCH_QUERY_CHARACTERS = 10_000;
export const MAX_SEARCH_TOP = 1000;
export const MAX_SEARCH_OFFSET = 10_000;

export function createSearchRequestSchema(modelName: string) {
  return z.strictObject(
    {
      query: nonBlankText(required('must be a string'))
        .max(MAX_SEARCH_QUERY_CHARACTERS, { error: `must be at most ${MAX_SEARCH_QUERY_CHARACTERS.toLocaleString('en')} characters: ask with its key words or a sentence` })
        .describe('The question or words to search for, read by the model as a retrieval/query.'),
      model: z
        .literal(modelName, { error: `must be "${modelName}", the model that made the index's vectors (or leave it out)` })
        .optional()
        .describe('Optional: the model the index was made with; a request naming another model is refused.'),
      index: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }).optional().describe("Optional: the index's name or location as the server reports it (GET /health); the server's index when left out."),
      top: integerFromTo(1, MAX_SEARCH_TOP).default(10).describe('How many passages to return.'),
      offset: integerFromTo(0, MAX_SEARCH_OFFSET, ' (the next page: the previous offset + top)').default(0).describe('Passages to skip first, for the next page.'),
      mode: oneOf(SEARCH_MODES).default('hybrid').describe('hybrid (default): the dense and sparse lists fused by score; dense or sparse: one list.'),
      file: z.string({ error: 'must be a string (a glob)' }).optional().describe("Only files whose path matches this glob: `*` any characters but /, `**` any, `?` one; e.g. 'leases/**'."),
      document: z.string({ error: 'must be a string' }).optional().describe('Only the file with exactly this path.'),
    },
    { error: 'must be a JSON object' },
  );
}
export type SearchRequest = z.output<ReturnType<typeof createSearchRequestSchema>>;

const unit = z.number().int().nullable();

export const SearchHitSchema = z.object({
  rank: z.number().int().min(1),
  score: z.number().describe('The fused score (hybrid: the sum of each list\'s score rescaled by its mean ± 3 sd, so 0–2) or the one list\'s score; compare within a search only.'),
  dense: z.number().nullable().describe('Cosine of the dense vectors, where the passage was among the dense candidates.'),
  sparse: z.number().nullable().describe("The idf-weighted sparse dot product, where the passage was among the sparse candidates."),
  passage_id: z.string().describe('The passage, for lexembed mcp fetch and the next requests.'),
  file: z.string(),
  chunk: z.number().int().min(0).describe('The passage\'s place in its file, from 0.'),
  start: z.number().int().describe('Character offsets in the file\'s extracted text.'),
  end: z.number().int(),
  unit: z.enum(['page', 'paragraph', 'line']).nullable().describe('What first and last count (pages of a PDF, paragraphs of a DOCX, lines of a text).'),
  first: unit,
  last: unit,
  text: z.string().describe('The passage.'),
  excerpt: z.string().describe('The sentences of the passage that match the query best, "…" for the rest.'),
});
export type SearchHitBody = z.infer<typeof SearchHitSchema>;

export const SearchResponseSchema = z.object({
  index: z.string().describe('The index searched.'),
  mode: z.enum(SEARCH_MODES),
  hits: z.array(SearchHitSchema),
  next_offset: z.number().int().nullable().describe('The offset of the next page, or null when this page was not full.'),
  usage: z.object({ input_tokens: z.number().int().nullable() }),
});
export type SearchResponse = z.infer<typeof SearchResponseSchema>;

const schemaFor = perModel(createSearchRequestSchema);
const SEARCH_FIELDS = fieldsOf(createSearchRequestSchema('any'));

export function validateSearchRequest(body: unknown, modelName: string): Result<SearchRequest> {
  const parsed = schemaFor(modelName).safeParse(body);
  if (!parsed.success) return { ok: false, problem: problem('validation', formatIssues(parsed.error.issues, { fields: { '': SEARCH_FIELDS } })) };
  return { ok: true, value: parsed.data };
}
