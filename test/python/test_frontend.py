"""The tracing front end (kge.function): the eight examples written in it
give the IR of the hand-written examples and of the builder API, run on the
CPU like NumPy, compile to valid bundles; unsupported Python and bad
operands are TraceErrors that point at the user's line."""

import inspect
import zlib

import kge_runtime
import numpy as np
import pytest

import kge
import kgetest
from builders import BUILDERS
from conftest import SOURCE_ROOT
from kge import Indices, Table
from reference import EXAMPLES
from score_functions import FUNCTIONS


def example_text(tools, name):
    return kgetest.printed_example(tools, SOURCE_ROOT / "examples" / "bvec" / f"{name}.mlir")


def test_all_examples_are_written_in_the_front_end():
    assert sorted(FUNCTIONS) == sorted(EXAMPLES) == sorted(BUILDERS)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_front_end_gives_the_example_and_builder_ir(tools, name):
    traced = FUNCTIONS[name].trace()
    traced.verify()
    assert str(traced) == example_text(tools, name)
    assert str(traced) == str(BUILDERS[name]())


CASES = [(1, 7, "uniform", 50), (37, 100, "duplicate_heavy", 50),
         (64, 33, "all_identical", 20), (300, 64, "duplicate_free", 400)]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("batch,length,kind,rows", CASES,
                         ids=[f"B{b}-D{d}-{k}" for b, d, k, _ in CASES])
def test_front_end_runs_on_the_cpu_like_numpy(name, batch, length, kind, rows):
    fn = FUNCTIONS[name]
    sig = fn.signature
    rng = np.random.default_rng(zlib.crc32(f"fe-{name}-{batch}-{kind}".encode()))
    args = kgetest.make_inputs(sig, rng, batch, kgetest.sizes_for(sig, length), kind, rows)
    score = fn.run_cpu(**args)
    reference = EXAMPLES[name](**args)
    assert score.shape == (batch,) and score.dtype == np.float32
    assert kgetest.scores_match(score, reference)
    wrong = score.copy()
    wrong[-1] += np.float32(1e-3 * max(np.max(np.abs(reference)), 1.0))
    assert not kgetest.scores_match(wrong, reference)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_front_end_compiles_to_bundles(name):
    fn = FUNCTIONS[name]
    bundle = fn.compile(sizes={s: 64 for s in {d for p in fn.signature["params"]
                                                for d in p["shape"][1:] if isinstance(d, str)}})
    # (TransR and RESCAL lower through tile: their kernels are suffixed.)
    assert bundle.name == name and (".entry " + name + "(" in bundle.ptx
                                    or ".entry " + name + "_mma(" in bundle.ptx)
    assert kge_runtime.validate_bundle(bundle.text)["name"] == name
    negative = fn.compile(negative="t", cubin=False)
    assert negative.manifest["mode"] == {"corrupted": "t", "kind": "negative"}
    assert negative.validate()["params"][-1]["shape"] == ["B", "K"]


def test_layout_options_reach_the_kernel():
    bundle = FUNCTIONS["transe_l2"].compile(tile=64, warps=4, cubin=False)
    (kernel,) = [l for l in bundle.manifest["launches"] if l.get("function") == "transe_l2"]
    assert kernel["grid"][0] == "ceildiv(B, 64)" and kernel["block"][0] == "128"
    with pytest.raises(TypeError, match="unknown layout option 'tiles'"):
        FUNCTIONS["transe_l2"].compile(tiles=64)
    with pytest.raises(ValueError, match="positive integer"):
        FUNCTIONS["transe_l2"].compile(sizes={"D_Eemb": 0})
    with pytest.raises(kge.MLIRError, match="no function has a dynamic size named 'D_X'"):
        FUNCTIONS["transe_l2"].compile(sizes={"D_X": 8})
    with pytest.raises(kge.MLIRError, match="negative mode: 'x' is not an index array"):
        FUNCTIONS["transe_l2"].compile(negative="x")


