"""Gathered dimensions of tile tasks (`gathers`, `gathered`): rows of a
table read through an index array and one matrix per row's key (TransR's
projection as a task), on the CPU path against NumPy; their signature
(index arrays with range checks), refused out-of-range indices, and the
GPU lowering's kernels for gathered rows."""

import re

import numpy as np
import pytest

from kge import compiler, ir
from kge.errors import MLIRError
from tile_reference import example_path

PROJECTION = """
func.func @project(%E: memref<?x?xf32> {kge.param = "E"}, %W: memref<?x?x?xf32> {kge.param = "W"},
                   %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi64> {kge.param = "r"},
                   %Y: memref<?x?xf32> {kge.param = "Y"}) {
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>)
      outs(%Y : memref<?x?xf32>)
      gathers(%h, %r : memref<?xi32>, memref<?xi64>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32):
        %v = arith.mulf %e, %w : f32
        tile.yield %v : f32
      }
  return
}
"""

# Gathered rows on both sides and a gathered per-row threshold: each edge's
# head row against every tail row, kept where above the head's bias.
SCORES = """
func.func @scores(%E: memref<?x?xf32> {kge.param = "E"}, %T: memref<?x?xf32> {kge.param = "T"},
                  %bias: memref<?xf32> {kge.param = "bias"},
                  %h: memref<?xi32> {kge.param = "h"}, %t: memref<?xi32> {kge.param = "t"},
                  %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%E, %T, %bias : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      outs(%C : memref<?x?xf32>)
      gathers(%h, %t, %h : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>,
            affine_map<(i, j, k) -> (i)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: f32, %x: f32, %b: f32):
        %d = arith.subf %e, %x : f32
        %v = arith.mulf %d, %d : f32
        %s = arith.addf %v, %b : f32
        tile.yield %s : f32
      }
  return
}
"""


GATHERED_GEMM = """
func.func @gemm(%E: memref<?x?xf32> {kge.param = "E"}, %B: memref<?x?xf32> {kge.param = "B"},
                %h: memref<?xi32> {kge.param = "h"}, %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%E, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output dense {gathered = [[0, 0]]}
      inner {
      ^bb0(%e: f32, %b: f32):
        %v = arith.mulf %e, %b : f32
        tile.yield %v : f32
      }
  return
}
"""


def compile_function(text, name):
    module = ir.Module.parse(ir.Context(), text)
    return module, compiler.compile_cpu(module, name)


def test_a_matrix_per_key_times_gathered_rows():
    _, project = compile_function(PROJECTION, "project")
    rng = np.random.default_rng(0)
    E = rng.standard_normal((50, 24)).astype(np.float32)
    W = rng.standard_normal((7, 24, 16)).astype(np.float32)
    h = rng.integers(0, 50, 300).astype(np.int32)
    r = rng.integers(0, 7, 300).astype(np.int64)
    Y = np.zeros((300, 16), np.float32)
    project({"E": E, "W": W, "h": h, "r": r, "Y": Y})
    expected = np.einsum("bk,bkj->bj", E[h].astype(np.float64), W[r])
    np.testing.assert_allclose(Y, expected, rtol=1e-5, atol=1e-5)


def test_gathered_rows_on_both_axes_and_a_gathered_threshold():
    _, scores = compile_function(SCORES, "scores")
    rng = np.random.default_rng(1)
    E = rng.standard_normal((40, 8)).astype(np.float32)
    T = rng.standard_normal((30, 8)).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    h = rng.integers(0, 40, 17).astype(np.int32)
    t = rng.integers(0, 30, 11).astype(np.int32)
    C = np.zeros((17, 11), np.float32)
    scores({"E": E, "T": T, "bias": bias, "h": h, "t": t, "C": C})
    d = E[h][:, None, :].astype(np.float64) - T[t][None, :, :]
    expected = (d * d + bias[h][:, None, None]).sum(-1)
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)


