#!/usr/bin/env bash
# Builds KGE (through scripts/setup.sh) and runs its whole CPU test suite:
#   lit + FileCheck   test/ (dialects, conversions, targets, tools, examples)
#   unit tests        test/unittests (GoogleTest)
#   Python tests      test/python (pytest: CPU path against NumPy, runtime)
#   PyTorch tests     test/torch (pytest under Debian's Python and CPU
#                     PyTorch: the training engine in plain PyTorch)
# and ends with one line: "N passed, M failed". GPU tests (test/gpu) run on a
# GPU machine through scripts/gpu-test.sh, never here.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_BUILD_DIR:-$ROOT/build}"
RESULTS="$BUILD_DIR/test-results"

"$ROOT/scripts/setup.sh" || { echo "0 passed, 1 failed (setup or build failed)"; exit 1; }

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
status=0

echo; echo "==> lit"
/usr/lib/llvm-22/bin/lit -sv --xunit-xml-output "$RESULTS/lit.xml" "$BUILD_DIR/test" || status=1

echo; echo "==> unit tests"
"$BUILD_DIR/test/unittests/kge-unittests" --gtest_output="xml:$RESULTS/unittests.xml" || status=1

echo; echo "==> Python tests"
KGE_BUILD_DIR="$BUILD_DIR" "$ROOT/.venv/bin/python" -m pytest -q -p no:cacheprovider \
  --junitxml="$RESULTS/pytest.xml" "$ROOT/test/python" || status=1

echo; echo "==> PyTorch tests (CPU)"
/usr/bin/python3 -m pytest -q -p no:cacheprovider --junitxml="$RESULTS/torch.xml" \
  "$ROOT/test/torch" || status=1

echo
"$ROOT/.venv/bin/python" "$ROOT/scripts/summarize-tests.py" "$RESULTS"/*.xml || status=1
exit $status
