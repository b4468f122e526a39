#!/usr/bin/env bash
# Runs the score-function benchmark on the GPU machine (CUDA, PyTorch, no
# MLIR): builds runtime/ there, then bench_score_functions.py for each
# dataset given (fb15k, biokg, wn18), writing $OUT/<dataset>.json and .log.
# Bundles are compiled beforehand where the compiler is:
#   .venv/bin/python test/gpu/build_bundles.py --out .carry/bundles --modes pos --lengths 128 512
# Environment: KGE_GPU_BUNDLES (default .carry/bundles), KGE_JSON_INCLUDE_DIR,
# OUT (default /tmp/kge-bench), BENCH_ARGS (extra arguments).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${KGE_RUNTIME_BUILD:-/tmp/kge-runtime}"
OUT="${OUT:-/tmp/kge-bench}"
mkdir -p "$OUT"
if [ ! -d "$BUILD/python_packages" ]; then
  cmake -G Ninja -S "$ROOT/runtime" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$(command -v python3)" \
    ${KGE_JSON_INCLUDE_DIR:+-DKGE_JSON_INCLUDE_DIR=$KGE_JSON_INCLUDE_DIR} > "$OUT/cmake.log" 2>&1
  cmake --build "$BUILD" > "$OUT/build.log" 2>&1
fi
for dataset in "${@:-fb15k}"; do
  PYTHONPATH="$BUILD/python_packages" python3 "$ROOT/bench/bench_score_functions.py" \
    --bundles "${KGE_GPU_BUNDLES:-$ROOT/.carry/bundles}" --dataset "$dataset" \
    --out "$OUT/$dataset.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/$dataset.log"
done
