#!/usr/bin/env bash
# One-call training run on a CUDA machine (PyTorch, onnx, onnxruntime, tokenizers installed; no
# network): trains the bundled transformer (run "main") and, at the same time on the same GPU, the
# cross-source check (run "no-dc": every DC Code pair left out, scored on DC Code) and an optional
# larger model for comparison ("wide", 6 x 384). Then exports "main" as a lexembed model folder
# and evaluates that folder's served ONNX file. Results go to $RESULTS (default model/work/gpu).
#
#   DATA=path/to/legal-pairs NEGATIVES=model/work/negatives.npz bash model/gpu/train_on_gpu.sh
#
# MLM_SECONDS / CT_SECONDS set each phase's time budget (turned into steps by a timing probe; the
# steps are in training.json); MAIN_ARGS / NODC_ARGS add flags to one run; INIT=checkpoint starts "main" from an earlier checkpoint; RUNS picks the runs (default "main no-dc wide"). With PACK=dir,
# everything is also packed as dir/results.tar.part-* (15 MB pieces, for a machine that returns
# files of limited size).
set -uo pipefail
DATA=$(realpath "${DATA:?set DATA to the legal-pairs folder}")
NEGATIVES=$(realpath "${NEGATIVES:?set NEGATIVES to python3 -m model.data.negatives's output (step 2)}")
RESULTS=$(mkdir -p "${RESULTS:-model/work/gpu}" && realpath "${RESULTS:-model/work/gpu}")
[ -n "${INIT:-}" ] && INIT=$(realpath "$INIT")
[ -n "${PACK:-}" ] && PACK=$(mkdir -p "$PACK" && realpath "$PACK")
cd "$(dirname "$0")/../.."  # the checkout: the steps run as python3 -m model.<stage>.<step>
WORK=${WORK:-/tmp/lexembed-train}
MLM_SECONDS=${MLM_SECONDS:-170}
CT_SECONDS=${CT_SECONDS:-130}
RUNS=${RUNS:-main no-dc wide}
TRAIN_LIMIT=${TRAIN_LIMIT:-480}
INIT=${INIT:-}
PY=${PYTHON:-python3}
mkdir -p "$WORK"
export PYTHONUNBUFFERED=1

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$RESULTS/gpu.txt"
$PY -c "import torch, onnxruntime, tokenizers; print('torch', torch.__version__, 'onnxruntime', onnxruntime.__version__, 'tokenizers', tokenizers.__version__)" | tee -a "$RESULTS/gpu.txt"

train() {
  local name=$1; shift
  rm -rf "${WORK:?}/$name"  # nothing of an earlier call on a warm machine may pass for this one's
  timeout "$TRAIN_LIMIT" $PY -m model.train.transformer --data "$DATA" --tokenizer models/legal-2-embedder-static/tokenizer.json \
    --negatives "$NEGATIVES" --out "$WORK/$name" --mlm-steps 0 --mlm-seconds "$MLM_SECONDS" --ct-steps 0 --ct-seconds "$CT_SECONDS" "$@" ${EXTRA_ARGS:-} \
    > "$RESULTS/$name.log" 2>&1
  echo "$name exited $?" | tee -a "$RESULTS/gpu.txt"
}
init_args=()
[ -n "$INIT" ] && init_args=(--init "$INIT")
for run in $RUNS; do
  case $run in
    main) train main --half-checkpoint "${init_args[@]}" ${MAIN_ARGS:-} & ;;
    no-dc) train no-dc --leave-out dc-code --half-checkpoint ${NODC_ARGS:-} & ;;
    wide) train wide --layers 6 --hidden 384 --heads 6 --intermediate 1536 --matryoshka 32,64,128,256,384 & ;;
    *) echo "unknown run $run" >&2 ;;
  esac
done
wait
nvidia-smi --query-gpu=memory.used --format=csv,noheader >> "$RESULTS/gpu.txt"

# Only this call's runs: a warm machine may still hold an earlier call's $WORK.
rm -rf "${WORK:?}/folder"
if [[ " $RUNS " == *" main "* && -f "$WORK/main/checkpoint.pt" ]]; then
  timeout 100 $PY -m model.export.transformer --checkpoint "$WORK/main/checkpoint.pt" --data "$DATA" --out "$WORK/folder" \
    --parity-texts tests/fixtures/legal-model-parity.json --int8-only > "$RESULTS/export.log" 2>&1
  [ -z "${SKIP_ONNX_EVAL:-}" ] && timeout 120 $PY -m model.evaluate.held_out --data "$DATA" --model "$WORK/folder" --bm25-from "$WORK/main/evaluation.json" \
    --json "$WORK/folder/evaluation-onnx.json" > "$RESULTS/evaluate-onnx.log" 2>&1
  # The fp32 ONNX file is 4x the int8 one and model.export.transformer re-makes it from the checkpoint.
  mkdir -p "$RESULTS/folder" && (cd "$WORK/folder" && tar -cf - --exclude onnx/model.onnx .) | tar -xf - -C "$RESULTS/folder"
fi
for run in $RUNS; do
  for f in training.json evaluation.json checkpoint-fp16.pt; do
    [ -f "$WORK/$run/$f" ] && cp "$WORK/$run/$f" "$RESULTS/$run-$f"
  done
done
ls -la "$RESULTS" "$RESULTS/folder" "$RESULTS/folder/onnx"
for f in "$RESULTS"/*.log; do echo "== $f"; grep -vE " step [0-9]+/" "$f" | tail -25; done
if [ -n "${PACK:-}" ]; then
  mkdir -p "$PACK" && tar -C "$RESULTS" -cf - . | split -b 15m - "$PACK/results.tar.part-"
  ls -la "$PACK"
fi
