#!/usr/bin/env bash
# The GPU suite, run on a machine with an NVIDIA GPU, CUDA (nvcc, cmake),
# PyTorch and pytest, without MLIR: it builds runtime/ there, then runs
#   - the device-library tests (test/gpu/device_library_test.cu),
#   - the kernels of every example against PyTorch (test/gpu/test_kernels.py)
#     and the runtime's error handling (test/gpu/test_runtime.py),
#   - scoring against shared negatives (the score functions as tile tasks,
#     test/gpu/test_shared_negatives.py),
#   - compute-sanitizer memcheck and racecheck on every bundle, and on the
#     matrix models with long runs of a shared matrix (tensor cores).
#   - compositions beyond the examples against the CPU path's results
#     (test/gpu/test_compositions.py),
#   - the tile dialect's kernels (GAMUT's queries, every tile shape and
#     input precision, tensor cores, product forms, distinct, gathered rows
#     and segments, the autotuner's variants) against NumPy and PyTorch
#     (test/gpu/test_tile*.py), and under memcheck (plain and checked) and
#     racecheck,
# Bundles are compiled beforehand on a machine with the compiler:
#   .venv/bin/python test/gpu/build_bundles.py --out .carry/bundles
#   PYTHONPATH=build/python_packages .venv/bin/python test/gpu/build_compositions.py \
#     --out .carry/compositions
#   PYTHONPATH=build/python_packages .venv/bin/python test/gpu/build_tile_bundles.py \
#     --out .carry/tile
#   - concurrent load-and-launch from 8 threads (test/gpu/stress_concurrency.py),
#     alone and under compute-sanitizer memcheck.
#   - the kron solver's Gram matrices and node-wise similarities against the
#     NumPy reference (test/gpu/test_kron.py; bundles from
#     `cd test/gpu && PYTHONPATH=../../build/python_packages
#     ../../.venv/bin/python build_kron_bundles.py --out ../../.carry/kron`,
#     KGE_GPU_KRON_BUNDLES). Its octiles are derived on the GPU machine in
#     every node order, the partition-based one through pymetis: install its
#     wheel there (pip download pymetis==2025.2.2 --only-binary :all:
#     --python-version 3.12 here).
#   - the graph dialect's kernels (test/gpu/test_graph*.py,
#     KGE_GPU_GRAPH_BUNDLES).
#   - the gradient functions (bvec-differentiate) against PyTorch autograd
#     and the training engine against the same loop in PyTorch
#     (test/gpu/test_gradients.py, test/gpu/test_training.py; bundles from
#     `PYTHONPATH=build/python_packages .venv/bin/python
#     test/gpu/build_gradient_bundles.py --out .carry/gradients`,
#     KGE_GPU_GRADIENT_BUNDLES).
#   - the runtime's C API through ctypes (test/gpu/test_runtime_capi.py) and
#     torch.compile(backend="kge") on plain PyTorch models
#     (test/gpu/test_torch_backend.py; its kernels compiled ahead with
#     `PYTHONPATH=build/python_packages python3 bench/bench_torch_backend.py
#     --prepare .carry/kge-cache` and `cp build/python_packages/kge/_build_id.py
#     .carry/build_id.py`, KGE_GPU_CACHE).
# Environment: KGE_GPU_BUNDLES (default .carry/bundles), KGE_JSON_INCLUDE_DIR
# (nlohmann/json headers where no package provides them), KGE_GPU_QUICK=1
# (skip the sanitizer and the stress runs), KGE_GPU_STRESS_SECONDS (60),
# PYTEST_K (a pytest -k selection).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLES="${KGE_GPU_BUNDLES:-$ROOT/.carry/bundles}"
BUILD="${KGE_RUNTIME_BUILD:-/tmp/kge-runtime}"
OUT="${OUT:-/tmp/kge-gpu-out}"
mkdir -p "$OUT"
status=0

echo "==> building runtime/ in $BUILD"
cmake -G Ninja -S "$ROOT/runtime" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$(command -v python3)" \
  ${KGE_JSON_INCLUDE_DIR:+-DKGE_JSON_INCLUDE_DIR=$KGE_JSON_INCLUDE_DIR} > "$OUT/cmake.log" 2>&1 \
  && cmake --build "$BUILD" > "$OUT/build.log" 2>&1 \
  || { cat "$OUT/cmake.log" "$OUT/build.log" | tail -40; echo "0 passed, 1 failed (runtime build)"; exit 1; }

