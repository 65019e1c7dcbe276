"""Gives a folder's sparse vectors (lexembed.json "sparse", POST /v1/embeddings/sparse) word pairs:
each pair of neighbouring counted pieces (stem classes where the folder has them) whose second
piece starts a word ("notice period", "data protection"; not "term" + "##ly") adds

    β · tf_pair (k1 + 1) / (tf_pair + k1 (1 − b + b L / avg_len))   [× √(f_a f_c) for idf and relative]

at index V + ((a · V + c) mod slots), after the V piece indices — the pair's own BM25-saturated
count, so a store that applies the corpus's idf (Qdrant's `modifier: idf`) weighs a rare phrase as
BM25 over bigrams would. f is the weighting's factor per piece (the model's term weight for idf,
that weight ÷ idf for relative), β the pairs' weight beside the pieces. slots is a prime below 2²⁴,
so indices stay below V + 2²⁴ (pgvector's sparsevec takes up to 10⁹ dimensions, Qdrant and Milvus
uint32). Nothing changes in the graph or the dense vectors. Measured on the dev set (issue 54):
relative documents with the corpus's idf 0.705 → 0.715 at β 0.6, fused with the dense ranking by
RRF 0.708 → 0.712.

    python3 -m model.sparse.word_pairs --model FOLDER [--weight 0.6] [--id NEW_ID] [--strip]

The continuation flags travel as a bitmap (base64, bit i of byte i >> 3, least significant first),
so every runtime applies the rule from lexembed.json alone (src/embedder/sparse.ts).
"""
import argparse
import base64
import json
import os

import numpy as np

from model.rules.sparse_weights import read_sparse_table
from model.common.folder import write_settings

RULE = "word-pairs-v1"
SLOTS = 16_777_213  # the largest prime below 2**24


def continuation_flags(tokenizer_path, vocab):
    """A bool per piece: it continues a word (the tokenizer's continuing prefix, "##")."""
    with open(tokenizer_path, encoding="utf-8") as f:
        model = json.load(f)["model"]
    prefix = model.get("continuing_subword_prefix", "##")
    flags = np.zeros(vocab, dtype=bool)
    for piece, i in model["vocab"].items():
        if i < vocab and piece.startswith(prefix):
            flags[i] = True
    return flags


def continuation_bitmap(tokenizer_path, vocab):
    """Base64 of a little-endian bitmap: bit i set where piece i continues a word; and how many do."""
    flags = continuation_flags(tokenizer_path, vocab)
    return base64.b64encode(np.packbits(flags, bitorder="little").tobytes()).decode("ascii"), int(flags.sum())


def positive_number(text):
    """argparse type of --weight: a positive finite number."""
    value = float(text)
    if not (value > 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def read_sparse_settings(folder):
    """(lexembed.json's path, its settings) for a folder whose settings carry a "sparse" entry;
    anything else stops with what is wrong and the fix (word_pairs.py, query_neighbours.py)."""
    path = os.path.join(folder, "lexembed.json")
    if not os.path.isfile(path):
        raise SystemExit(f"{path} does not exist: --model takes a model folder (models/legal-2-embedder or models/legal-2-embedder-static)")
    with open(path, encoding="utf-8") as f:
        settings = json.load(f)
    if "sparse" not in settings:
        raise SystemExit(f"{path} has no \"sparse\" entry; it is made by python3 -m model.graph.lexical (step 4c): add the lexical part first")
    return path, settings


def write_sparse_entry(folder, settings, key, entry, new_id=None):
    """Sets lexembed.json "sparse"[key] to entry (None takes it out) and the id where given, and writes the folder's settings."""
    if entry is None:
        settings["sparse"].pop(key, None)
    else:
        settings["sparse"][key] = entry
    if new_id:
        settings["id"] = new_id
    write_settings(folder, settings)


def parse_sparse_step(p, key, what, id_help):
    """A sparse step's arguments (with --strip and --id added to `p`) and its folder's (lexembed.json
    path, settings), or None for the latter once --strip has taken the entry `key` out again."""
    p.add_argument("--strip", action="store_true", help=f"take the {what} out again")
    p.add_argument("--id", help=id_help)
    args = p.parse_args()
    path, settings = read_sparse_settings(args.model)
    if not args.strip:
        return args, (path, settings)
    write_sparse_entry(args.model, settings, key, None, args.id)
    print(f"{path}: {what} taken out")
    return args, None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a folder whose lexembed.json has a \"sparse\" entry (model/graph/lexical.py)")
    p.add_argument("--weight", type=positive_number, default=0.6, help="β, the pairs' weight beside the pieces (default 0.6, chosen on the dev set)")
    p.add_argument("--slots", type=int, default=SLOTS, help=f"pair slots after the vocabulary (default {SLOTS:,})")
    args, opened = parse_sparse_step(p, "bigrams", "word pairs", "a new lexembed.json id for the folder (its sparse vectors change: stores must re-index them)")
    if opened is None:
        return
    path, settings = opened
    if not 1 <= args.slots <= 2**31:
        raise SystemExit(f"--slots must lie between 1 and 2^31, got {args.slots}")
    vocab = len(read_sparse_table(settings)[0])
    bitmap, continued = continuation_bitmap(os.path.join(args.model, "tokenizer.json"), vocab)
    write_sparse_entry(args.model, settings, "bigrams", {"rule": RULE, "weight": args.weight, "slots": args.slots, "continuations": bitmap}, args.id)
    print(f"{path}: word pairs at weight {args.weight} in {args.slots:,} slots after {vocab:,} pieces ({continued:,} continue a word)")


if __name__ == "__main__":
    main()