def test_sorting_large_batches_by_entity():
    """By default a vector model's plan sorts batches by head from 65536
    edges and 16 edges per entity, when the entity rows have at least 512
    elements (rows of static length below that: never);
    reorder_min_batch / reorder_min_reuse / reorder_min_row move the
    thresholds; reorder_group=1 never sorts; a function with elementwise
    functions of vectors is not sorted by default."""
    def sort_steps(bundle):
        return [(l.get("function", l["kind"]), l.get("when")) for l in bundle.manifest["launches"]
                if l.get("function", "").startswith("kge_key") or l["kind"] == "memset"]
    default = sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False))
    assert [f for f, _ in default] == ["memset", "kge_key_histogram", "kge_key_scan", "kge_key_scatter"]
    assert {w for _, w in default} == {"min(min(B / 65536, B / max(1, 16 * N_Eemb)), D_Eemb / 512)"}
    tuned = sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False, reorder_min_batch=1000,
                                                       reorder_min_reuse=2, reorder_min_row=64))
    assert {w for _, w in tuned} == {"min(min(B / 1000, B / max(1, 2 * N_Eemb)), D_Eemb / 64)"}
    any_row = sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False, reorder_min_row=0))
    assert {w for _, w in any_row} == {"min(B / 65536, B / max(1, 16 * N_Eemb))"}
    assert sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False, sizes={"D_Eemb": 256})) == []
    wide = sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False, sizes={"D_Eemb": 512}))
    assert {w for _, w in wide} == {"min(min(B / 65536, B / max(1, 16 * N_Eemb)), 512 / 512)"}
    assert sort_steps(FUNCTIONS["transe_l2"].compile(cubin=False, reorder_group=1)) == []
    for name in ("rotate", "crosse"):
        assert sort_steps(FUNCTIONS[name].compile(cubin=False)) == [], name
    with pytest.raises(kge.MLIRError, match="reorder_min_reuse applies to functions without matrix"):
        FUNCTIONS["transr"].compile(cubin=False, reorder_min_reuse=4, fuse_matrix_products=True)


def test_matrix_math_option_selects_tensor_cores():
    fn = FUNCTIONS["rescal"]
    sizes = {"D_Eemb": 64}
    # Through tile (the default): 3xTF32 segments, CUDA cores with fma.
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in fn.compile(sizes=sizes, cubin=False).ptx
    assert "mma.sync" not in fn.compile(sizes=sizes, matrix_math="fma", cubin=False).ptx
    # Dynamic lengths: both kernels, the launch plan takes the tensor cores
    # where the rows are whole 16-byte chunks.
    dynamic = fn.compile(cubin=False)
    assert "mma.sync" in dynamic.ptx and ".entry rescal_small(" in dynamic.ptx
    with pytest.raises(kge.MLIRError, match="invalid matrix-math 'tf16'"):
        fn.compile(sizes=sizes, matrix_math="tf16")
    # The fused kernel's products.
    fused = {"fuse_matrix_products": True, "cubin": False}
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in fn.compile(sizes=sizes, **fused).ptx
    assert "mma.sync" not in fn.compile(sizes=sizes, matrix_math="fma", **fused).ptx
    # 4-byte layouts (dynamic lengths) multiply with FMAs.
    assert "mma.sync" not in fn.compile(**fused).ptx
    with pytest.raises(kge.MLIRError, match='matrix_math must be "tf32x3" or "fma", got "tf16"'):
        fn.compile(sizes=sizes, matrix_math="tf16", fuse_matrix_products=True)


def test_deterministic_option_reaches_the_matrix_products():
    """deterministic (default True) makes runs that continue into a
    neighbouring tile take tensor cores: the kernel reads the keys next to
    its tile through the permutation."""
    fn = FUNCTIONS["transr"]
    sizes = {"D_Eemb": 64, "D_Remb": 64}
    fused = {"fuse_matrix_products": True, "cubin": False}
    default = fn.compile(sizes=sizes, **fused)
    assert default.manifest == fn.compile(sizes=sizes, deterministic=True, **fused).manifest
    anyorder = fn.compile(sizes=sizes, deterministic=False, **fused)
    assert default.ptx != anyorder.ptx
    # Two more key loads per tile (the neighbours) and their comparisons.
    assert default.ptx.count("ld.global") == anyorder.ptx.count("ld.global") + 4
    assert default.ptx.count("setp.eq.b32") > anyorder.ptx.count("setp.eq.b32")
    with pytest.raises(kge.MLIRError, match="deterministic must be 0 or 1, got 2"):
        fn.compile(sizes=sizes, deterministic=2, fuse_matrix_products=True)


