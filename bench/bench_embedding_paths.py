"""The overhead of each way of embedding KGE against the direct Python API.

Compile time (`--compile`, on the machine with the compiler; CPU only), for
the DistMult score function (examples/bvec/distmult.mlir), with cubins:
  python-cold      kge ScoreFunction.compile with the bundle cache off
  python-cached    the same compile again, read from the bundle cache
  c-api            examples/downstream's downstream-compile (C API,
                   kgeCompileToBundle), a process per compile
  kge-tools        kge-opt -kge-lower-to-gpu | kge-translate --kge-to-bundle
  mlir-opt-plugin  upstream mlir-opt with KGEPlugin.so | kge-translate
Medians of `--repeats` runs, in milliseconds.

Call time (`--calls`, on the GPU machine): the host time of one launch of a
DistMult bundle (D = 256, B = 1,024 and 65,536), through
  python-runtime   kge_runtime.Program(...) (the Python API)
  c-api            libkge_runtime_c.so through ctypes (kgertProgramCall)
  torch-backend    torch.compile(model, backend="kge") (custom op, with
                   Dynamo's guards and Inductor's wrapper), forward only
  torch-eager      the same model in eager PyTorch (for scale)
  backend-custom-op    the backend's kernel module called directly (the
                   torch.library operator, no Dynamo or Inductor)
  backend-kernel-call  its Python implementation alone (no operator)
as microseconds per call: 200 calls issued back to back, then one
synchronize (so the GPU time of small batches hides behind the host's);
and the GPU time per call (CUDA events) for the large batch.

    python3 bench/bench_embedding_paths.py --compile --downstream /tmp/downstream --out c.json
    python3 bench/bench_embedding_paths.py --calls --bundle B.kgebundle --out g.json
    python3 bench/bench_embedding_paths.py --kernels DIR --out k.json
"""

import argparse
import ctypes
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "examples" / "python"))
EXAMPLE = ROOT / "examples" / "bvec" / "distmult.mlir"


def median_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def compile_times(build_dir, downstream, repeats):
    import kge
    from kge import cache
    from score_functions import FUNCTIONS
    fn = FUNCTIONS["distmult"]
    tools = build_dir / "bin"
    llvm = pathlib.Path("/usr/lib/llvm-22/bin")
    scratch = pathlib.Path(tempfile.mkdtemp())
    os.environ["KGE_CACHE_DIR"] = str(scratch / "cache")
    results = {"python-cold": median_ms(lambda: fn.compile(cache=False), repeats)}
    fn.compile()  # fills the cache
    results["python-cached"] = median_ms(lambda: fn.compile(), repeats * 10)
    results["python-cached-hits"] = cache.stats()["hits"]
    out = scratch / "x.kgebundle"

    def run(command, **kwargs):
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)

    if downstream:
        results["c-api"] = median_ms(
            lambda: run([str(downstream / "downstream-compile"), str(EXAMPLE), str(out)]),
            repeats)
    results["kge-tools"] = median_ms(lambda: run(
        f"{tools}/kge-opt -kge-lower-to-gpu {EXAMPLE} | "
        f"{tools}/kge-translate --kge-to-bundle -o {out}", shell=True), repeats)
    plugin = build_dir / "lib" / "KGEPlugin.so"
    results["mlir-opt-plugin"] = median_ms(lambda: run(
        f"{llvm}/mlir-opt --load-dialect-plugin={plugin} --load-pass-plugin={plugin} "
        f"--pass-pipeline='builtin.module(kge-lower-to-gpu)' {EXAMPLE} | "
        f"{tools}/kge-translate --kge-to-bundle -o {out}", shell=True), repeats)
    shutil.rmtree(scratch)
    return {"milliseconds": results, "repeats": repeats, "kge": kge.__version__}


def host_us(fn, calls=200):
    import torch
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def gpu_us(fn, calls=50):
    import torch
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls * 1e3


