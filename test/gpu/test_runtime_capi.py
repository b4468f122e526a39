"""The runtime's C API (libkge_runtime_c.so, kge-c/Runtime.h) on the GPU,
called through ctypes as any C consumer would: load a bundle, size the
result, launch on CUDA memory, compare with PyTorch; bad arrays are
statuses with messages."""

import ctypes
import os
import pathlib

import pytest

torch = pytest.importorskip("torch")

from conftest import BUNDLES  # noqa: E402

LIBRARY = pathlib.Path(os.environ.get("KGE_RUNTIME_C", "/tmp/kge-runtime/libkge_runtime_c.so"))
F32, I64 = 2, 5


class Array(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("device", ctypes.c_int32)]


class CallOptions(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_uint64), ("checked", ctypes.c_int32),
                ("batchSize", ctypes.c_int64)]


@pytest.fixture(scope="module")
def lib():
    if not LIBRARY.exists():
        pytest.fail(f"{LIBRARY} is not built (build runtime/)")
    lib = ctypes.CDLL(str(LIBRARY))
    lib.kgertGetLastError.restype = ctypes.c_char_p
    lib.kgertProgramLoad.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_void_p)]
    lib.kgertProgramCall.argtypes = [ctypes.c_void_p, ctypes.POINTER(Array), ctypes.c_size_t,
                                     ctypes.POINTER(Array), ctypes.c_size_t,
                                     ctypes.POINTER(CallOptions)]
    lib.kgertProgramDestroy.argtypes = [ctypes.c_void_p]
    assert lib.kgertCheckApiVersion(1) == 0
    return lib


def describe(tensor, dtype, keep):
    shape = (ctypes.c_int64 * tensor.dim())(*tensor.shape)
    keep.append(shape)
    return Array(tensor.data_ptr(), dtype, tensor.dim(), shape, None, tensor.device.index)


def test_a_bundle_runs_through_the_c_api(lib):
    text = (BUNDLES / "distmult.pos.dyn.kgebundle").read_bytes()
    program = ctypes.c_void_p()
    assert lib.kgertProgramLoad(text, len(text), 0, ctypes.byref(program)) == 0, \
        lib.kgertGetLastError()
    assert lib.kgertGetDeviceCount() >= 1
    g = torch.Generator(device="cuda").manual_seed(0)
    E = torch.randn(5000, 64, device="cuda", generator=g)
    R = torch.randn(40, 64, device="cuda", generator=g)
    h = torch.randint(0, 5000, (10007,), device="cuda", generator=g)
    r = torch.randint(0, 40, (10007,), device="cuda", generator=g)
    t = torch.randint(0, 5000, (10007,), device="cuda", generator=g)
    score = torch.empty(10007, device="cuda")
    keep = []
    args = (Array * 5)(describe(E, F32, keep), describe(R, F32, keep), describe(h, I64, keep),
                       describe(r, I64, keep), describe(t, I64, keep))
    results = (Array * 1)(describe(score, F32, keep))
    options = CallOptions(torch.cuda.current_stream().cuda_stream, 1, -1)
    status = lib.kgertProgramCall(program, args, 5, results, 1, ctypes.byref(options))
    assert status == 0, lib.kgertGetLastError()
    torch.cuda.synchronize()
    torch.testing.assert_close(score, (E[h] * R[r] * E[t]).sum(-1), rtol=1e-4, atol=1e-4)

    # Checked mode names an index outside its table.
    t[17] = 5000
    status = lib.kgertProgramCall(program, args, 5, results, 1, ctypes.byref(options))
    assert status == 3 and b"'t'" in lib.kgertGetLastError()
    # A result of the wrong size.
    small = torch.empty(10, device="cuda")
    results = (Array * 1)(describe(small, F32, keep))
    status = lib.kgertProgramCall(program, args, 5, results, 1, None)
    assert status == 2 and b"score" in lib.kgertGetLastError()
    lib.kgertProgramDestroy(program)
