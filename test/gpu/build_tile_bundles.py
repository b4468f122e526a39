#!/usr/bin/env python3
"""Compiles the matmul-like queries of examples/tile into kernel bundles for
the GPU suite (here, where the compiler is; they travel to the GPU machine):

  <out>/<query>.<shape>.kgebundle

for every query and the tile shapes t64 (64x64x16 blocks, 4x4 per
thread), t128 (128x128x8, 8x8), t32 (32x32x8, 2x2) and auto (GAMUT's
heuristic: the 128 kernel when its grid fills the GPU, else the 64 one).

Tensor-core bundles go to <out>/mma/<query>.<precision>.kgebundle: GEMM in
the four operand layouts (nn: A[i, k] B[k, j]; nt: B[j, k]; tn: A[k, i];
tt) and the queries whose inner computation is a product, with f16 and
bf16 inputs, and f32 inputs under matrix-math=tf32 and tf32x3.

Distinct bundles go to <out>/distinct/<dtype>.<shape>.kgebundle.

The autotuner's variants (kge.tile.tuning_variants) go to
<out>/autotune/<query>/<variant>.kgebundle: query 1, GEMM and query 5 in
f32 (CUDA-core tile shapes) and GEMM in bf16 (clusters, mma.sync). This
part needs the Python package (build/python_packages on PYTHONPATH).

Product forms (test/python/product_forms.py's TASKS: sums of
products of computed factors) go to <out>/products/<task>.<precision>.kgebundle
for f16 and bf16 inputs and f32 ones under matrix-math=tf32 and tf32x3.

Tasks with gathered rows (test/python/test_tile_gather.py's SCORES,
GATHERED_GEMM and PROJECTION, a matrix per row's key: segment iterators)
go to <out>/gather/<name>.<shape>.kgebundle (t64, t32, auto; t16 for the
projection).

The product forms whose operands are all stored k-contiguous (THREAD_STAGES:
gathered rows, computed factors, up to three terms) go to
<out>/thread_stages/<task>.<precision>.kgebundle with their schedule cut to
the warpgroup kernel on stages the producer threads write (`_wgmma`) and the
CUDA-core one, so that the former runs at every size where rows are 16-byte
chunks (f16, bf16, tf32).

Reduce outputs (test/python/reduce_tasks.py's TASKS) go to
<out>/reduce/<task>.<precision>.kgebundle: f32 inputs at matrix-math=fma
and tf32x3, bf16 inputs.

The reduce and per-key outputs of the query syntax (examples/tile/gathered's
transr_score and typed_linear_gradient) go to
<out>/query_outputs/<query>.<precision>.kgebundle (fma and tf32x3), and
kge.autograd.OUTER_SUM (a plain product per key) to
<out>/query_outputs/outer_sum.<precision>.kgebundle (fma, tf32, tf32x3).
"""

import argparse
import pathlib
import re

from build_bundles import ROOT, run
SHAPES = {"t64": "block-m=64 block-n=64 block-k=16 thread-m=4 thread-n=4",
          "t128": "block-m=128 block-n=128 block-k=8 thread-m=8 thread-n=8",
          "t32": "block-m=32 block-n=32 block-k=8 thread-m=2 thread-n=2",
          # GAMUT's heuristic: both 128 and 64 kernels, chosen at launch.
          "auto": ""}
# Input precisions: <query>.<dtype>.<shape>.kgebundle with the query's
# inputs in that dtype (keys stay i32).
PRECISIONS = {"gemm": {"A": None, "B": None}, "q2_preference_by_zip": {"P": None, "R": None}}
DTYPES = ("bf16", "f16", "f64")
# Outputs the GPU lowering does not take yet.
CPU_ONLY = set()
# Top-k sorts a block's pairs in shared memory: at most 4096 of them.
SHAPES_OF = {"q7_top_preferences": ("t64", "t32", "auto")}


LAYOUTS = {"nn": ("A[i, k]", "B[k, j]"), "nt": ("A[i, k]", "B[j, k]"),
           "tn": ("A[k, i]", "B[k, j]"), "tt": ("A[k, i]", "B[j, k]")}
MMA_PRECISIONS = ("f16", "bf16", "tf32", "tf32x3")
# Queries whose inner computation is a product, and their operands.
MMA_QUERIES = {"q2_preference_by_zip": ("P", "R"), "q3_strong_pairs_by_zip": ("P", "R"),
               "q4_same_zip": ("P", "R"), "q5_strong_pairs": ("P", "R"),
               "q7_top_preferences": ("P", "R")}


