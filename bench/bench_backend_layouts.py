"""Kernel layouts of score kernels, timed against each other and against
Inductor in one process on one GPU.

Two sets of kernels:
  --models M    the kernel that torch.compile(backend="kge") makes for the
                plain PyTorch models M (examples/python/plain_torch_models.py;
                ComplEx by default: one table of twice the rank, `chunk`ed)
                at the benchmark's D = 256, next to the model's forward
                compiled by Inductor;
  --examples E  the bvec examples E (examples/bvec/E.mlir, dynamic D), run
                at each of --dims.
Each is compiled with bvec-fuse's default layout and with other layouts
(edges per warp through the tile, blocks per multiprocessor, the batch's
sort by entity off); every bundle's launch is timed (CUDA events, medians)
on FB15k-like batches (bench/datasets.py), and its scores are checked
against the default layout's (and, for a model, against PyTorch's).

Here (the compiler; CPU is enough):
    PYTHONPATH=build/python_packages python3 bench/bench_backend_layouts.py --prepare DIR \
        [--models complex] [--examples distmult complex]
On the GPU machine:
    python3 bench/bench_backend_layouts.py --bundles DIR --out r.json
"""

import argparse
import json
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "python"))
sys.path.insert(0, str(HERE))

import bench_torch_backend as configs  # noqa: E402

#: name -> bvec-fuse layout options (None: the default layout).
LAYOUTS = {
    "default": {},
    "no-sort": {"reorder_group": 1},
    "1-edge-per-warp": {"tile": 8, "warps": 8},
    "1-edge-per-warp,no-sort": {"tile": 8, "warps": 8, "reorder_group": 1},
    "4-edges-per-warp": {"tile": 32, "warps": 8},
    "2-blocks-per-sm": {"blocks_per_sm": 2},
    "2-blocks-per-sm,no-sort": {"blocks_per_sm": 2, "reorder_group": 1},
    "4-warps": {"tile": 8, "warps": 4},
}


#: The layouts tried on the examples: the batch's sort by entity or not.
EXAMPLE_LAYOUTS = {"default": {}, "no-sort": {"reorder_group": 1}}


def score_module(name):
    """The bvec module the backend compiles for model `name` at the
    benchmark's sizes."""
    import torch
    import kge.torch_backend as backend
    model = configs.build(name)
    traced = torch.fx.symbolic_trace(model)
    h = torch.zeros(16, dtype=torch.int64)
    _, report = backend.rewrite(traced, (h, h, h), cubin=False)
    (replacement,) = report.replaced
    return replacement.function.module


def prepare(directory, models, examples):
    from kge import compiler, ir
    directory.mkdir(parents=True, exist_ok=True)
    for model in models:
        module = score_module(model)
        (directory / f"model.{model}.mlir").write_text(str(module))
        for layout, options in LAYOUTS.items():
            compiler.compile_bundle(module, **options).save(
                directory / f"model.{model}.{layout}.kgebundle")
            print(model, layout, flush=True)
    for example in examples:
        path = HERE.parent / "examples" / "bvec" / f"{example}.mlir"
        module = ir.Module.parse(ir.Context(), path.read_text(), str(path))
        for layout, options in EXAMPLE_LAYOUTS.items():
            compiler.compile_bundle(module, **options).save(
                directory / f"example.{example}.{layout}.kgebundle")
            print(example, layout, flush=True)


def gpu_us(fn, calls=50, repeats=15):
    """Microseconds per call: the median of `repeats` timings of `calls`
    launches between two CUDA events (bench_embedding_paths.gpu_us)."""
    from bench_embedding_paths import gpu_us as timed
    for _ in range(2):
        fn()
    return statistics.median(timed(fn, calls) for _ in range(repeats))