def test_carry_floats_option_keeps_vectors_in_registers():
    """TransH at D = 64: with vectors carried between its two stages, each
    edge's 4 rows are read once (4 edges x 4 rows of 16-byte loads per
    warp); without, stage 1 reads head, tail and normal again."""
    fn = FUNCTIONS["transh"]
    sizes = {"D_Eemb": 64}
    assert fn.compile(sizes=sizes, cubin=False).ptx.count("ld.global.v4") == 16
    assert fn.compile(sizes=sizes, carry_floats=0, cubin=False).ptx.count("ld.global.v4") == 28
    with pytest.raises(kge.MLIRError, match=r"carry_floats must be in \[0, 192\]"):
        fn.compile(sizes=sizes, carry_floats=500)


def test_static_lengths_unroll_every_chunk_and_blocks_per_sm_caps_registers():
    """TransF at D = 512 (two inner products per edge): all 4 chunks of
    the 3 rows of a warp's 4 edges are loaded in one unrolled sequence
    (48 loads, no loop over the length), and the kernel is compiled for 4
    blocks of 8 warps per multiprocessor unless asked otherwise."""
    fn = FUNCTIONS["transf"]
    ptx = fn.compile(sizes={"D_Eemb": 512}, cubin=False).ptx
    assert ptx.count("ld.global.v4") == 48
    assert ".minnctapersm 4" in ptx
    assert ".minnctapersm" not in fn.compile(blocks_per_sm=0, cubin=False).ptx
    assert ".minnctapersm 2" in fn.compile(warps=16, tile=64, cubin=False).ptx
    with pytest.raises(kge.MLIRError, match=r"blocks_per_sm must be in \[0, 2\] for blocks of 512 threads"):
        fn.compile(warps=16, tile=64, blocks_per_sm=3)


def test_bundles_save_and_load(tmp_path):
    bundle = FUNCTIONS["distmult"].compile(cubin=False)
    path = bundle.save(tmp_path / "distmult.kgebundle")
    again = kge.Bundle.read(path)
    assert again.text == bundle.text and "distmult" in repr(again)


def test_operations_carry_the_users_locations():
    @kge.function
    def scaled(E: Table, h: Indices):
        return kge.norm(E[h], p=1)

    line = inspect.getsourcelines(scaled.fn)[1] + 2
    text = scaled.module.print(debug_info=True)
    assert f'"{__file__}":{line}:' in text


def test_multiple_results_and_names():
    @kge.function
    def both(E: Table(None, 4), h: Indices, t: Indices):
        d = E[h] - E[t]
        return {"l1": kge.norm(d, p=1), "l2": kge.norm(d, p=2)}

    assert both.module.function().result_names == ["l1", "l2"]
    E = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = both.run_cpu(E=E, h=np.array([0, 2]), t=np.array([1, 0]))
    assert np.allclose(out["l1"], [16, 32]) and np.allclose(out["l2"], [8, 16])

    @kge.function(results=("distance",))
    def named(E: Table, h: Indices, t: Indices):
        return kge.norm(E[h] - E[t])

    assert named.module.function().result_names == ["distance"]


