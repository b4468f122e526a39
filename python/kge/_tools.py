"""The command-line tools shipped in the wheel (kge/_bin): `kge-opt`,
`kge-translate` and `kge-cpu-runner` on PATH as console scripts that run
the binaries. They link Debian's LLVM/MLIR 22 (libmlir-22), which a machine
running them needs, as the compiler extension does."""

import os
import pathlib
import sys

BIN = pathlib.Path(__file__).resolve().parent / "_bin"


def _run(name):
    path = BIN / name
    if not path.exists():
        sys.exit(f"{name}: not in this installation of kge ({BIN}); in a build tree the "
                 f"tools are in build/bin")
    os.execv(str(path), [name, *sys.argv[1:]])


def kge_opt():
    _run("kge-opt")


def kge_translate():
    _run("kge-translate")


def kge_cpu_runner():
    _run("kge-cpu-runner")