def test_the_signature_names_gathers_as_indices_of_their_tables():
    module, _ = compile_function(PROJECTION, "project")
    params = {p["name"]: p for p in ir.signature(module, "project")["params"]}
    assert params["h"]["role"] == "indices" and params["r"]["role"] == "indices"
    # The gathered axis runs over the gather; the tables keep their sizes.
    assert params["h"]["shape"] == params["r"]["shape"] == ["M"]
    assert params["Y"]["shape"] == ["M", "N"]
    assert params["E"]["shape"][0] != "M" and params["W"]["shape"][0] != "M"
    assert params["E"]["shape"][1] == params["W"]["shape"][1] == "K"


@pytest.mark.parametrize("bad", [7, -1])
def test_out_of_range_gathers_are_refused(bad):
    _, project = compile_function(PROJECTION, "project")
    E = np.ones((5, 4), np.float32)
    W = np.ones((7, 4, 3), np.float32)
    h = np.zeros(6, np.int32)
    r = np.zeros(6, np.int64)
    r[4] = bad
    with pytest.raises(Exception, match=f"index {bad} at position 4 of 'r' is out of range"):
        project({"E": E, "W": W, "h": h, "r": r, "Y": np.zeros((6, 3), np.float32)})


def lower_to_gpu(text, options=""):
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu" + options)
    pm.run(module)
    return str(module)


def test_the_gpu_lowering_gathers_rows_on_cuda_cores():
    lowered = lower_to_gpu(SCORES)
    # Both kernels (GAMUT's two shapes) read E's and bias's rows through h
    # (%arg3) and T's through t (%arg4); no tensor cores.
    assert len(re.findall(r"memref.load %arg3\[[^\]]*\] : memref<\?xi32>", lowered)) > 0
    assert len(re.findall(r"memref.load %arg4\[[^\]]*\] : memref<\?xi32>", lowered)) > 0
    assert "nvgpu" not in lowered and "nvvm.mma" not in lowered
    # The bundle checks every gather against each table it reads (checked
    # mode), over the gathered axis.
    module = ir.Module.parse(ir.Context(), SCORES)
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu,kge-lower-to-gpu")
    pm.run(module)
    bundle = compiler.Bundle(ir.to_bundle(module, False))
    assert bundle.manifest["checks"] == [
        {"param": "h", "bound": "min(E_d0, bias_d0)", "count": "M"},
        {"param": "t", "bound": "T_d0", "count": "N"}]
    # A product of gathered rows takes mma.sync (its chunks are copied row
    # by row through the gather), never warpgroup MMA (TMA copies tiles).
    gemm = bundle_of(GATHERED_GEMM, "{matrix-math=tf32}")
    assert [s["function"] for s in gemm.manifest["launches"]] == [
        "gemm_mma", "gemm_mma_small", "gemm_small"]
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in gemm.text
    half = GATHERED_GEMM.replace("xf32>", "xf16>").replace(
        'memref<?x?xf16> {kge.param = "C"}', 'memref<?x?xf32> {kge.param = "C"}').replace(
        "outs(%C : memref<?x?xf16>)", "outs(%C : memref<?x?xf32>)").replace(
        "%e: f32, %b: f32", "%e: f16, %b: f16").replace(
        "%v = arith.mulf %e, %b : f32", "%x = arith.extf %e : f16 to f32\n"
        "        %y = arith.extf %b : f16 to f32\n        %v = arith.mulf %x, %y : f32")
    assert "wgmma" not in bundle_of(half).text
    # A gathered dimension that is an operand's contiguous one cannot be
    # copied in 16-byte chunks: CUDA cores.
    column = GATHERED_GEMM.replace("{gathered = [[0, 0]]}", "{gathered = [[1, 1]]}").replace(
        "affine_map<(i, j, k) -> (k, j)>", "affine_map<(i, j, k) -> (k, j)>")
    assert "nvgpu" not in lower_to_gpu(column, "{matrix-math=tf32}")


