#!/usr/bin/env bash
# Runs lexembed's GPU benchmark: the WebGPU path (onnxruntime-node's own WebGPU provider, fp16 where
# the adapter offers shader-f16, batch budget measured at load) beside the CPU path (npm run bench) and PyTorch on
# the same card with the same weights and token sequences (bench/gpu/torch_anchor.py), per model.
# Works from an unpacked kit (bench/gpu/pack.mjs: its own Node, node_modules and Vulkan loader) or
# from a checkout with npm ci done. Needs no network. See bench/gpu/README.md.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench/gpu/run.sh [options]

  --out <dir>            where results go (default: gpu-results): gpu-results.json, gpu-results.md, logs.tar.gz
  --adapter <name>       the WebGPU adapter whose name contains this (default: NVIDIA); the run stops
                         if Dawn offers none (e.g. llvmpipe to run on software Vulkan)
  --models <list>        minilm (the MiniLM-L6-H384-shaped benchmark model, built here) and/or model
                         folders under --models-dir (default: minilm and every model folder there)
  --models-dir <dir>     where the bundled model folders are (default: models/ of the kit or checkout)
  --workloads <list>     short,medium,long (default: all three)
  --duration <s>         seconds per server load run (default: 5)
  --dtype <t>            PyTorch's dtype: fp16, bf16 or fp32 (default: fp16)
  --torch-device <d>     cuda or cpu (default: cuda when PyTorch sees one, else cpu)
  --webgpu-max-batch-tokens <n>   padded tokens per WebGPU batch, or auto (default: measured on the
                         GPU at load, as lexembed serve does; PyTorch then batches 8192)
  --no-fp16              keep WebGPU in fp32 (default: model/runtime/fp16.py writes onnx/model_fp16.onnx
                         for each model, and --dtype auto runs it where the adapter has shader-f16)
  --no-torch             skip the PyTorch anchor
  --help                 this text
EOF
}

OUT=gpu-results ADAPTER=NVIDIA MODELS= MODELS_DIR=
WORKLOADS=short,medium,long DURATION=5 DTYPE=fp16 TORCH_DEVICE= BATCH_TOKENS=auto TORCH=1 FP16=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --adapter) ADAPTER=$2; shift 2 ;;
    --models) MODELS=$2; shift 2 ;;
    --models-dir) MODELS_DIR=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --dtype) DTYPE=$2; shift 2 ;;
    --torch-device) TORCH_DEVICE=$2; shift 2 ;;
    --webgpu-max-batch-tokens) BATCH_TOKENS=$2; shift 2 ;;
    --no-torch) TORCH=0; shift ;;
    --no-fp16) FP16=0; shift ;;
    --help|-h) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

TORCH_BATCH_TOKENS=$BATCH_TOKENS
[ "$BATCH_TOKENS" = auto ] && TORCH_BATCH_TOKENS=8192
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
MODELS_DIR=$(cd "${MODELS_DIR:-$ROOT/models}" 2>/dev/null && pwd || echo "${MODELS_DIR:-$ROOT/models}")
cd "$ROOT"
if [ -z "$MODELS" ]; then
  MODELS=minilm
  for d in "$MODELS_DIR"/*/; do
    name=$(basename "$d")
    if [ -e "$d/onnx/model.onnx" ] && [ "$name" != test-tiny ]; then MODELS="$MODELS,$name"; fi
  done
fi
TOKENIZER=bench/gpu/tokenizer
[ -e "$TOKENIZER/tokenizer.json" ] || TOKENIZER=$MODELS_DIR/legal-2-embedder-static
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lexembed-gpu.XXXXXX")
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$WORK/run.log"; }

# Node: the kit's own, else the one on PATH.
if [ -x "$ROOT/.kit/node/bin/node" ]; then export PATH="$ROOT/.kit/node/bin:$PATH"; fi
command -v node >/dev/null || { echo "run.sh: no node (unpack the kit made by bench/gpu/pack.mjs, or install Node >= 20.19)" >&2; exit 1; }
[ -d "$ROOT/node_modules/webgpu" ] || { echo "run.sh: node_modules/webgpu is missing (run from the unpacked kit, or npm ci in a checkout)" >&2; exit 1; }

# Vulkan: Dawn needs the loader (libvulkan.so.1) and the GPU's driver manifest (ICD).
LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
LIBS=$("$LDCONFIG" -p 2>/dev/null || true)  # read whole: grep -q would close the pipe early (pipefail)
if [[ "$LIBS" != *"libvulkan.so.1 "* ]] && [ -e "$ROOT/.kit/lib/libvulkan.so.1" ]; then
  export LD_LIBRARY_PATH="$ROOT/.kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "Vulkan loader: the kit's (the machine has none)"
fi
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && ! ls /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json >/dev/null 2>&1; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json; do
    if [ -e "$icd" ]; then export VK_DRIVER_FILES=$icd; log "Vulkan driver: $icd"; break; fi
  done
fi

{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores"
  echo "node: $(node -v)"
  echo "kit: $(cat "$ROOT/.kit/manifest.json" 2>/dev/null | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{const m=JSON.parse(s);console.log(`commit ${m.commit}, made ${m.made}`)}catch{console.log("(none: a checkout)")}})')"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
  echo "python3: $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || echo 'no python3 with torch')"
} > "$OUT/environment.txt"
tee -a "$WORK/run.log" < "$OUT/environment.txt"

# The kit runs transpiled JavaScript (bench/**/*.js, dist/); a checkout runs the TypeScript with tsx.
tsx() { local s=${1%.ts}; shift; if [ -f "$s.js" ]; then node "$s.js" "$@"; else node --import tsx "$s.ts" "$@"; fi; }
log "WebGPU adapters (Dawn), asking for \"$ADAPTER\""
if ! tsx bench/gpu/adapters.ts --gpu-adapter "$ADAPTER" > "$OUT/adapters.json" 2>>"$WORK/run.log"; then
  cat "$OUT/adapters.json" >&2
  echo "run.sh: Dawn offers no adapter matching \"$ADAPTER\" (above). Check the Vulkan driver (VK_DRIVER_FILES) or pass --adapter" >&2
  exit 1
