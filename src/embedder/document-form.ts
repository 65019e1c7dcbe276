// Documents in the model folder's document form (lexembed.json "document_form", model/graph/document_form.py):
// the graph reads a marker piece in place of [CLS] as "embed this as a document", so the request's
// ids carry the choice and the batching queue, the backends and pooling stay as they are.
import type { ModelSettings } from './settings.ts';

/**
 * The sequences of texts embedded as `retrieval/document` at `dimensions`: with the marker in place
 * of their first id where the folder has a document form (at full width only, unless the folder
 * says otherwise), else unchanged.
 * @example asDocuments(settings, [[101, 7592, 102]], 1792) // [[2, 7592, 102]] for legal-2-embedder
 */
export function asDocuments(settings: Pick<ModelSettings, 'document_form' | 'dimensions'>, sequences: number[][], dimensions: number): number[][] {
  const form = settings.document_form;
  if (!form || (form.full_width_only && dimensions !== settings.dimensions.max)) return sequences;
  return sequences.map((ids) => {
    if (ids[0] !== form.replaces) throw new Error(`lexembed.json document_form: a sequence starts with id ${ids[0]}, not ${form.replaces}, which the marker replaces`);
    return [form.marker, ...ids.slice(1)];
  });
}
