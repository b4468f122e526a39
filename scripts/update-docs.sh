#!/usr/bin/env bash
# Regenerates the dialect and pass reference in docs/ from the ODS files
# (the build's kge-doc target) and copies it into the source tree.
# test/python/test_docs.py fails when the committed copy is stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_BUILD_DIR:-$ROOT/build}"
cmake --build "$BUILD_DIR" --target kge-doc
for dir in Dialects Passes; do
  mkdir -p "$ROOT/docs/$dir"
  for file in "$BUILD_DIR/docs/$dir"/*.md; do
    # Empty pass lists (a dialect without passes yet) are not documented.
    [ "$(wc -l < "$file")" -gt 1 ] || continue
    cp "$file" "$ROOT/docs/$dir/"
  done
done
echo "docs/ updated"
