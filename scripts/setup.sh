#!/usr/bin/env bash
# Installs everything KGE needs on Debian 12 and builds it. Safe to run again:
# installed packages, the virtual environment and the build are reused.
#
#   scripts/setup.sh            install, configure, build
#
# Environment: KGE_BUILD_DIR (default build), KGE_BUILD_TYPE (Release),
# KGE_CMAKE_ARGS (extra CMake arguments), KGE_PIP_INSTALL (1: install the
# kge Python package into .venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${KGE_BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${KGE_BUILD_TYPE:-Release}"
LLVM_DIR=/usr/lib/llvm-22

log() { printf '\n==> %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------
PACKAGES=(
  build-essential cmake ninja-build ccache git pkg-config
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  python3 python3-venv python3-dev
  libgtest-dev nlohmann-json3-dev
  wordnet-base rdkit-data
  # PyTorch for the CPU (PyPI's Linux builds need CUDA): the training
  # engine's tests in test/torch run under Debian's Python with it.
  python3-torch python3-pytest
)
missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  log "Installing Debian packages: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  log "Debian packages: all present"
fi

# --- Python environment ----------------------------------------------------
VENV="$ROOT/.venv"
REQUIREMENTS="$ROOT/python/requirements.txt"
if [ ! -x "$VENV/bin/python" ]; then
  log "Creating the Python environment $VENV"
  python3 -m venv "$VENV"
fi
STAMP="$VENV/.requirements.sha256"
if ! sha256sum --status -c "$STAMP" 2>/dev/null; then
  log "Installing Python packages from $REQUIREMENTS"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQUIREMENTS"
  sha256sum "$REQUIREMENTS" > "$STAMP"
else
  log "Python packages: up to date"
fi

# --- Configure and build ---------------------------------------------------
LAUNCHER=()
if command -v ccache >/dev/null; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  log "Configuring $BUILD_DIR"
  # shellcheck disable=SC2086
  cmake -G Ninja -S "$ROOT" -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DMLIR_DIR="$LLVM_DIR/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_DIR/bin/lit" \
    -DPython3_EXECUTABLE="$VENV/bin/python" \
    "${LAUNCHER[@]}" ${KGE_CMAKE_ARGS:-}
fi
log "Building"
cmake --build "$BUILD_DIR" --target all kge-doc

# --- The Python package ----------------------------------------------------
# `pip install .` into the project environment: setup.py builds the
# extensions through CMake, here reusing $BUILD_DIR, so it only copies.
if [ "${KGE_PIP_INSTALL:-1}" = 1 ]; then
  log "Installing the kge Python package into $VENV"
  KGE_BUILD_DIR="$BUILD_DIR" "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    --no-build-isolation --no-deps "$ROOT"
fi
log "KGE is built in $BUILD_DIR"