echo "==> device library"
nvcc -arch=sm_90 -rdc=true -O2 -I "$ROOT/runtime/device" "$ROOT/test/gpu/device_library_test.cu" \
  "$ROOT/runtime/device/kge_device.cu" -o "$BUILD/device_library_test" && "$BUILD/device_library_test" \
  | tee "$OUT/device_library.log" | tail -3 || status=1

echo "==> kernels and runtime (pytest)"
# The torch.compile backend's kernels come from a bundle cache compiled
# ahead, under the compiler build's id.
if [ -f "$ROOT/.carry/build_id.py" ]; then
  cp "$ROOT/.carry/build_id.py" "$ROOT/python/kge/_build_id.py"
fi
export KGE_CACHE_DIR="${KGE_GPU_CACHE:-$ROOT/.carry/kge-cache}"
export KGE_RUNTIME_C="$BUILD/libkge_runtime_c.so"
PYTHONPATH="$BUILD/python_packages:$ROOT/test/gpu:$ROOT/python:$ROOT/bench:$ROOT/examples/python${PYTHONPATH:+:$PYTHONPATH}" \
  KGE_GPU_BUNDLES="$BUNDLES" \
  python3 -m pytest ${PYTEST_VERBOSE:+-v} -q -p no:cacheprovider --junitxml="$OUT/gpu-pytest.xml" --maxfail=25 \
  ${PYTEST_K:+-k "$PYTEST_K"} \
  "$ROOT/test/gpu" 2>&1 | tee "$OUT/pytest.log" | tail -15 || status=1

