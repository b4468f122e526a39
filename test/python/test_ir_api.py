"""The compiler's Python IR API (kge.ir): contexts, modules, types,
locations, attributes, the builder, the pass manager, the targets and CPU
execution, including every way a call can be wrong."""

import json

import kge_runtime
import numpy as np
import pytest

import kgetest
from builders import BUILDERS
from conftest import SOURCE_ROOT
from kge import ir

EXAMPLES_DIR = SOURCE_ROOT / "examples" / "bvec"


@pytest.fixture
def ctx():
    return ir.Context()


def example_text(tools, name):
    return kgetest.printed_example(tools, EXAMPLES_DIR / f"{name}.mlir")


def test_context_loads_kge_dialects(ctx):
    assert {"bvec", "gpu", "nvvm", "scf", "llvm"} <= set(ctx.dialects)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_parse_print_roundtrip(ctx, tools, name):
    text = (EXAMPLES_DIR / f"{name}.mlir").read_text()
    module = ir.Module.parse(ctx, text, f"{name}.mlir")
    module.verify()
    assert str(module) == example_text(tools, name)
    assert str(ir.Module.parse(ctx, str(module))) == str(module)
    assert [f.name for f in module.functions] == [name]


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_builder_gives_the_example_ir(tools, name):
    module = BUILDERS[name]()
    module.verify()
    assert str(module) == example_text(tools, name)


def test_parse_errors_carry_locations(ctx):
    with pytest.raises(ir.MLIRError) as error:
        ir.Module.parse(ctx, "bvec.func @f(%E: !bvec.table<?xf32>) {\n}", "bad.mlir")
    assert error.value.diagnostics and error.value.diagnostics[0].startswith("bad.mlir:1:")
    with pytest.raises(ir.MLIRError, match="bad.mlir:1:1: error"):
        ir.Module.parse(ctx, "this is not MLIR", "bad.mlir")


def test_invalid_ir_fails_verification(ctx):
    text = """
    bvec.func @f(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
      %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
      %s = bvec.norm %v, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
      bvec.return %s : !bvec.scalar<?xf32>
    }"""
    with pytest.raises(ir.MLIRError, match="length"):
        ir.Module.parse(ctx, text, "f.mlir")


def test_types(ctx):
    table = ir.Type.table(ctx, [None, 128])
    assert str(table) == "!bvec.table<?x128xf32>" and table.kind == "table"
    assert table.shape == [None, 128] and table.dtype == "f32"
    mat = ir.Type.mat(ctx, 64, 4, 5, "f64")
    assert str(mat) == "!bvec.mat<64x4x5xf64>" and mat.shape == [64, 4, 5]
    assert ir.Type.indices(ctx, dtype="i32").kind == "indices"
    assert ir.Type.parse(ctx, "!bvec.vec<?x3xf32>") == ir.Type.vec(ctx, None, 3)
    assert hash(ir.Type.scalar(ctx)) == hash(ir.Type.scalar(ctx))


@pytest.mark.parametrize("make,message", [
    (lambda c: ir.Type.table(c, [None]), "rank"),
    (lambda c: ir.Type.indices(c, dtype="f32"), "i32 or i64"),
    (lambda c: ir.Type.vec(c, None, 4, "i64"), "float"),
    (lambda c: ir.Type.parse(c, "!bvec.nothing<3>"), "nothing"),
])
def test_invalid_types_raise(ctx, make, message):
    with pytest.raises(ir.MLIRError, match=message):
        make(ctx)


def test_unknown_dtype_is_a_value_error(ctx):
    with pytest.raises(ValueError, match="unknown element type 'f8'"):
        ir.Type.table(ctx, [None, None], "f8")


def test_attributes_and_locations(ctx):
    attr = ir.Attribute.parse(ctx, "{tile = 32 : i64}")
    assert str(attr) == "{tile = 32 : i64}"
    assert attr == ir.Attribute.parse(ctx, "{tile = 32 : i64}")
    with pytest.raises(ir.MLIRError):
        ir.Attribute.parse(ctx, "{tile = ")
    assert str(ir.Location.file(ctx, "model.py", 12, 5)) == "model.py:12:5"
    assert str(ir.Location.name(ctx, "score")) == "score"


