#!/usr/bin/env bash
# Fuzzes kge-opt's parsers, verifiers and pass pipelines and the bundle
# translation with kge-fuzz (mutations of the lit corpus and the examples),
# then replays every regression input. Budget: FUZZ_SECONDS (default 600)
# or FUZZ_MIN_RUNS pipeline runs per pipeline (default 10000), whichever
# comes last within FUZZ_SECONDS * 3. Crashing or hanging inputs land in
# FUZZ_CRASH_DIR (default build/fuzz-crashes); fix them and keep them in
# test/fuzz/regressions. KGE_BUILD_DIR picks the build (e.g. build-asan for
# AddressSanitizer and UBSan reports). FUZZ_TIMEOUT_MS (default 120000, as
# the lit smoke test: GAMUT query 7's top-k at tf32x3 takes about 20 s
# through every stage) is the per-input limit past which an input hangs.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_BUILD_DIR:-$ROOT/build}"
CRASHES="${FUZZ_CRASH_DIR:-$BUILD_DIR/fuzz-crashes}"
SECONDS_BUDGET="${FUZZ_SECONDS:-600}"
MIN_RUNS="${FUZZ_MIN_RUNS:-10000}"
mkdir -p "$CRASHES"
# Sanitizer reports abort (so the crash handler saves the input).
# allow_user_poisoning=0: see test/lit.cfg.py (uninstrumented libMLIR).
export ASAN_OPTIONS="${ASAN_OPTIONS:-allow_user_poisoning=0:abort_on_error=1:detect_leaks=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"

status=0
"$BUILD_DIR/bin/kge-fuzz" --corpus "$ROOT/test" --corpus "$ROOT/examples/bvec" \
  --corpus "$ROOT/examples/tile" --corpus "$ROOT/examples/graph" \
  --corpus "$ROOT/examples/kron" \
  --seed "${FUZZ_SEED:-$RANDOM}" --min-pipeline-runs "$MIN_RUNS" \
  --timeout-ms "${FUZZ_TIMEOUT_MS:-120000}" \
  --seconds "$((SECONDS_BUDGET * 3))" --crash-dir "$CRASHES" || status=1
"$BUILD_DIR/bin/kge-fuzz" "$ROOT"/test/fuzz/regressions/*.mlir --crash-dir "$CRASHES" \
  | tail -1 || status=1
ls "$CRASHES"/*.mlir 2>/dev/null && status=1
exit $status