if [ "${KGE_GPU_QUICK:-0}" != 1 ]; then
  # memcheck and racecheck on every bundle, memcheck again in checked mode
  # (the index-check kernel runs before the plan).
  for run in "memcheck" "racecheck" "memcheck --checked"; do
    set -- $run
    tool=$1
    name="$tool${2:+-checked}"
    echo "==> compute-sanitizer --tool $tool on every bundle ${2:+(checked mode)}"
    compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
      "$BUILD/kge-bundle-run" "$BUNDLES"/*.D128.kgebundle "$BUNDLES"/*.dyn.kgebundle \
      "${KGE_GPU_COMPOSITIONS:-$ROOT/.carry/compositions}"/*.kgebundle \
      --size B=300 --size K=5 ${2:-} > "$OUT/sanitizer-$name.log" 2>&1
    code=$?
    tail -4 "$OUT/sanitizer-$name.log"
    grep -E "ERROR SUMMARY|unwritten=[1-9]" "$OUT/sanitizer-$name.log" | sort | uniq -c | head -5
    [ $code -eq 0 ] || status=1
  done
  # The matrix products of long runs (tensor cores, runs of more than 2
  # edges sharing a matrix): 3 relations for 300 edges.
  for tool in memcheck racecheck; do
    echo "==> compute-sanitizer --tool $tool on the matrix models with 3 relations"
    compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
      "$BUILD/kge-bundle-run" "$BUNDLES"/transr.*.D128.kgebundle "$BUNDLES"/rescal.*.D128.kgebundle \
      "$BUNDLES"/transr.*.D100.kgebundle "$BUNDLES"/rescal.*.D100.kgebundle \
      --size B=300 --size K=5 --size N_Pm=3 > "$OUT/sanitizer-$tool-runs.log" 2>&1 \
      && compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
      "$BUILD/kge-bundle-run" "${KGE_GPU_COMPOSITIONS:-$ROOT/.carry/compositions}"/matrix_runs.kgebundle \
      --size B=300 --size N_P=3 --size N_Q=3 >> "$OUT/sanitizer-$tool-runs.log" 2>&1
    code=$?
    tail -4 "$OUT/sanitizer-$tool-runs.log"
    [ $code -eq 0 ] || status=1
  done
fi
if [ "${KGE_GPU_QUICK:-0}" != 1 ]; then
  for run in "memcheck" "racecheck" "memcheck --checked"; do
    set -- $run
    echo "==> compute-sanitizer --tool $1 on the tile bundles ${2:+(checked mode)}"
    compute-sanitizer --tool "$1" --error-exitcode 9 --print-limit 20 \
      "$BUILD/kge-bundle-run" "${KGE_GPU_TILE_BUNDLES:-$ROOT/.carry/tile}"/*.kgebundle \
      --size M=130 --size N=67 --size K=45 --size C_d0=7 --size C_d1=5 --size C_rows_d0=100 \
      ${2:-} > "$OUT/sanitizer-$1${2:+-checked}-tile.log" 2>&1
    code=$?
    tail -1 "$OUT/sanitizer-$1${2:+-checked}-tile.log"
    [ $code -eq 0 ] || status=1
  done
  # Gathered rows and segments: tables smaller than the batch (indices
  # repeat); rows of 16-byte multiples (N = 72, K = 48) take tensor cores.
  for tool in memcheck racecheck; do
    for sizes in "M=130 N=67 K=45" "M=130 N=72 K=48"; do
      echo "==> compute-sanitizer --tool $tool on the gather bundles ($sizes)"
      set -- $sizes
      compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
        "$BUILD/kge-bundle-run" "${KGE_GPU_TILE_BUNDLES:-$ROOT/.carry/tile}"/gather/*.kgebundle \
        --size "$1" --size "$2" --size "$3" --size E_d0=40 --size T_d0=30 --size bias_d0=40 \
        --size W_d0=9 --size C_d0=7 --size C_d1=5 > "$OUT/sanitizer-$tool-gather-n${2#N=}.log" 2>&1
      code=$?
      tail -1 "$OUT/sanitizer-$tool-gather-n${2#N=}.log"
      [ $code -eq 0 ] || status=1
    done
  done
  # The tensor-core kernels: rows of 16-byte multiples (N = 72, K = 48:
  # a partial last stage), then rows that take the CUDA-core kernel.
  for tool in memcheck racecheck; do
    for sizes in "M=130 N=72 K=48" "M=1536 N=1536 K=64" "M=53 N=41 K=45" "M=1400 N=3072 K=1096"; do
      echo "==> compute-sanitizer --tool $tool on the tensor-core tile bundles ($sizes)"
      compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
        "$BUILD/kge-bundle-run" "${KGE_GPU_TILE_BUNDLES:-$ROOT/.carry/tile}"/mma/*.kgebundle \
        $(printf -- "--size %s " $sizes) --size C_d0=7 --size C_d1=5 --size C_rows_d0=100 \
        > "$OUT/sanitizer-$tool-tile-mma.log" 2>&1
      code=$?
      tail -1 "$OUT/sanitizer-$tool-tile-mma.log"
      [ $code -eq 0 ] || status=1
    done
    # Product forms (factors computed from fragments; segments): rows of
    # 16-byte multiples, then rows that take the CUDA-core kernel.
    for sizes in "M=130 N=72 K=48" "M=300 N=136 K=520" "M=53 N=41 K=45"; do
      echo "==> compute-sanitizer --tool $tool on the product-form tile bundles ($sizes)"
      compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
        "$BUILD/kge-bundle-run" "${KGE_GPU_TILE_BUNDLES:-$ROOT/.carry/tile}"/products/*.kgebundle \
        $(printf -- "--size %s " $sizes) --size E_d0=50 --size R_d0=7 --size G_d0=50 \
        --size W_d0=7 > "$OUT/sanitizer-$tool-tile-products.log" 2>&1
      code=$?
      tail -1 "$OUT/sanitizer-$tool-tile-products.log"
      [ $code -eq 0 ] || status=1
    done
    # Distinct: capacities that hold the values and one that does not.
    for sizes in "M=130 N=67 K=45 C_values_d0=9000" "M=300 N=200 K=64 C_values_d0=5"; do
      echo "==> compute-sanitizer --tool $tool on the distinct tile bundles ($sizes)"
      compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 \
        "$BUILD/kge-bundle-run" "${KGE_GPU_TILE_BUNDLES:-$ROOT/.carry/tile}"/distinct/*.kgebundle \
        $(printf -- "--size %s " $sizes) > "$OUT/sanitizer-$tool-tile-distinct.log" 2>&1
      code=$?
      tail -1 "$OUT/sanitizer-$tool-tile-distinct.log"
      [ $code -eq 0 ] || status=1
    done
  done
fi
if [ "${KGE_GPU_QUICK:-0}" != 1 ]; then
  seconds="${KGE_GPU_STRESS_SECONDS:-60}"
  echo "==> 8 threads loading and launching bundles for ${seconds} s"
  PYTHONPATH="$BUILD/python_packages" KGE_GPU_BUNDLES="$BUNDLES" \
    python3 "$ROOT/test/gpu/stress_concurrency.py" --threads 8 --seconds "$seconds" \
    2>&1 | tee "$OUT/stress.log" | tail -3
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "==> the same under compute-sanitizer memcheck"
  PYTHONPATH="$BUILD/python_packages" KGE_GPU_BUNDLES="$BUNDLES" \
    compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
    python3 "$ROOT/test/gpu/stress_concurrency.py" --threads 8 --seconds "$seconds" \
    > "$OUT/stress-memcheck.log" 2>&1
  code=$?
  tail -3 "$OUT/stress-memcheck.log"
  [ $code -eq 0 ] || status=1
fi
exit $status