def bundle_of(text, options=""):
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu" + options + ",kge-lower-to-gpu")
    pm.run(module)
    return compiler.Bundle(ir.to_bundle(module, False))


def test_a_matrix_per_key_takes_the_segment_iterators():
    bundle = bundle_of(PROJECTION, "{matrix-math=fma}")
    steps = bundle.manifest["launches"]
    # The rows sorted by their key (the device library's counting sort),
    # then one block per key and column tile.
    # (The scan keeps each key's number of rows and cuts its run, starting
    # where the scan places it, into tiles of 16 rows, one block each.)
    assert [s.get("function", s["kind"]) for s in steps] == [
        "memset", "kge_key_histogram", "kge_key_scan_tiles", "kge_key_scatter", "project"]
    assert steps[0]["buffer"] == "scratch:counts"
    assert steps[1]["args"][0] == {"kind": "pointer", "buffer": "param:r"}
    assert steps[1]["args"][-1] == {"kind": "pointer", "buffer": "scratch:counts"}
    assert [a.get("buffer", a.get("value")) for a in steps[2]["args"]] == [
        "scratch:counts", "W_d0", "scratch:lengths", "16", "scratch:tiles", "0", "scratch:tiles"]
    kernel = steps[-1]
    assert kernel["grid"] == ["ceildiv(M, 16) + W_d0", "ceildiv(N, 128)", "1"]
    assert [a["buffer"] for a in kernel["args"][-2:]] == ["scratch:perm", "scratch:tiles"]
    assert {s["name"]: s["count"] for s in bundle.manifest["scratch"]} == {
        "perm": "M", "counts": "W_d0", "lengths": "W_d0",
        "tiles": "1 + 3 * (ceildiv(M, 16) + W_d0)"}
    assert bundle.manifest["checks"] == [
        {"param": "h", "bound": "E_d0", "count": "M"},
        {"param": "r", "bound": "W_d0", "count": "M"}]
    # Products on tensor cores: mma.sync segments of 16 rows x 128 columns
    # when the rows allow 16-byte copies, beside them 64-row tiles of the
    # runs that long (each matrix read once per 64 of its rows: their own
    # tile table, cut where the tensor cores run); the CUDA-core ones
    # otherwise, over runs all cut into 16 rows.
    x3 = bundle_of(PROJECTION, "{matrix-math=tf32x3}")
    steps = x3.manifest["launches"]
    assert [s.get("function", s["kind"]) for s in steps][2:] == [
        "kge_key_scan_tiles", "kge_key_scan_tiles", "kge_key_scatter", "project_mma_long",
        "project_mma", "project_small"]
    aligned = "(1 - min(1, K - K / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"
    assert [s.get("when") for s in steps[2:]] == [aligned, f"1 - ({aligned})", None, aligned,
                                                 aligned, f"1 - {aligned}"]
    assert [a.get("buffer", a.get("value")) for a in steps[2]["args"]][-3:] == [
        "scratch:tiles", "64", "scratch:long_tiles"]
    assert [a.get("buffer", a.get("value")) for a in steps[3]["args"]][-3:] == [
        "scratch:tiles", "0", "scratch:tiles"]
    # (Never an empty grid while its partner has one: 1 + M / 64.)
    assert steps[5]["grid"] == ["1 + M / 64", "ceildiv(N, 128)", "1"]
    assert steps[5]["args"][-1]["buffer"] == "scratch:long_tiles"
    assert {s["name"]: s["count"] for s in x3.manifest["scratch"]}["long_tiles"] == \
        "1 + 3 * ceildiv(M, 64)"
    # f32 matrices per key take 3xTF32 unless told otherwise.
    assert bundle_of(PROJECTION).manifest["launches"] == x3.manifest["launches"]
    assert [s["grid"] for s in steps[6:]] == [["ceildiv(M, 16) + W_d0", "ceildiv(N, 128)", "1"]] * 2
    assert [s["block"] for s in steps[5:]] == [["256", "1", "1"], ["128", "1", "1"],
                                               ["256", "1", "1"]]
    # A tile shape given by the caller is the segments' shape.
    small = bundle_of(PROJECTION, "{block-m=16 block-n=128 block-k=8 thread-m=2 thread-n=4}")
    assert small.manifest["launches"][-1]["grid"] == ["ceildiv(M, 16) + W_d0", "ceildiv(N, 128)",
                                                      "1"]
    wide = bundle_of(PROJECTION, "{block-m=32 block-n=128 block-k=8 thread-m=4 thread-n=4}")
    assert wide.manifest["launches"][-3]["args"][3]["value"] == "32"
    assert wide.manifest["launches"][-1]["grid"][0] == "ceildiv(M, 32) + W_d0"


