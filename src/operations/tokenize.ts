// POST /v1/tokenize (an extension): token counts as /v1/embeddings reads the texts; no model run.
import { validateTokenizeRequest, type TokenizeResponse } from '../contract/index.ts';
import type { Embedder } from '../embedder/types.ts';
import { answer, type Outcome } from './outcome.ts';

export async function createTokenization(request: unknown, embedder: Embedder): Promise<Outcome<TokenizeResponse>> {
  const parsed = validateTokenizeRequest(request, embedder);
  if (!parsed.ok) return parsed;
  const results = await embedder.tokenize(parsed.value.texts, { task: parsed.value.task, offsets: parsed.value.return_offsets });
  return answer({ results, max_input_tokens: embedder.settings.max_input_tokens });
}