def builder_with_function(ctx, length=4):
    b = ir.Builder(ctx)
    module = b.create_module()
    table = ir.Type.table(ctx, [None, length])
    f = b.create_function(module, "f", [("E", table), ("P", ir.Type.table(ctx, [None, 4, 4])),
                                        ("h", ir.Type.indices(ctx))])
    return b, module, f


def test_builder_errors_name_the_problem(ctx):
    b, module, f = builder_with_function(ctx)
    E, P, h = f.arguments
    b.loc = ir.Location.file(ctx, "model.py", 7, 3)
    with pytest.raises(ir.MLIRError, match="model.py:7:3: error: bvec.gather_mat needs a table "
                                           "of matrices"):
        b.gather_mat(E, h)
    with pytest.raises(ir.MLIRError, match="bvec.gather_vec expects an index array"):
        b.gather_vec(E, E)
    v = b.gather_vec(E, h)
    m = b.gather_mat(P, h)
    with pytest.raises(ir.MLIRError, match="bvec.add needs operands of one type"):
        b.add(v, m)
    with pytest.raises(ir.MLIRError, match="p"):
        b.norm(v, 3)
    with pytest.raises(ir.MLIRError, match="unknown reduction 'median'"):
        b.reduce(v, "median")
    with pytest.raises(ir.MLIRError, match="batch of scalars, vectors or matrices"):
        b.constant(ir.Type.table(ctx, [None, None]), 1.0)
    with pytest.raises(ir.MLIRError, match="names 1 results but returns 2"):
        b.ret([b.norm(v), b.norm(v)])
    # Failed operations leave no trace; the function still completes.
    b.ret([b.vec_mul_vec(b.vec_mul_mat(v, m), v)])
    module.verify()
    assert "gather_mat %E" not in str(module)


def test_builder_misuse_raises_python_errors(ctx):
    b = ir.Builder(ctx)
    with pytest.raises(ValueError, match="no function to insert into"):
        b.constant(ir.Type.scalar(ctx), 1.0)
    b1, _, f1 = builder_with_function(ctx)
    b2, _, f2 = builder_with_function(ctx)
    with pytest.raises(ValueError, match="another module"):
        b2.gather_vec(f1.argument("E"), f2.argument("h"))
    with pytest.raises(KeyError, match="no argument 'x'"):
        f1.argument("x")
    with pytest.raises(TypeError, match="must be a table, an index array or a per-edge scalar"):
        b.create_function(b.create_module(), "g", [("v", ir.Type.vec(ctx))])
    with pytest.raises(TypeError):
        b1.add(1, 2)


def test_pass_manager_runs_named_and_textual_pipelines(tools):
    module = BUILDERS["transh"]()
    pm = ir.PassManager(module.context)
    pm.add("canonicalize,cse")
    pm.add("builtin.module(bvec-fuse{tile=64})")
    pm.run(module)
    assert "tile = 64" in str(module)
    lowered = BUILDERS["distmult"]()
    pm = ir.PassManager(lowered.context)
    pm.add("kge-lower-to-gpu{negative=t}")
    pm.run(lowered)
    assert "gpu.module @distmult_kernels" in str(lowered)
    bundle = json.loads(ir.to_bundle(lowered))
    assert bundle["mode"] == {"corrupted": "t", "kind": "negative"}
    assert kge_runtime.validate_bundle(ir.to_bundle(lowered, cubin=False))["name"] == "distmult"
    (name, ptx), = ir.to_ptx(lowered)
    assert name == "distmult_kernels" and ".entry distmult(" in ptx
    cpu = BUILDERS["distmult"]()
    pm = ir.PassManager(cpu.context)
    pm.add("kge-lower-to-cpu")
    pm.run(cpu)
    assert "llvm.func @distmult" in str(cpu)


