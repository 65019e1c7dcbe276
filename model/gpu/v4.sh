#!/usr/bin/env bash
# One call on a GPU machine for issue 54 (v4): continue the shipped transformer at GPU scale
# (batches of 512 pairs + one mined negative each, question-shaped queries) in four runs at once on
# one GPU, three of them trained partly or wholly on the *hybrid's* score (model/train/hybrid_parts.py:
# the transformer beside the served static and lexical parts, passages in the folder's document
# form, so it learns what they miss); each
# run writes --snapshots fp16 checkpoints; then every snapshot (and the start) is scored on the
# dev probe (model/gpu/dev_probe.py: transformer alone and inside the served hybrid) and the best two
# by the hybrid's mean come back in 15 MB pieces. Choose and ship on the CPU afterwards
# (python3 -m model.export.onnx_weights --write, python3 -m model.evaluate.dev --mix).
#
#   here:  python3 -m model.gpu.carry --data ../shared/data/legal-pairs --model models/legal-2-embedder \
#              --negatives model/work/negatives.npz --out .gpu
#   there: CARRY=.gpu bash model/gpu/v4.sh      (results to $OUT, else model/work/gpu-v4)
#
# The device tool sends the checkout's tracked files, 130 MB with models/ (over its 64 MiB), so the
# call was made from a throwaway branch that tracks model/ alone (.gpu, ignored, travels as carry):
#   git checkout -b gpu-travel && git rm -r -q --cached . && git add model && git commit -qm travel
#   printf '/*\n!/model/\n' >> "$(git rev-parse --git-path info/exclude)"
# and afterwards: git checkout -f main, those two exclude lines removed, git branch -D gpu-travel.
#
# LIMIT is the call's own limit in seconds (the probe stops in time to return what it scored);
# CT_SECONDS sets each run's contrastive time (the four share the GPU); RUNS picks runs; a CPU smoke
# test: CT_SECONDS=20 CT_BATCH=8 RUNS="plain hyb" PROBE_ARGS="--tasks pdpa-singapore" PYTHON=<torch python>.
set -uo pipefail
CARRY=$(realpath "${CARRY:-.gpu}")
RESULTS=$(mkdir -p "${OUT:-model/work/gpu-v4}" && realpath "${OUT:-model/work/gpu-v4}")
CT_SECONDS=${CT_SECONDS:-300}
LIMIT=${LIMIT:-540}
RUNS=${RUNS:-plain hyb hybonly hybq}
WORK=${WORK:-/tmp/lexembed-v4}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-3}
cd "$(dirname "$0")/../.."  # the checkout: the steps run as python3 -m model.<stage>.<step>
rm -rf "${WORK:?}" && mkdir -p "$WORK"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  $PY -c "import torch, tokenizers; print('torch', torch.__version__, 'tokenizers', tokenizers.__version__)"; } | tee "$RESULTS/gpu.txt"
$PY -m model.gpu.carry --unpack "$CARRY" --to "$WORK/carry" || exit 1

common=(--data "$WORK/carry/data" --tokenizer "$CARRY/tokenizer.json" --negatives "$CARRY/negatives.npz"
        --init "$WORK/carry/init.pt" --mlm-steps 0 --ct-steps 0 --ct-seconds "$CT_SECONDS" --checkpoint-every 0
        --ct-batch "${CT_BATCH:-512}" --ct-lr 1e-4 --query-tokens 64 --no-eval --snapshots 4)
hybrid=(--hybrid-parts "$CARRY/parts.npz")
train() {
  local name=$1; shift
  timeout $((CT_SECONDS + 120)) $PY -m model.train.transformer "${common[@]}" --out "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1
  echo "$name exited $?" | tee -a "$RESULTS/gpu.txt"
}
for run in $RUNS; do
  case $run in
    plain) train plain --question-templates 0.25 --question-crops 0.25 & ;;
    hyb) train hyb --question-templates 0.25 --question-crops 0.25 "${hybrid[@]}" --hybrid-loss 0.5 & ;;
    hybonly) train hybonly --question-templates 0.25 --question-crops 0.25 "${hybrid[@]}" --hybrid-loss 1 & ;;
    hybq) train hybq --question-templates 0.5 --question-crops 0.5 "${hybrid[@]}" --hybrid-loss 0.5 & ;;
    plainlr) train plainlr --question-templates 0.25 --question-crops 0.25 --ct-lr 2e-4 & ;;
    plainq) train plainq --question-templates 0.5 --question-crops 0.5 & ;;
    hyb25) train hyb25 --question-templates 0.5 --question-crops 0.5 "${hybrid[@]}" --hybrid-loss 0.25 & ;;
    hyb75q) train hyb75q --question-templates 0.5 --question-crops 0.5 "${hybrid[@]}" --hybrid-loss 0.75 & ;;
    hybqq) train hybqq --question-templates 0.75 --question-crops 0.75 "${hybrid[@]}" --hybrid-loss 0.5 & ;;
    hybqlr) train hybqlr --question-templates 0.5 --question-crops 0.5 "${hybrid[@]}" --hybrid-loss 0.5 --ct-lr 5e-5 & ;;
    *) echo "unknown run $run" >&2 ;;
  esac
done
wait
nvidia-smi --query-gpu=memory.used --format=csv,noheader >> "$RESULTS/gpu.txt"
# one file for the runs' logs: the machine returns at most 8 files
for run in $RUNS; do echo "=== $run"; cat "$WORK/$run.log"; done > "$RESULTS/train.log"
grep -hE "steps in|exited|Error|error" "$RESULTS/train.log" "$RESULTS/gpu.txt"

# the last snapshots first and the start last (its figures are known), so a probe stopped at the
# call's limit (LIMIT seconds from the start of this script) keeps the likeliest winners
timeout $((LIMIT - SECONDS - 15)) $PY -m model.gpu.dev_probe score ${PROBE_ARGS:-} --dev "$CARRY/dev.npz" --parts "$CARRY/parts.npz" --json "$RESULTS/dev.json" \
  "$WORK"/*/snapshot-4.pt "$WORK"/*/snapshot-3.pt "$WORK"/*/snapshot-2.pt "$WORK"/*/snapshot-1.pt "$WORK/carry/init.pt"
$PY - "$RESULTS/dev.json" "$WORK" <<'EOF'
import json, os, shutil, subprocess, sys
results, work = json.load(open(sys.argv[1])), sys.argv[2]
ranked = sorted((r["mean"]["hybrid"], p) for p, r in results.items() if "snapshot" in p)[::-1]
for n, (score, path) in enumerate(ranked[:2], 1):
    name = f"best{n}-" + "-".join(path.split("/")[-2:])
    print(f"best {n}: {path} hybrid {score:.4f} -> {name}")
    subprocess.run(f"split -b 15m {path} {os.path.dirname(sys.argv[1])}/{name}.part-", shell=True, check=True)
EOF
ls -la "$RESULTS"
