#!/usr/bin/env bash
# The CPU test suite under AddressSanitizer + UndefinedBehaviorSanitizer:
# configures build-asan/ with -DKGE_ENABLE_SANITIZERS=ON (after
# scripts/setup.sh has installed what the build needs), builds it, and runs
# lit, the unit tests and pytest against it. The Python extensions are
# instrumented, so pytest runs with the ASan runtime preloaded. Ends with
# "N passed, M failed". Not part of CI (a second full build); see
# docs/Guarantees.md.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_ASAN_BUILD_DIR:-$ROOT/build-asan}"
RESULTS="$BUILD_DIR/test-results"
LLVM_DIR=/usr/lib/llvm-22

"$ROOT/scripts/setup.sh" || { echo "0 passed, 1 failed (setup)"; exit 1; }
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$LLVM_DIR/lib/cmake/mlir" -DLLVM_EXTERNAL_LIT="$LLVM_DIR/bin/lit" \
    -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DKGE_ENABLE_SANITIZERS=ON || { echo "0 passed, 1 failed (configure)"; exit 1; }
fi
cmake --build "$BUILD_DIR" --target all kge-doc || { echo "0 passed, 1 failed (build)"; exit 1; }

export ASAN_OPTIONS="allow_user_poisoning=0:detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
status=0
echo "==> lit (sanitized tools)"
"$LLVM_DIR/bin/lit" -sv --xunit-xml-output "$RESULTS/lit.xml" "$BUILD_DIR/test" || status=1
echo "==> unit tests"
"$BUILD_DIR/test/unittests/kge-unittests" --gtest_output="xml:$RESULTS/unittests.xml" || status=1
echo "==> Python tests (ASan runtime preloaded)"
LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
  KGE_BUILD_DIR="$BUILD_DIR" "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider \
  --junitxml="$RESULTS/pytest.xml" "$ROOT/test/python" || status=1
"$ROOT/.venv/bin/python" "$ROOT/scripts/summarize-tests.py" "$RESULTS"/*.xml || status=1
exit $status
