"""Writes a parity fixture for the static model: for fixed texts, the token ids of the Python
training tokenizer and the first 8 components of the vector the recipe computes (the int8 table
as served). The bundled (hybrid) model's fixture, tests/fixtures/legal-model-parity.json, is
written by model/export/hybrid.py --parity instead.

    /usr/bin/python3 -m model.export.parity_fixture --model models/legal-2-embedder-static \
        --out static-parity.json   # a copy of an existing fixture: its texts are kept
"""
import argparse
import json

from model.common.folder import need
from model.evaluate.served import embed, load_static_model
from model.common.legal_data import encode_capped


def write_fixture(path, fixture):
    """The fixture's layout, shared by every script that writes one (diffs stay small)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(fixture, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    need("model.export.parity_fixture", args.model, "folder")
    with open(args.out, encoding="utf-8") as f:
        fixture = json.load(f)
    table, tok, max_tokens = load_static_model(args.model)
    texts = [c["text"] for c in fixture["cases"]]
    vectors = embed(table, tok, texts, max_tokens)
    fixture["cases"] = [
        {"text": t, "ids": encode_capped(tok, t, max_tokens), "vector_head": [round(float(x), 6) for x in v[:8]]}
        for t, v in zip(texts, vectors)
    ]
    write_fixture(args.out, fixture)
    print(f"wrote {args.out}: {len(texts)} cases")


if __name__ == "__main__":
    main()