def test_numbers_slices_and_reductions():
    @kge.function
    def mixed(E: Table(None, 8), h: Indices, t: Indices):
        a, b = E[h], E[t]
        s = kge.sum(a[0:4] * b[4:8]) + kge.mean(kge.maximum(a, b)) - kge.max(-a) / 2
        return kge.sigmoid(s) * 0.5 + kge.min(kge.exp(a - 1.0)) + kge.dot(a / 3, abs(b))

    rng = np.random.default_rng(1)
    E = rng.standard_normal((5, 8)).astype(np.float32)
    h, t = np.array([0, 1, 4]), np.array([3, 3, 2])
    a, b = E[h].astype(np.float64), E[t].astype(np.float64)
    s = (a[:, :4] * b[:, 4:]).sum(1) + np.maximum(a, b).mean(1) - (-a).max(1) / 2
    expected = 0.5 / (1 + np.exp(-s)) + np.exp(a - 1).min(1) + ((a / 3) * np.abs(b)).sum(1)
    assert np.allclose(mixed.run_cpu(E=E, h=h, t=t), expected, rtol=1e-5)


def trace_error(fn):
    with pytest.raises(kge.TraceError) as error:
        fn.trace()
    return error.value


def test_control_flow_is_a_trace_error_at_the_users_line():
    @kge.function
    def branchy(E: Table, h: Indices):
        v = E[h]
        if kge.norm(v) > 0:  # comparison gives a bool
            return v
        return v

    @kge.function
    def branchy2(E: Table, h: Indices):
        v = kge.norm(E[h])
        if v:
            return v
        return v

    error = trace_error(branchy2)
    assert error.filename == __file__
    assert error.lineno == inspect.getsourcelines(branchy2.fn)[1] + 3
    assert "control flow" in str(error) and "if v:" in str(error)
    with pytest.raises((kge.TraceError, TypeError)):
        branchy.trace()


@pytest.mark.parametrize("body,message", [
    (lambda E, P, h: len(E[h]), "len()"),
    (lambda E, P, h: [x for x in E[h]], "iteration"),
    (lambda E, P, h: float(kge.norm(E[h])), "float()"),
    (lambda E, P, h: E + E, "table 'E' cannot be used in arithmetic"),
    (lambda E, P, h: h[h], "index array 'h' cannot be indexed"),
    (lambda E, P, h: E[0], "must be indexed by an index array"),
    (lambda E, P, h: E[h] + P[h], "bvec.add needs operands of one type"),
    (lambda E, P, h: kge.norm(E[h]) + E[h], "'+' of a batch of scalars and a batch of vectors"),
    (lambda E, P, h: E[h] @ E[h], "'@' multiplies a batch of vectors by a batch of matrices"),
    (lambda E, P, h: kge.norm(E[h], p=3), "p = 1 and p = 2"),
    (lambda E, P, h: kge.norm(P[h]), "bvec.norm expects a batch of vectors"),
    (lambda E, P, h: E[h][0:2], "static vector length"),
])
def test_bad_operands_are_trace_errors(body, message):
    def fn(E: Table, P: Table(None, 4, 4), h: Indices):
        return body(E, P, h)

    error = trace_error(kge.function(fn))
    assert message in str(error)
    assert error.filename == __file__


def test_numbers_broadcast_over_dynamic_lengths():
    """A number combined with a vector or matrix of dynamic sizes is a
    constant of those sizes: it runs on the CPU like NumPy and compiles."""
    @kge.function
    def padded(E: Table, P: Table(None, None, None), h: Indices):
        x = E[h]
        safe = kge.sqrt(x * x + 1e-9)
        shifted = kge.maximum(1.0 - x / 2.0, 0.25) - kge.minimum(x, -0.5)
        return {"a": kge.sum(safe + shifted), "b": kge.sum((x + 3.0) @ (P[h] - 1.0))}

    assert "bvec.constant 9.99999971E-10 : !bvec.vec<?x?xf32>" in padded.ir
    assert "bvec.constant 1.000000e+00 : !bvec.mat<?x?x?xf32>" in padded.ir
    rng = np.random.default_rng(3)
    E = rng.standard_normal((7, 5), dtype=np.float32)
    P = rng.standard_normal((7, 5, 3), dtype=np.float32)
    h = rng.integers(0, 7, 11)
    out = padded.run_cpu(E=E, P=P, h=h)
    x = E[h].astype(np.float64)
    expected_a = np.sum(np.sqrt(x * x + 1e-9) + np.maximum(1 - x / 2, 0.25) - np.minimum(x, -0.5),
                        axis=1)
    expected_b = np.einsum("bk,bkj->b", x + 3.0, P[h].astype(np.float64) - 1.0)
    assert np.allclose(out["a"], expected_a, rtol=1e-5)
    assert np.allclose(out["b"], expected_b, rtol=1e-4)
    bundle = padded.compile(cubin=False)
    assert ".entry padded(" in bundle.ptx