def test_pass_manager_errors(ctx):
    pm = ir.PassManager(ctx)
    with pytest.raises(ir.MLIRError, match="'no-such-pass' does not refer to a registered pass"):
        pm.add("no-such-pass")
    with pytest.raises(ir.MLIRError, match="invalid pass pipeline"):
        pm.add("canonicalize{")
    text = (EXAMPLES_DIR / "transe_l2.mlir").read_text().replace("f32", "f64")
    module = ir.Module.parse(ctx, text)
    pm.add("kge-lower-to-gpu")
    with pytest.raises(ir.MLIRError) as error:
        pm.run(module)
    assert any("GPU lowering supports f32, f16 and bf16 tables" in d for d in error.value.diagnostics)
    other = BUILDERS["transe_l1"]()
    with pytest.raises(ValueError, match="another Context"):
        pm.run(other)
    with pytest.raises(ir.MLIRError, match="a bundle holds one function lowered by kge-lower-to-gpu"):
        ir.to_bundle(other)


def test_signature(ctx):
    sig = ir.signature(BUILDERS["transr"]())
    assert [p["name"] for p in sig["params"]] == ["Eemb", "Remb", "Pm", "h", "r", "t", "score"]
    assert sig["params"][2]["shape"] == ["N_Pm", "D_Eemb", "D_Remb"]


def cpu_inputs(rng, batch=5, rows=6, length=4):
    return {"Eemb": rng.standard_normal((rows, length), dtype=np.float32),
            "Remb": rng.standard_normal((3, length), dtype=np.float32),
            "h": rng.integers(0, rows, batch), "r": rng.integers(0, 3, batch),
            "t": rng.integers(0, rows, batch)}


def test_cpu_function_runs_and_refuses_bad_arguments():
    fn = ir.CpuFunction.compile(BUILDERS["transe_l2"]())
    rng = np.random.default_rng(3)
    args = cpu_inputs(rng)
    (score,) = fn(args).values()
    expected = np.linalg.norm(args["Eemb"][args["h"]] - args["Eemb"][args["t"]]
                              + args["Remb"][args["r"]], axis=1)
    assert np.allclose(score, expected, rtol=1e-5)
    bad = [
        (dict(args, Eemb=args["Eemb"].astype(np.float64)), ValueError, "expects dtype f32, got f64"),
        (dict(args, h=args["h"][:, None]), ValueError, "'h'"),
        (dict(args, h=args["h"][:3]), ValueError, "B"),
        ({k: v for k, v in args.items() if k != "r"}, TypeError, "missing argument 'r'"),
        (dict(args, x=args["h"]), TypeError, "no argument named 'x'"),
        (dict(args, h=list(args["h"])), TypeError, "must be a NumPy array"),
        (dict(args, h=args["h"].astype(np.uint8)), TypeError, "does not support"),
        (dict(args, t=np.full(5, 6)), IndexError, "out of range"),
        (dict(args, t=np.full(5, -1)), IndexError, "out of range"),
    ]
    for inputs, error, message in bad:
        with pytest.raises(error, match=message):
            fn(inputs)
    # Non-contiguous inputs are copied, not misread.
    strided = dict(args, Eemb=np.asfortranarray(args["Eemb"]))
    assert np.allclose(fn(strided)["score"], score)
    assert np.allclose(fn(args)["score"], score)


def test_builder_takes_per_edge_inputs(ctx):
    """A !bvec.scalar parameter is a per-edge input: one value per edge,
    passed as a [B] array."""
    import numpy as np
    from kge.compiler import compile_cpu
    b = ir.Builder(ctx)
    module = b.create_module()
    f = b.create_function(module, "weighted", [("E", ir.Type.table(ctx, [None, 4])),
                                               ("h", ir.Type.indices(ctx)),
                                               ("w", ir.Type.scalar(ctx))])
    E, h, w = f.arguments
    b.ret([b.mul(b.norm(b.gather_vec(E, h), p=1), w)])
    module.verify()
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    index = np.array([2, 0], dtype=np.int64)
    weights = np.array([0.5, -2.0], dtype=np.float32)
    (score,) = compile_cpu(module, "weighted")({"E": table, "h": index, "w": weights}).values()
    np.testing.assert_allclose(score, np.abs(table[index]).sum(1) * weights)
