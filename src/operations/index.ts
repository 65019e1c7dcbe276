// One request function per API operation: a decoded body and the embedder in, the response body
// (and the tokens it fed the model) or a problem out. The HTTP app, the browser's local client
// and the edge Worker (through the app) call these, so no transport repeats an operation's flow.
export { answer, type Answer, type Outcome } from './outcome.ts';
export { createEmbeddings } from './embeddings.ts';
export { createRerankings, rerankNotServed } from './rerankings.ts';
export { createTokenization } from './tokenize.ts';
export { createOpenAIEmbeddings, listOpenAIModels } from './openai.ts';
export { createSparseEmbeddings, sparseNotServed } from './sparse.ts';
export { createSearch, type Searcher } from './search.ts';