def table_shapes(program, dim, entities=configs.ENTITIES, relations=configs.RELATIONS):
    """The shapes of `program`'s table parameters: entity tables (those the
    first or the last index array reads: heads and tails) and relation
    tables, of `dim` columns where the signature leaves it open."""
    params = program.signature["params"]
    indices = [p for p in params if p["role"] == "indices"]
    entity = {t for p in (indices[0], indices[-1]) for t in p.get("indexes", [])}
    return [[entities if p["name"] in entity else relations]
            + [s if isinstance(s, int) else dim for s in p["shape"][1:]]
            for p in params if p["role"] == "table"]


def tables_for(program, dim):
    """Random tables of table_shapes(program, dim) on the GPU."""
    import torch
    generator = torch.Generator(device="cuda").manual_seed(0)
    return [torch.randn(shape, device="cuda", generator=generator) * 0.1
            for shape in table_shapes(program, dim)]


def time_bundles(programs, tables, batch, reference=None):
    """{layout: microseconds} of the programs on one FB15k-like batch; each
    program's scores equal the first's (and `reference`'s)."""
    import torch
    h, r, t, _ = configs.batch("cuda", batch)
    stream = torch.cuda.current_stream().cuda_stream
    row, first = {}, None
    for layout, program in programs.items():
        scores = program.run(*tables, h, r, t, stream=stream)
        scores = torch.as_tensor(scores[0] if isinstance(scores, (list, tuple)) else scores)
        for expected in (first, reference(h, r, t) if reference else None):
            if expected is not None:
                error = (scores - expected).abs().max().item()
                assert error <= 1e-4 * max(1.0, expected.abs().max().item()), (layout, error)
        first = scores if first is None else first
        row[layout] = gpu_us(lambda: program.run(*tables, h, r, t, stream=stream))
    return row


def load(directory, prefix):
    import kge_runtime
    return {p.name[len(prefix):-len(".kgebundle")]: kge_runtime.Program(p.read_text())
            for p in sorted(directory.glob(f"{prefix}*.kgebundle"))}


def run(directory, batches, dims):
    import torch
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "entities": configs.ENTITIES, "relations": configs.RELATIONS,
               "layouts": LAYOUTS, "example_layouts": EXAMPLE_LAYOUTS,
               "models": {}, "examples": {}}
    for path in sorted(directory.glob("model.*.mlir")):
        name = path.name.split(".")[1]
        model = configs.build(name).cuda()
        inductor = torch.compile(model)
        programs = load(directory, f"model.{name}.")
        # The model's own tables in the kernel's order (by their row counts).
        by_rows = {p.shape[0]: p.detach() for p in model.parameters()}
        tables = [by_rows[shape[0]] for shape in table_shapes(next(iter(programs.values())), 0)]
        rows = {}
        with torch.no_grad():
            for batch in batches:
                row = time_bundles(programs, tables, batch, model)
                h, r, t, _ = configs.batch("cuda", batch)
                row["inductor"] = gpu_us(lambda: inductor(h, r, t))
                rows[str(batch)] = row
                print(name, batch, json.dumps(row), flush=True)
        results["models"][name] = {"dim": configs.DIM, "microseconds": rows}
    examples = sorted({p.name.split(".")[1] for p in directory.glob("example.*.kgebundle")})
    for name in examples:
        programs = load(directory, f"example.{name}.")
        rows = {}
        for dim in dims:
            tables = tables_for(next(iter(programs.values())), dim)
            for batch in batches:
                rows[f"D{dim} B{batch}"] = row = time_bundles(programs, tables, batch)
                print(name, dim, batch, json.dumps(row), flush=True)
        results["examples"][name] = {"microseconds": rows}
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", type=pathlib.Path)
    parser.add_argument("--bundles", type=pathlib.Path)
    parser.add_argument("--models", nargs="*", default=["complex"])
    parser.add_argument("--examples", nargs="*", default=[])
    parser.add_argument("--batches", type=int, nargs="*", default=[65536, 524288])
    parser.add_argument("--dims", type=int, nargs="*", default=[256, 512])
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare, args.models, args.examples)
        return
    configs.write_results(run(args.bundles, args.batches, args.dims), args.out)


if __name__ == "__main__":
    main()
