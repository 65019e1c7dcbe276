"""Gives a folder's sparse *query* vectors (POST /v1/embeddings/sparse with `task:
retrieval/query`) the model's own term neighbours: a question that says "dismissal" also asks,
more quietly, for the words the model learned to place beside it. Each counted word-start piece
p of a query (a stem class where the folder has them) proposes its listed neighbours n, and a
neighbour the query does not already hold gets

    max over its proposers p of   α · sim(p, n) · sat(tf_p)   [× f_n for idf and relative]

(sat: the query's BM25-saturated count, f_n the weighting's factor for n, as for any piece). The
neighbours are the folder's static part's rows (its learned word vectors): for every counted,
word-start stem class, the --neighbours classes of that kind with the highest cosine at or above
--threshold, among those no rarer than --max-idf (a rare word's row is barely trained). Documents are untouched (stores keep their index); only query vectors change.

Measured on the dev set (issue 54; relative documents with the corpus's idf, queries tf): alone
0.7153 → 0.7178 (paired standard error 0.0009), fused with the dense ranking by RRF 0.7119 →
0.7129 (± 0.0007); α 0.2-0.5, 5-10 neighbours and thresholds 0.3-0.45 all land within 0.001 of
that. GloVe's vectors as the neighbours' source helped the plain-English task and hurt the two
others (RRF 0.7107-0.7124); co-occurrence of heading and passage words in the training pairs gave
dataset artefacts, not neighbours.

    python3 -m model.sparse.query_neighbours --model FOLDER [--weight 0.3] [--neighbours 5] [--threshold 0.4] [--max-idf 9] [--id NEW_ID] [--strip]

lexembed.json "sparse".expansion carries the rule, α and the table (sources ascending, then each
source's neighbours by similarity: base64 little-endian int32 sources and targets, float32
similarities), so every runtime applies it from lexembed.json alone (src/embedder/sparse.ts).
"""
import argparse
import base64
import os
import sys

import numpy as np

from model.rules.sparse_weights import read_sparse_canonical, read_sparse_table
from model.sparse.word_pairs import continuation_flags, parse_sparse_step, positive_number, write_sparse_entry

RULE = "query-neighbours-v1"
# the static part's int8 table and row scale: in a hybrid's graph, and in a static folder's
STATIC_TABLES = (("static.weight_int8", "static.weight_row_scale"), ("table_int8", "row_scale"))


def static_rows(folder):
    """The folder's static word vectors (int8 × row scale), one row per piece."""
    import onnx
    from onnx import numpy_helper
    init = {t.name: t for t in onnx.load(os.path.join(folder, "onnx", "model.onnx")).graph.initializer}
    for table, scale in STATIC_TABLES:
        if table in init and scale in init:
            return numpy_helper.to_array(init[table]).astype(np.float32) * numpy_helper.to_array(init[scale]).astype(np.float32)
    raise SystemExit(f"{folder}/onnx/model.onnx has no static table ({' or '.join(t for t, _ in STATIC_TABLES)}): "
                     "query neighbours come from a hybrid's or a static model's word vectors")


def neighbour_table(rows, idf, canonical, continuation, neighbours, threshold, max_idf, chunk=2048):
    """(sources, targets, similarities): for each counted (idf > 0), word-start stem class, its
    `neighbours` most similar such classes with idf ≤ max_idf (cosine of their rows, ≥ threshold,
    itself left out), sources ascending and each source's targets by similarity, highest first."""
    classes = np.arange(len(idf)) if canonical is None else canonical
    eligible = np.flatnonzero((idf > 0) & (classes == np.arange(len(idf))) & ~continuation)
    candidates = eligible[idf[eligible] <= max_idf]
    unit = lambda ids: rows[ids] / np.maximum(np.linalg.norm(rows[ids], axis=1, keepdims=True), 1e-12)  # noqa: E731
    to = unit(candidates)
    sources, targets, similarities = [], [], []
    for start in range(0, len(eligible), chunk):
        block = eligible[start:start + chunk]
        sims = unit(block) @ to.T
        sims[block[:, None] == candidates[None, :]] = -np.inf  # not itself
        top = np.argpartition(-sims, neighbours, axis=1)[:, :neighbours]
        for r, cols in enumerate(top):
            cols = cols[np.argsort(-sims[r, cols], kind="stable")]
            cols = cols[sims[r, cols] >= threshold]
            sources.extend([block[r]] * len(cols)); targets.extend(candidates[cols]); similarities.extend(sims[r, cols])
    return np.asarray(sources, np.int32), np.asarray(targets, np.int32), np.asarray(similarities, np.float32)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a hybrid or static folder whose lexembed.json has a \"sparse\" entry (model/graph/lexical.py)")
    p.add_argument("--weight", type=positive_number, default=0.3, help="α, a neighbour's share of its proposer's weight per unit of similarity (default 0.3, chosen on the dev set)")
    p.add_argument("--neighbours", type=int, default=5, help="neighbours listed per word (default 5)")
    p.add_argument("--threshold", type=float, default=0.4, help="the least cosine a listed neighbour has (default 0.4)")
    p.add_argument("--max-idf", type=float, default=9.0,
                   help="the rarest a neighbour may be, as training idf (default 9: a word in at least ~1 in 8,000 training texts, "
                        "whose row was trained; rarer rows give odd neighbours such as 'pinnacle' for 'salary')")
    args, opened = parse_sparse_step(p, "expansion", "query neighbours", "a new lexembed.json id for the folder (its sparse query vectors change; documents do not)")
    if opened is None:
        return
    path, settings = opened
    if args.neighbours < 1:
        raise SystemExit(f"--neighbours must be at least 1, got {args.neighbours}")
    if not -1 <= args.threshold <= 1:
        raise SystemExit(f"--threshold is a cosine, from -1 to 1, got {args.threshold}")
    idf = read_sparse_table(settings)[0]
    sources, targets, similarities = neighbour_table(static_rows(args.model), idf, read_sparse_canonical(settings),
                                                     continuation_flags(os.path.join(args.model, "tokenizer.json"), len(idf)),
                                                     args.neighbours, args.threshold, args.max_idf)
    if not len(sources):
        # an untrained table (the pipeline's --smoke run) puts no two words that close: say so, write none
        write_sparse_entry(args.model, settings, "expansion", None, args.id)
        return print(f"{path}: no two words' rows reach cosine {args.threshold} (a barely trained static table?): no query neighbours written",
                     file=sys.stderr)
    encode = lambda a: base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode("ascii")  # noqa: E731
    write_sparse_entry(args.model, settings, "expansion", {
        "rule": RULE, "weight": args.weight, "neighbours": args.neighbours, "threshold": args.threshold, "max_idf": args.max_idf,
        "sources": encode(sources), "targets": encode(targets), "similarities": encode(similarities)}, args.id)
    print(f"{path}: {len(sources):,} query neighbours for {len(np.unique(sources)):,} words at weight {args.weight} "
          f"(up to {args.neighbours} each, cosine ≥ {args.threshold}, idf ≤ {args.max_idf})")

if __name__ == "__main__":
    main()
