#!/usr/bin/env bash
# KGE's main job: compiles every bundled example through KGE's pipelines and
# shows what comes out. For each score function in examples/bvec:
#   - the canonicalized bvec IR,
#   - the loops of the CPU path (convert-bvec-to-scf) and its LLVM dialect,
#   - a run on the CPU path (MLIR ExecutionEngine) with random inputs,
#     checked against a NumPy reference.
# Then for each matmul-like query in examples/tile (GAMUT's syntax): its tile
# IR, the loops of its CPU path and a CPU run checked against NumPy. Then for
# each layer in examples/graph: its tile tasks, its GPU bundle and a CPU run
# on an aifb-shaped graph checked against NumPy.
# Everything is written below build/examples/<name>/ (tile/<name>/).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_BUILD_DIR:-$ROOT/build}"
BIN="$BUILD_DIR/bin"
OUT="$BUILD_DIR/examples"

for tool in kge-opt kge-translate kge-cpu-runner; do
  [ -x "$BIN/$tool" ] || { echo "error: $BIN/$tool is missing; run scripts/setup.sh" >&2; exit 1; }
done

exec "$ROOT/.venv/bin/python" "$ROOT/examples/run_examples.py" --bin "$BIN" --out "$OUT" "$@"