def to_bundle(bin_dir, tile_ir, options, path):
    """Lowers `tile_ir` with convert-tile-to-gpu's `options` (empty: GAMUT's
    heuristic) and writes its bundle to `path`."""
    lowered = run(bin_dir / "kge-opt", "--convert-tile-to-gpu" + (f"={options}" if options else ""),
                  "--kge-lower-to-gpu", stdin=tile_ir)
    path.write_text(run(bin_dir / "kge-translate", "--kge-to-bundle", stdin=lowered))


def gemm_query(layout):
    a, b = LAYOUTS[layout]
    return ("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n"
            f"    accum += {a} * {b};\n  }}\n  C[i, j] = accum;\n}}\n")


def build_mma(bin_dir, out):
    """The tensor-core bundles; their count."""
    out.mkdir(parents=True, exist_ok=True)
    sources = {f"gemm_{layout}": (gemm_query(layout), ("A", "B")) for layout in LAYOUTS}
    for name, operands in MMA_QUERIES.items():
        sources[name] = ((ROOT / "examples" / "tile" / f"{name}.gamut").read_text(), operands)
    count = 0
    for name, (text, operands) in sources.items():
        source = out / f"{name}.gamut"
        source.write_text(text)
        for precision in MMA_PRECISIONS:
            dtype = precision if precision in ("f16", "bf16") else "f32"
            typed = run(bin_dir / "kge-translate", "--import-gamut", f"--gamut-name={name}",
                        "--gamut-dtype=" + ",".join(f"{n}:{dtype}" for n in operands), source)
            option = "" if dtype != "f32" else f"matrix-math={precision}"
            to_bundle(bin_dir, typed, option, out / f"{name}.{precision}.kgebundle")
            count += 1
        source.unlink()
    return count


# Distinct on the GPU: the distinct sums of products (most pairs repeat a
# value), kept where the sum is not 4, per input dtype (bf16 takes the
# tensor cores); <out>/distinct/<dtype>.<shape>.kgebundle.
DISTINCT_QUERY = ("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n"
                  "    accum += A[i, k] * B[k, j];\n  }\n  if (accum != 4) C.distinct(accum);\n}\n")
DISTINCT_DTYPES = ("f32", "f64", "i32", "i64", "bf16")
# GAMUT's syntax accumulates in floating point: integer sums are IR.
DISTINCT_INTEGER_IR = """#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @distinct(%A: memref<?x?xELEMENT> {kge.param = "A"}, %B: memref<?x?xELEMENT> {kge.param = "B"},
                    %v: memref<?xELEMENT> {kge.param = "C_values"},
                    %n: memref<1xi64> {kge.param = "C_count"}) {
  tile.task ins(%A, %B : memref<?x?xELEMENT>, memref<?x?xELEMENT>) outs(%v, %n : memref<?xELEMENT>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output distinct
      inner {
      ^bb0(%a: ELEMENT, %b: ELEMENT):
        %p = arith.muli %a, %b : ELEMENT
        tile.yield %p : ELEMENT
      }
      predicate {
      ^bb0(%value: ELEMENT, %acc: ELEMENT, %i: index, %j: index):
        %four = arith.constant 4 : ELEMENT
        %keep = arith.cmpi ne, %value, %four : ELEMENT
        tile.yield %keep : i1
      }
  return
}
"""


def build_distinct(bin_dir, out):
    """The distinct bundles; their count."""
    out.mkdir(parents=True, exist_ok=True)
    source = out / "distinct.gamut"
    source.write_text(DISTINCT_QUERY)
    count = 0
    for dtype in DISTINCT_DTYPES:
        if dtype.startswith("i"):
            typed = DISTINCT_INTEGER_IR.replace("ELEMENT", dtype)
        else:
            typed = run(bin_dir / "kge-translate", "--import-gamut", "--gamut-name=distinct",
                        f"--gamut-dtype=A:{dtype},B:{dtype}", source)
        for shape in ("t64", "auto"):
            to_bundle(bin_dir, typed, SHAPES[shape], out / f"{dtype}.{shape}.kgebundle")
            count += 1
    source.unlink()
    return count


# Queries whose variants the GPU suite and bench_tile_autotune.py time:
# directory name -> (example, dtypes).
AUTOTUNE = {"q1_amplify": ("q1_amplify", {}), "gemm": ("gemm", {}),
            "q5_strong_pairs": ("q5_strong_pairs", {}),
            "gemm_bf16": ("gemm", {"A": "bf16", "B": "bf16"})}


