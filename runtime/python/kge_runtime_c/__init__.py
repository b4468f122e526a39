"""Where the runtime wheel put the runtime's C API: its shared library
(libkge_runtime_c.so.1, kge-c/Runtime.h; no MLIR) and kge-bundle-run.

    import ctypes, kge_runtime_c
    lib = ctypes.CDLL(kge_runtime_c.library())
    assert lib.kgertCheckApiVersion(1) == 0
"""

import pathlib

_HERE = pathlib.Path(__file__).resolve().parent


def library():
    """The path of libkge_runtime_c.so.1."""
    return str(_HERE / "lib" / "libkge_runtime_c.so.1")


def include_dir():
    """The directory holding kge-c/Runtime.h."""
    return str(_HERE / "include")


def bundle_run():
    """The path of the kge-bundle-run tool."""
    return str(_HERE / "bin" / "kge-bundle-run")