def test_what_the_segment_iterators_do_not_take_is_diagnosed():
    per_column = PROJECTION.replace("affine_map<(i, j, k) -> (i, k, j)>",
                                    "affine_map<(i, j, k) -> (j, k, i)>")
    with pytest.raises(MLIRError, match="input #1 holds a matrix per column key"):
        lower_to_gpu(per_column)
    select = """
func.func @sel(%E: memref<?x?xf32> {kge.param = "E"}, %W: memref<?x?x?xf32> {kge.param = "W"},
               %r: memref<?xi32> {kge.param = "r"}, %rows: memref<?xi32> {kge.param = "C_rows"},
               %cols: memref<?xi32> {kge.param = "C_cols"}, %v: memref<?xf32> {kge.param = "C_values"},
               %n: memref<1xi64> {kge.param = "C_count"}) {
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>)
      outs(%rows, %cols, %v, %n : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      gathers(%r : memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output select {gathered = [[1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32):
        %p = arith.mulf %e, %w : f32
        tile.yield %p : f32
      }
      predicate {
      ^bb0(%value: f32, %acc: f32, %i: index, %j: index):
        %z = arith.constant 0.0 : f32
        %keep = arith.cmpf ogt, %value, %z : f32
        tile.yield %keep : i1
      }
  return
}
"""
    with pytest.raises(MLIRError, match="output select of a task with a matrix per row's key"):
        lower_to_gpu(select)


# Each edge's projection aggregated into groups of (head group, column
# group): an aggregate output through the segment iterators.
GROUPED_QUERY = """
where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) {
    accum += E[h[i], k] * W[r[i], k, j];
  }
  C[g[i], c[j]] += accum;
}
"""


def test_an_aggregate_of_a_matrix_per_key():
    import kge.tile
    q = kge.tile.query(GROUPED_QUERY, name="grouped")
    rng = np.random.default_rng(4)
    E = rng.standard_normal((30, 8)).astype(np.float32)
    W = rng.standard_normal((5, 8, 6)).astype(np.float32)
    h, r = rng.integers(0, 30, 40).astype(np.int32), rng.integers(0, 5, 40).astype(np.int32)
    g, c = rng.integers(0, 3, 40).astype(np.int32), rng.integers(0, 2, 6).astype(np.int32)
    C = q.run_cpu(E=E, W=W, h=h, r=r, g=g, c=c, C=np.ones((3, 2), np.float32))
    expected = np.ones((3, 2))
    np.add.at(expected, (g[:, None], c[None, :]),
              np.einsum("bk,bkj->bj", E[h].astype(np.float64), W[r]))
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)
    kernels = [s["function"] for s in q.compile(cubin=False, cache=False,
                                                  matrix_math="tf32x3").manifest["launches"]
               if s.get("function", "").startswith("grouped")]
    assert kernels == ["grouped_mma_long", "grouped_mma", "grouped_small"]


# The same tasks in GAMUT's syntax, extended with gathered subscripts
# (examples/tile/gathered).
PROJECTION_QUERY = example_path("transr_projection").read_text()
SCORES_QUERY = example_path("edge_scores").read_text()