def build_autotune(out):
    """The autotuner's variants of the AUTOTUNE queries; their count."""
    import kge.tile
    count = 0
    for directory, (example, dtypes) in AUTOTUNE.items():
        query = kge.tile.query((ROOT / "examples" / "tile" / f"{example}.gamut").read_text(),
                               name=example, dtypes=dtypes)
        (out / directory).mkdir(parents=True, exist_ok=True)
        for name, options in kge.tile.tuning_variants(query).items():
            bundle = kge.tile.compile_query(query, cache=False, **options)
            bundle.save(out / directory / f"{name}.kgebundle")
            count += 1
    return count


def build_gather(bin_dir, out):
    """The bundles of tasks with gathered rows; their count."""
    import sys
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from test_tile_gather import GATHERED_GEMM, GROUPED_QUERY, PROJECTION, SCORES
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    # An aggregate through the segment iterators (GAMUT's syntax).
    source = out / "grouped.gamut"
    source.write_text(GROUPED_QUERY)
    grouped = run(bin_dir / "kge-translate", "--import-gamut", "--gamut-name=grouped", source)
    source.unlink()
    for shape in ("t64", "tf32x3"):
        to_bundle(bin_dir, grouped, {**SHAPES, **GATHER_MATH}[shape],
                  out / f"grouped.{shape}.kgebundle")
        count += 1
    for name, text in (("scores", SCORES), ("gemm", GATHERED_GEMM),
                       ("projection", PROJECTION)):
        shapes = ("t64", "t32", "auto")
        if name == "projection":
            shapes += tuple(SEGMENT_SHAPES)
        if name in ("projection", "gemm"):
            shapes += tuple(GATHER_MATH)
        for shape in shapes:
            options = {**SHAPES, **SEGMENT_SHAPES, **GATHER_MATH}[shape]
            to_bundle(bin_dir, text, options, out / f"{name}.{shape}.kgebundle")
            count += 1
    return count


def build_products(bin_dir, out):
    """The product forms' bundles; their count."""
    import sys
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from product_forms import TASKS, typed
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, text in TASKS.items():
        for precision in MMA_PRECISIONS:
            element = precision if precision in ("f16", "bf16") else "f32"
            option = "" if element != "f32" else f"matrix-math={precision}"
            to_bundle(bin_dir, typed(text, element), option,
                      out / f"{name}.{precision}.kgebundle")
            count += 1
    return count


# The precisions of the product forms that warpgroup MMA takes on stages
# the producer threads write (test/python/product_forms.py's THREAD_STAGES).
THREAD_STAGE_PRECISIONS = ("f16", "bf16", "tf32")


def only_kernels(scheduled, suffixes):
    """The tile IR `scheduled` with every task's schedule cut to its kernels
    named by `suffixes` (a tensor-core kernel alone of its kind runs at
    every size where rows are 16-byte chunks, the CUDA-core one elsewhere)."""
    pieces, at = [], 0
    for match in re.finditer(r'tile\.kernel "([^"]*)"', scheduled):
        if match.start() < at:
            continue
        open_brace = scheduled.index("{", match.end())
        depth, end = 0, open_brace
        while True:
            depth += {"{": 1, "}": -1}.get(scheduled[end], 0)
            if depth == 0:
                break
            end += 1
        line = scheduled.rfind("\n", 0, match.start()) + 1
        pieces.append(scheduled[at:line])
        if match.group(1) in suffixes:
            pieces.append(scheduled[line:end + 1])
        at = end + 1
    pieces.append(scheduled[at:])
    return "".join(pieces)


def build_thread_stages(bin_dir, out):
    """The warpgroup kernels on stages the threads write; their count."""
    import sys
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from product_forms import THREAD_STAGES, TASKS, typed
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name in THREAD_STAGES:
        for precision in THREAD_STAGE_PRECISIONS:
            element = precision if precision in ("f16", "bf16") else "f32"
            option = "" if element != "f32" else f"matrix-math={precision}"
            scheduled = run(bin_dir / "kge-opt", "--tile-schedule" + (f"={option}" if option else ""),
                            stdin=typed(TASKS[name], element))
            if '"_wgmma"' not in scheduled or "via threads" not in scheduled:
                raise SystemExit(f"{name} at {precision}: no warpgroup kernel on thread stages")
            to_bundle(bin_dir, only_kernels(scheduled, ("_wgmma", "_small")), "",
                      out / f"{name}.{precision}.kgebundle")
            count += 1
    return count