def test_static_length_mismatch_is_reported():
    @kge.function
    def mismatch(A: Table(None, 4), B: Table(None, 8), h: Indices):
        return kge.dot(A[h], B[h])

    error = trace_error(mismatch)
    assert "bvec.vec_mul_vec" in str(error) or "length" in str(error)
    assert error.lineno == inspect.getsourcelines(mismatch.fn)[1] + 2


def test_declaration_errors():
    with pytest.raises(TypeError, match="needs an annotation"):
        kge.function(lambda E, h: E[h])
    with pytest.raises(TypeError, match="needs an annotation"):
        @kge.function
        def wrong(E: int, h: Indices):
            return E[h]
    with pytest.raises(TypeError, match="2 sizes"):
        Table(None)
    with pytest.raises(TypeError, match="non-negative int or None"):
        Table(None, -1)

    @kge.function
    def not_traced(E: Table, h: Indices):
        return 3.0

    with pytest.raises(TypeError, match="must return traced values"):
        not_traced.trace()
    with pytest.raises(TypeError, match="run it with .run_cpu"):
        not_traced()


def test_cpu_argument_errors_from_the_front_end():
    fn = FUNCTIONS["transe_l1"]
    E = np.zeros((4, 3), np.float32)
    args = dict(Eemb=E, Remb=E, h=np.array([0]), r=np.array([0]), t=np.array([9]))
    with pytest.raises(IndexError, match="out of range"):
        fn.run_cpu(**args)
    with pytest.raises(ValueError, match="f64"):
        fn.run_cpu(**dict(args, t=np.array([1]), Eemb=E.astype(np.float64)))
    assert fn.run_cpu(**dict(args, t=np.array([1]))).shape == (1,)


def test_gradient_of_a_traced_function():
    """ScoreFunction.gradient runs the function's gradient on the CPU: for
    DistMult, d/dh <h * r, t> = r * t (and so on), summed per row by the
    caller."""
    import numpy as np

    @kge.function
    def distmult(Eemb: kge.Table(None, 8), Remb: kge.Table(None, 8), h: kge.Indices(),
                 r: kge.Indices(), t: kge.Indices()):
        return kge.dot(Eemb[h] * Remb[r], Eemb[t])

    grad = distmult.gradient()
    # In the order of the first gather through each pair.
    assert [p["name"] for p in grad.signature["params"] if p["role"] == "result"] == [
        "d_Eemb_h", "d_Remb_r", "d_Eemb_t"]
    rng = np.random.default_rng(0)
    E, R = rng.normal(size=(6, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)
    h, r, t = (np.array(v, dtype=np.int64) for v in ([0, 5, 5], [2, 0, 1], [1, 1, 4]))
    seed = np.array([1.0, -0.5, 2.0], dtype=np.float32)
    out = grad.run_cpu(Eemb=E, Remb=R, h=h, r=r, t=t, d_score=seed)
    np.testing.assert_allclose(out["d_Eemb_h"], seed[:, None] * R[r] * E[t], rtol=1e-6)
    np.testing.assert_allclose(out["d_Eemb_t"], seed[:, None] * E[h] * R[r], rtol=1e-6)
    np.testing.assert_allclose(out["d_Remb_r"], seed[:, None] * E[h] * E[t], rtol=1e-6)
    only = distmult.gradient(wrt=["Remb"])
    assert [p["name"] for p in only.signature["params"] if p["role"] == "result"] == ["d_Remb_r"]
    assert "ptx" in grad.compile(cubin=False).manifest["modules"][0]
    with pytest.raises(kge.TraceError, match="no differentiated function has a table named 'X'"):
        distmult.gradient(wrt=["X"]).module