def test_gathered_subscripts_in_the_query_syntax():
    import kge.tile
    q = kge.tile.query(PROJECTION_QUERY, name="project", dtypes={"r": "i64"})
    assert "gathers(" in str(q.module) and "gathered = [[0, 0], [1, 0]]" in str(q.module)
    rng = np.random.default_rng(2)
    E = rng.standard_normal((50, 24)).astype(np.float32)
    W = rng.standard_normal((7, 24, 16)).astype(np.float32)
    h = rng.integers(0, 50, 300).astype(np.int32)
    r = rng.integers(0, 7, 300).astype(np.int64)
    Y = q.run_cpu(E=E, W=W, h=h, r=r)
    np.testing.assert_allclose(Y, np.einsum("bk,bkj->bj", E[h].astype(np.float64), W[r]),
                               rtol=1e-5, atol=1e-5)
    s = kge.tile.query(SCORES_QUERY, name="scores")
    E, T = E[:, :8], rng.standard_normal((30, 8)).astype(np.float32)
    bias = rng.standard_normal(50).astype(np.float32)
    t = rng.integers(0, 30, 11).astype(np.int32)
    C = s.run_cpu(E=E, T=T, bias=bias, h=h[:17], t=t)
    d = E[h[:17]][:, None, :].astype(np.float64) - T[t][None, :, :]
    np.testing.assert_allclose(C, (d * d + bias[h[:17]][:, None, None]).sum(-1), rtol=1e-5,
                               atol=1e-5)
    # Gathered rows compile for the GPU (CUDA cores).
    assert "nvgpu" not in s.compile(cubin=False, cache=False).text


def test_gathered_subscripts_from_python():
    import kge.tile
    from kge.tile import i, j, k, reduce

    @kge.tile.function
    def project(E, W, h, r):
        return reduce(E[h[i], k] * W[r[i], k, j])

    assert "E[h[i], k] * W[r[i], k, j]" in project.text
    rng = np.random.default_rng(3)
    E = rng.standard_normal((20, 6)).astype(np.float32)
    W = rng.standard_normal((3, 6, 5)).astype(np.float32)
    h = rng.integers(0, 20, 9).astype(np.int32)
    r = rng.integers(0, 3, 9).astype(np.int32)
    np.testing.assert_allclose(project.run_cpu(E=E, W=W, h=h, r=r),
                               np.einsum("bk,bkj->bj", E[h].astype(np.float64), W[r]),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(MLIRError, match="only the spatial axes \\(i, j\\) are gathered, except "
                                        "into a matrix per key"):
        kge.tile.function(lambda E, g: reduce(E[i, g[k]]))


@pytest.mark.parametrize("body,dtypes,message", [
    ("accum += E[i, g[k]] * B[k, j];", {},
     "'g' gathers along the reduction axis 'k'; only the spatial axes (i, j) are gathered"),
    ("accum += E[h[i], k] * B[k, j];", {"h": "f32"}, "the index array 'h' must be i32 or i64"),
    ("accum += E[h[i], k] * B[h[j], k];", {},
     "'h' gathers along 'j' here but is indexed differently at"),
    ("accum += W[i, k, j];", {}, "'W' has more than two subscripts"),
    ("accum += W[i, j] * B[k, j];", {}, "'W' is indexed by both spatial axes"),
    ("accum += E[h[i], k] * E[k];", {}, "'E' is indexed differently here than at"),
    ("accum += E[h[i], k] * h[k];", {}, "'h' gathers another array and must be indexed as there"),
    ("accum += E[i + 1, k];", {}, "the subscripts of 'E' must be axis variables"),
])
def test_bad_gathers_in_the_query_syntax(body, dtypes, message):
    import kge.tile
    text = ("where (i in [0, M], j in [0, N]) {\n  accum = 0;\n  reduce (k in [0, K]) {\n    "
            + body + "\n  }\n  C[i, j] = accum;\n}\n")
    with pytest.raises(MLIRError, match=re.escape(message)):
        kge.tile.query(text, dtypes=dtypes)
