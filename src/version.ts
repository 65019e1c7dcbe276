// lexembed's version, as package.json says it (a module of its own so browser and edge bundles
// need no JSON import): tests/contract/version.test.ts and scripts/build.mjs refuse a mismatch.
export const LEXEMBED_VERSION = '0.1.0';
/** The version of the embedding service specification the API follows. */
export const INTERFACE_VERSION = '0.8.3';