def call_times(bundle_path, library):
    import torch
    import kge_runtime
    import kge.torch_backend  # registers backend="kge"
    import bench_torch_backend as configs
    sys.path.insert(0, str(ROOT / "test" / "gpu"))
    from test_runtime_capi import Array, CallOptions, describe

    text = bundle_path.read_text()
    program = kge_runtime.Program(text)
    lib = ctypes.CDLL(str(library))
    lib.kgertGetLastError.restype = ctypes.c_char_p
    lib.kgertProgramCall.argtypes = [ctypes.c_void_p, ctypes.POINTER(Array), ctypes.c_size_t,
                                     ctypes.POINTER(Array), ctypes.c_size_t,
                                     ctypes.POINTER(CallOptions)]
    handle = ctypes.c_void_p()
    data = text.encode()
    assert lib.kgertProgramLoad(data, len(data), 0, ctypes.byref(handle)) == 0
    model = configs.build("distmult").cuda()
    E, R = model.entity.weight.detach(), model.relation.weight.detach()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kge")
    with torch.no_grad():
        compiled(*configs.batch("cuda", 1024)[:3])
    kernel = kge.torch_backend._kernel_module(
        kge.torch_backend.report().replaced[0].function.name)
    results = {}
    for batch in (1024, 65536):
        h, r, t, _ = configs.batch("cuda", batch)
        score = torch.empty(batch, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        keep = []
        args = (Array * 5)(describe(E, 2, keep), describe(R, 2, keep), describe(h, 5, keep),
                           describe(r, 5, keep), describe(t, 5, keep))
        outs = (Array * 1)(describe(score, 2, keep))
        options = CallOptions(stream, 0, -1)

        def python_runtime():
            program(Eemb=E, Remb=R, h=h, r=r, t=t, stream=stream)

        def c_api():
            lib.kgertProgramCall(handle, args, 5, outs, 1, ctypes.byref(options))

        def backend():
            with torch.no_grad():
                compiled(h, r, t)

        def eager():
            with torch.no_grad():
                model(h, r, t)

        def custom_op():
            with torch.no_grad():
                kernel(E, R, h, r, t)

        def kernel_forward():
            kernel.kernel.forward(E, R, h, r, t)

        row = {}
        for name, fn in (("python-runtime", python_runtime), ("c-api", c_api),
                         ("torch-backend", backend), ("torch-eager", eager),
                         ("backend-custom-op", custom_op),
                         ("backend-kernel-call", kernel_forward)):
            row[name + "_host_us"] = host_us(fn)
            if batch == 65536:
                row[name + "_gpu_us"] = gpu_us(fn)
        results[str(batch)] = row
        print(batch, json.dumps(row), flush=True)
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "dim": configs.DIM, "batches": results}


def kernel_times(directory):
    """GPU microseconds per launch of each bundle in `directory` (DistMult
    forward `fwd.*` and gradient `grad.*` variants of D = 256 over FB15k's
    tables) at B = 65,536 and 524,288, skewed draws; and of the dense
    gradient's scatter (three index_add_ of [B, 256] rows)."""
    import torch
    import kge_runtime
    import bench_torch_backend as configs
    E = torch.randn(configs.ENTITIES, configs.DIM, device="cuda") * 0.1
    R = torch.randn(configs.RELATIONS, configs.DIM, device="cuda") * 0.1
    results = {}
    for batch in (65536, 524288):
        h, r, t, _ = configs.batch("cuda", batch)
        seed = torch.randn(batch, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        row = {}
        for path in sorted(directory.glob("*.kgebundle")):
            program = kge_runtime.Program(path.read_text())
            arrays = (E, R, h, r, t) + ((seed,) if path.name.startswith("grad") else ())
            row[path.stem] = gpu_us(lambda: program.run(*arrays, stream=stream))
        rows = torch.randn(batch, configs.DIM, device="cuda")

        def scatter():
            gE, gR = torch.zeros_like(E), torch.zeros_like(R)
            gE.index_add_(0, h, rows)
            gR.index_add_(0, r, rows)
            gE.index_add_(0, t, rows)

        row["dense-scatter"] = gpu_us(scatter)
        results[str(batch)] = row
        print(batch, json.dumps(row), flush=True)
    return {"device": torch.cuda.get_device_name(), "dim": configs.DIM, "microseconds": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--calls", action="store_true")
    parser.add_argument("--kernels", type=pathlib.Path,
                        help="time the bundles in this directory")
    parser.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--downstream", type=pathlib.Path)
    parser.add_argument("--bundle", type=pathlib.Path)
    parser.add_argument("--library", type=pathlib.Path,
                        default=pathlib.Path("/tmp/kge-runtime/libkge_runtime_c.so"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    import bench_torch_backend as configs
    if args.compile:
        results = compile_times(args.build, args.downstream, args.repeats)
    elif args.calls:
        results = call_times(args.bundle, args.library)
    elif args.kernels:
        results = kernel_times(args.kernels)
    else:
        parser.error("give --compile or --calls")
    configs.write_results(results, args.out)


if __name__ == "__main__":
    main()
