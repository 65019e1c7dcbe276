"""The hybrid's parity fixture (tests/fixtures/legal-model-parity.json) from the Python recipe: ids,
the first 16 and last 8 components of the served vector (the dense parts as the graph computes them,
the lexical part from model/rules/bm25.py, times the Matryoshka rotation), the document form's
(model/rules/document_form.py) and the sparse vectors (model/rules/sparse_weights.py). The
TypeScript side's tests check the served model against it, so the rules above are the one place
both sides follow. Written by model.graph.matryoshka --parity (and --parity-only)."""
import json
import os

import numpy as np

from model.common.legal_data import encode_capped
from model.common.tokenizer_files import load_tokenizer
from model.evaluate.served import graph_parts
from model.export.parity_fixture import write_fixture
from model.rules.bm25 import Shares, counted_length, lexical_part
from model.rules.document_form import served_form
from model.rules.sparse_weights import read_sparse_bigrams, read_sparse_canonical, read_sparse_expansion, read_sparse_table, read_sparse_weight, sparse_vector
from model.rules.tables import read_bm25, read_canonical, read_tables


def recipe_vectors(folder, settings, record, ids, m):
    """The served vectors from the recipe: the graph's dense parts, the lexical part from numpy at
    the share its text's length gives (add_lexical.Shares), the two concatenated and turned by M.
    With a document form (model/graph/document_form.py): (query form, document form), else (vectors, None)."""
    bucket, weight, avg_len, _ = read_tables(folder)
    k1, b = read_bm25(folder)
    canonical = read_canonical(folder)
    buckets = record["lexical"]["buckets"]
    dense = graph_parts(folder, ids)[:, :-buckets]
    shares = Shares.of(record).at([counted_length(i, weight) for i in ids])
    lexical = lexical_part(ids, bucket, weight, avg_len, k1, b, canonical) * np.sqrt(shares[:, 2:3])
    if not record.get("document_form"):
        return np.concatenate([dense, lexical], axis=1) @ m, None
    return tuple(served_form(record, ids, bucket, weight, avg_len, k1, b, dense, lexical, m, d, canonical) for d in (False, True))


def write_parity(path, folder, settings, m):
    """The fixture's vectors from the recipe (recipe_vectors) and its sparse vectors."""
    with open(path, encoding="utf-8") as f:
        fixture = json.load(f)
    tok = load_tokenizer(folder)
    max_tokens = settings["max_input_tokens"]
    texts = [c["text"] for c in fixture["cases"]]
    ids = [encode_capped(tok, t, max_tokens) for t in texts]
    with open(os.path.join(folder, "training.json")) as f:
        record = json.load(f)
    record = record.get("hybrid", record)
    buckets = record["lexical"]["buckets"]
    vectors, documents = recipe_vectors(folder, settings, record, ids, m)
    idf, sparse_avg_len = read_sparse_table(settings)
    classes = read_sparse_canonical(settings)
    term_weight, bigrams, expansion = read_sparse_weight(settings), read_sparse_bigrams(settings), read_sparse_expansion(settings)
    ends = lambda v, name: {f"{name}_head": [round(float(x), 6) for x in v[:16]], f"{name}_tail": [round(float(x), 6) for x in v[-8:]]}

    def sparse_of(i, weighting="tf", query=False):
        pieces, values = sparse_vector(i, idf, sparse_avg_len, weighting=weighting, weight=term_weight, canonical=classes, bigrams=bigrams,
                                       expansion=expansion if query else None)
        return {"indices": pieces.tolist(), "values": [round(float(x), 6) for x in values]}
    fixture["cases"] = [{"text": t, "ids": i, **ends(v, "vector"), **(ends(documents[k], "document") if documents is not None else {}),
                         "sparse": sparse_of(i), "sparse_relative": sparse_of(i, "relative")["values"], "sparse_idf": sparse_of(i, "idf")["values"],
                         **({"sparse_query": sparse_of(i, query=True)} if expansion is not None else {})}
                        for k, (t, i, v) in enumerate(zip(texts, ids, vectors))]
    fixture["layout"] = {"transformer": record.get("transformer_dims", 0), "static": m.shape[0] - buckets - record.get("transformer_dims", 0),
                         "lexical": buckets, "matryoshka": settings["dimensions"]["matryoshka"]}
    # The fixture names the scripts by the paths it was first written with (before issue 68 moved
    # them): rewriting it from the same folder stays byte-identical.
    fixture["about"] = ("Token ids, the first 16 and the last 8 components of the served vector for "
                        "models/legal-2-embedder, from the Python recipe (the dense parts as the graph computes them, "
                        "model/add_lexical.py's numpy lexical part, model/matryoshka.py's rotation)"
                        + (", the same of the document form (document_head/document_tail: `task: retrieval/document` at full width, "
                           "model/document_form.py's rule in numpy)" if documents is not None else "")
                        + ", and the sparse vector of model/add_lexical.py's sparse_vector (indices and weighting tf's values; "
                          "sparse_relative and sparse_idf: the other weightings' values at the same indices; sparse_query: tf for "
                          "`task: retrieval/query`, with the query neighbours); the served model must agree.")
    write_fixture(path, fixture)
    print(f"wrote {path}: {len(texts)} cases")
