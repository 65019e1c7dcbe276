// The fetch-env key under which an adapter that sees the request target before URL parsing (the
// Node adapter) hands it to the app, so "/x/../v1/embeddings" is judged as sent, not as the URL
// parser tidied it (see contract/paths.ts).
export const RAW_TARGET = 'lexembed.rawTarget';
