// The pure API contract: schemas, validation and the problem catalogue. Imports only zod.
export * from './problems.ts';
export * from './result.ts';
export * from './request.ts';
export * from './response.ts';
export * from './vectors.ts';
export * from './float-json.ts';
export * from './invocations.ts';
export * from './paths.ts';
export * from './openai.ts';
export * from './tokenize.ts';
export * from './chunking.ts';
export * from './rerank.ts';
export * from './sparse.ts';
export * from './search.ts';