fi
cat "$OUT/adapters.json"

if [ "$TORCH" = 1 ] && ! python3 -c 'import torch, transformers, onnx' 2>/dev/null; then
  TORCH=0
  log "no python3 with torch, transformers and onnx: the PyTorch anchor is skipped"
fi

for MODEL in ${MODELS//,/ }; do
  if [ "$MODEL" = minilm ]; then
    DIR=bench-results/minilm-l6-h384
    if [ ! -e "$DIR/onnx/model.onnx" ]; then
      log "building the MiniLM-L6-H384-shaped benchmark model (random weights) in $DIR"
      python3 bench/gpu/make_bench_model.py --tokenizer-from "$TOKENIZER" --out "$DIR" >> "$WORK/run.log" 2>&1 \
        || { echo "run.sh: could not build the benchmark model (needs python3 with numpy and onnx, and $TOKENIZER); see $WORK/run.log" >&2; exit 1; }
    fi
  else
    DIR=$MODELS_DIR/$MODEL
    [ -e "$DIR/onnx/model.onnx" ] || { echo "run.sh: --models: $DIR is not a model folder (unpack the models archive over the kit, or pass --models-dir)" >&2; exit 2; }
  fi
  log "== $MODEL ($DIR)"
  if [ "$FP16" = 1 ] && [ ! -e "$DIR/onnx/model_fp16.onnx" ]; then
    python3 -m model.runtime.fp16 "$DIR" 2>&1 | tee -a "$WORK/run.log" || log "no fp16 graph for $MODEL (model.runtime.fp16 failed; see above): WebGPU runs fp32"
  fi
  # onnxruntime's fused graph (model/runtime/fuse.py; needs onnxruntime's Python package): timed
  # against the exported graph below, both in fp32 on the WebGPU path, in one run.
  if [ ! -e "$DIR/onnx/model_fused.onnx" ]; then
    python3 -m model.runtime.fuse --model "$DIR" 2>&1 | tee -a "$WORK/run.log" || log "no fused graph for $MODEL (model.runtime.fuse failed; see above)"
  fi
  if [ "$TORCH" = 1 ]; then
    # A failing step is logged and the run goes on: on a lent GPU machine, one broken step must not
    # cost the figures of the others (the report leaves out what is missing).
    { tsx bench/gpu/ids.ts --model "$DIR" --out "$WORK/ids-$MODEL.json" --workloads "$WORKLOADS" 2>&1 | tee -a "$WORK/run.log" &&
      python3 bench/gpu/torch_anchor.py --model "$DIR" --ids "$WORK/ids-$MODEL.json" --out "$WORK/anchor-$MODEL.json" \
        --dtype "$DTYPE" --max-batch-tokens "$TORCH_BATCH_TOKENS" ${TORCH_DEVICE:+--device "$TORCH_DEVICE"} 2>&1 | tee -a "$WORK/run.log"
    } || log "the PyTorch anchor failed for $MODEL (see the log above); the benchmark goes on without it"
  fi
  # Pooling on the GPU vs read back and pooled in JS (fp32), and the fp16 graph where there is one: the native provider directly, same texts and run.
  log "pooling on the GPU vs in JavaScript ($MODEL, 256 texts x 128 tokens)"
  tsx bench/native-webgpu.ts --model "$DIR" --texts 256 --tokens 128 --rounds 3 --skip-web 2>&1 | grep -v '^Warning: maxDynamic' | tee "$WORK/pooling-$MODEL.txt" | tee -a "$WORK/run.log" \
    || log "the pooling comparison failed for $MODEL (see the log); the benchmark goes on"
  tsx bench/run.ts --model "$DIR" --devices cpu,webgpu --gpu-adapter "$ADAPTER" --workloads "$WORKLOADS" \
    --duration "$DURATION" --skip-naive --skip-metering --webgpu-max-batch-tokens "$BATCH_TOKENS" --json "$WORK/bench-$MODEL.json" 2>&1 | tee -a "$WORK/run.log" \
    || log "the benchmark failed for $MODEL (see the log above); the next model goes on"
  if [ -e "$DIR/onnx/model_fused.onnx" ]; then
    for GRAPH in plain fused; do
      log "WebGPU fp32, --graph $GRAPH ($MODEL, medium workload): the fused graph against the exported one"
      tsx bench/run.ts --model "$DIR" --devices webgpu --gpu-adapter "$ADAPTER" --workloads medium --duration "$DURATION" \
        --skip-naive --skip-metering --webgpu-max-batch-tokens "$BATCH_TOKENS" --webgpu-graph "$GRAPH" --webgpu-dtype fp32 \
        --json "$WORK/graph-$GRAPH-$MODEL.json" 2>&1 | tee -a "$WORK/run.log" || log "the --graph $GRAPH run failed for $MODEL (see the log)"
    done
  fi
done

# A report that fails still leaves the raw files.
tsx bench/gpu/report.ts --dir "$WORK" --environment "$OUT/environment.txt" --json "$OUT/gpu-results.json" --markdown "$OUT/gpu-results.md" \
  || log "the report failed (see above); the raw files are in $OUT/logs.tar.gz"
tar -C "$WORK" -czf "$OUT/logs.tar.gz" .
log "results: $OUT/gpu-results.json, $OUT/gpu-results.md (logs and raw files: $OUT/logs.tar.gz)"
cat "$OUT/gpu-results.md"