def build_reduce(bin_dir, out):
    """The reduce outputs' bundles; their count."""
    import sys
    sys.path.insert(0, str(ROOT / "test" / "python"))
    from reduce_tasks import TASKS, typed
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name, text in TASKS.items():
        for precision in ("fma", "tf32x3", "bf16"):
            element = "bf16" if precision == "bf16" else "f32"
            option = "" if element != "f32" else f"matrix-math={precision}"
            to_bundle(bin_dir, typed(text, element), option,
                      out / f"{name}.{precision}.kgebundle")
            count += 1
    return count


QUERY_OUTPUTS = ("transr_score", "typed_linear_gradient")


def build_query_outputs(bin_dir, out):
    """The bundles of the query syntax's reduce and per-key outputs; their
    count."""
    out.mkdir(parents=True, exist_ok=True)
    count = 0
    for name in QUERY_OUTPUTS:
        path = ROOT / "examples" / "tile" / "gathered" / f"{name}.gamut"
        tile_ir = run(bin_dir / "kge-translate", "--import-gamut", f"--gamut-name={name}", path)
        for precision in ("fma", "tf32x3"):
            to_bundle(bin_dir, tile_ir, f"matrix-math={precision}",
                      out / f"{name}.{precision}.kgebundle")
            count += 1
    # A plain product per key (kge.autograd.OUTER_SUM's form, key i32):
    # mma.sync at tf32 and tf32x3 where the rows are whole chunks.
    from kge.autograd import OUTER_SUM
    path = out / "outer_sum.gamut"
    path.write_text(OUTER_SUM)
    tile_ir = run(bin_dir / "kge-translate", "--import-gamut", "--gamut-name=outer_sum", path)
    for precision in ("fma", "tf32", "tf32x3"):
        to_bundle(bin_dir, tile_ir, f"matrix-math={precision}",
                  out / f"outer_sum.{precision}.kgebundle")
        count += 1
    return count


# Products of gathered rows on tensor cores (mma.sync).
GATHER_MATH = {"tf32x3": "matrix-math=tf32x3", "tf32": "matrix-math=tf32"}


# Segments of few rows (TransR-like batches: ~12 edges per relation).
SEGMENT_SHAPES = {"t16": "block-m=16 block-n=128 block-k=8 thread-m=2 thread-n=4",
                  "t16n64": "block-m=16 block-n=64 block-k=16 thread-m=1 thread-n=4",
                  "t32n128": "block-m=32 block-n=128 block-k=8 thread-m=4 thread-n=4"}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "bin")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--parts", default="queries,mma,distinct,autotune,gather,products,reduce,"
                                           "query_outputs,thread_stages",
                        help="comma-separated subset of queries, mma, distinct, autotune, "
                             "gather, products, reduce, query_outputs, thread_stages")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    count = 0
    if "autotune" in parts:
        count += build_autotune(args.out / "autotune")
    if "gather" in parts:
        count += build_gather(args.bin, args.out / "gather")
    if "products" in parts:
        count += build_products(args.bin, args.out / "products")
    if "thread_stages" in parts:
        count += build_thread_stages(args.bin, args.out / "thread_stages")
    if "reduce" in parts:
        count += build_reduce(args.bin, args.out / "reduce")
    if "query_outputs" in parts:
        count += build_query_outputs(args.bin, args.out / "query_outputs")
    if "queries" not in parts:
        count += build_mma(args.bin, args.out / "mma") if "mma" in parts else 0
        count += build_distinct(args.bin, args.out / "distinct") if "distinct" in parts else 0
        print(f"{count} bundles in {args.out}")
        return
    for path in sorted((ROOT / "examples" / "tile").glob("*.gamut")):
        if path.stem in CPU_ONLY:
            continue
        tile_ir = run(args.bin / "kge-translate", "--import-gamut", f"--gamut-name={path.stem}", path)
        for shape, options in SHAPES.items():
            if shape not in SHAPES_OF.get(path.stem, SHAPES):
                continue
            to_bundle(args.bin, tile_ir, options, args.out / f"{path.stem}.{shape}.kgebundle")
            count += 1
        for dtype in DTYPES if path.stem in PRECISIONS else ():
            typed = run(args.bin / "kge-translate", "--import-gamut", f"--gamut-name={path.stem}",
                        "--gamut-dtype=" + ",".join(f"{n}:{dtype}" for n in PRECISIONS[path.stem]),
                        path)
            for shape in ("t64", "t128"):
                to_bundle(args.bin, typed, SHAPES[shape],
                          args.out / f"{path.stem}.{dtype}.{shape}.kgebundle")
                count += 1
    count += build_mma(args.bin, args.out / "mma") if "mma" in parts else 0
    count += build_distinct(args.bin, args.out / "distinct") if "distinct" in parts else 0
    print(f"{count} bundles in {args.out}")


if __name__ == "__main__":
    main()
