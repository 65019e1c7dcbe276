// How the embedder paces itself: the token estimate that admits a request before it is tokenised,
// and the yields that keep tokenising from stalling the event loop.

/**
 * Characters per token assumed when admitting a request before tokenising it: English legal text
 * averages 4.5–5 characters per WordPiece token here, so 4 errs towards refusing at saturation.
 */
const CHARS_PER_TOKEN_ESTIMATE = 4;
/** Longest stretch of tokenising between yields to the event loop (other requests, /health). */
const TOKENISE_SLICE_MS = 8;

/** Tokens a text of `characters` characters is assumed to make, special tokens included. */
export const estimateTokens = (characters: number) => Math.ceil(characters / CHARS_PER_TOKEN_ESTIMATE) + 2;

/** Returns a function to await between units of work: it yields once TOKENISE_SLICE_MS has passed. */
export function pauser(): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < TOKENISE_SLICE_MS) return;
    await new Promise((resolve) => setTimeout(resolve, 0));
    since = performance.now();
  };
}
