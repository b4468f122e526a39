"""Kernel bundles on the CPU machine: every example compiles to a bundle
that the runtime's validator accepts, with the signature the compiler
derived; corrupted bundles are refused with an error naming the problem;
without a GPU the runtime reports that, instead of crashing."""

import json
import subprocess

import kge_runtime as rt
import pytest

from conftest import BUILD_ROOT, SOURCE_ROOT

EXAMPLES = sorted(p.stem for p in (SOURCE_ROOT / "examples" / "bvec").glob("*.mlir"))


def compile_bundle(tools, name, *pipeline_options):
    source = SOURCE_ROOT / "examples" / "bvec" / f"{name}.mlir"
    pipeline = "-kge-lower-to-gpu" + (f"={' '.join(pipeline_options)}" if pipeline_options else "")
    lowered = subprocess.run([str(tools["kge-opt"]), str(source), pipeline],
                             capture_output=True, text=True, check=True).stdout
    return subprocess.run([str(tools["kge-translate"]), "--kge-to-bundle"], input=lowered,
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def transe_bundle(tools):
    return compile_bundle(tools, "transe_l2")


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("mode", ["pos", "neg"])
def test_example_bundles_validate(tools, name, mode):
    text = compile_bundle(tools, name, *(["negative=t"] if mode == "neg" else []))
    bundle = json.loads(text)
    signature = rt.validate_bundle(text)
    expected = json.loads(subprocess.run(
        [str(tools["kge-translate"]), "--bvec-to-signature",
         str(SOURCE_ROOT / "examples" / "bvec" / f"{name}.mlir")],
        capture_output=True, text=True, check=True).stdout)[0]
    assert signature["name"] == name
    assert [p["name"] for p in signature["params"]] == [p["name"] for p in expected["params"]]
    for got, want in zip(signature["params"], expected["params"]):
        assert got["role"] == want["role"] and got["dtype"] == want["dtype"]
        if mode == "neg" and got["name"] in ("t", "score"):
            assert got["shape"] == ["B", "K"]
        else:
            assert got["shape"] == want["shape"]
    kernels = [l for l in bundle["launches"] if l["kind"] == "kernel" and l["module"] != "library"]
    if mode == "pos" and name in ("transr", "rescal"):
        # Matrix products through tile: the segment kernels of long runs
        # and of the rest, then the finalize kernel, where the rows are
        # 16-byte chunks; the CUDA-core kernel and the finalize otherwise.
        assert [k["function"] for k in kernels] == [
            f"{name}_mma_long", f"{name}_mma", f"{name}_finalize", f"{name}_small",
            f"{name}_finalize"]
        assert bundle["modules"][0]["ptx"].count(".entry ") == 4
        return
    # One fused kernel of the bundle's module per call, after the library
    # kernels of the plan (reordering for matrix models).
    assert [k["function"] for k in kernels] == [name]
    assert "kge_inspect_unique" in bundle["library"]
    assert bundle["modules"][0]["ptx"].count(".entry ") == 1


def test_kernels_wait_for_prior_grids_on_sm90(tools):
    """On sm_90 the fused kernel begins with griddepcontrol.wait and its
    launch is marked dependent (the runtime may start it while the previous
    kernel finishes); the library kernels of the plan are not. For older
    chips neither."""
    for chip, dependent in (("sm_90", True), ("sm_80", False)):
        lowered = subprocess.run([str(tools["kge-opt"]), str(SOURCE_ROOT / "examples" / "bvec" / "transr.mlir"),
                                  "-kge-lower-to-gpu=fuse-matrix-products=1"], capture_output=True, text=True,
                                 check=True).stdout
        text = subprocess.run([str(tools["kge-translate"]), "--kge-to-bundle", f"--ptx-chip={chip}"],
                              input=lowered, capture_output=True, text=True, check=True).stdout
        bundle = json.loads(text)
        marks = {l["function"]: l.get("dependent", False) for l in bundle["launches"] if l["kind"] == "kernel"}
        assert marks == {"kge_key_histogram": False, "kge_key_scan": False, "kge_key_scatter": False,
                         "transr": dependent}
        assert ("griddepcontrol.wait" in bundle["modules"][0]["ptx"]) == dependent
        rt.validate_bundle(text)
    # Steps marked dependent whose kernels would not wait are refused: the
    # sm_80 kernel, a library kernel, a memset.
    for step, message in ((4, "launches 'transr' as dependent, but module 'transr_kernels' does not wait"),
                          (1, "launches library kernel 'kge_key_histogram' as dependent"),
                          (0, "'launches\\[[0-9]+\\].dependent' applies to kernel steps only")):
        wrong = json.loads(text)
        wrong["launches"][step]["dependent"] = True
        with pytest.raises(rt.BundleError, match=message):
            rt.validate_bundle(json.dumps(wrong))


def corrupt(edit):
    def apply(text):
        bundle = json.loads(text)
        edit(bundle)
        return json.dumps(bundle)
    return apply


CORRUPTIONS = {
    "wrong version": (corrupt(lambda b: b.update(version=2)),
                      "bundle version 2 is not supported: this runtime reads version 1"),
    "version not a number": (corrupt(lambda b: b.update(version="1")), "'version' must be an integer"),
    "wrong format": (corrupt(lambda b: b.update(format="other")), "'format' must be \"kge-bundle\""),
    "missing kernel": (corrupt(lambda b: b["launches"][-1].update(function="nope")),
                       "launches 'nope', which is not a kernel of module 'transe_l2_kernels'"),
    "no modules": (corrupt(lambda b: b.update(modules=[])), "'modules' is empty"),
    "module without entry": (corrupt(lambda b: b["modules"][0].update(ptx="// nothing")),
                             "'modules\\[0\\].ptx' holds no kernel entry"),
    "unknown module": (corrupt(lambda b: b["launches"][-1].update(module="other")),
                       "names no module: 'other'"),
    "dependent not a boolean": (corrupt(lambda b: b["launches"][-1].update(dependent="yes")),
                                "'launches\\[[0-9]+\\].dependent' must be a boolean"),
    "bad base64": (corrupt(lambda b: b["modules"][0].update(cubin_base64="@@@@")), "not valid base64"),
    "unknown size": (corrupt(lambda b: b["launches"][-1].update(grid=["ceildiv(X, 32)", 1, 1])),
                     "uses the size 'X', which no parameter defines"),
    "bad expression": (corrupt(lambda b: b["launches"][-1].update(shared_bytes="B +")),
                       "shared_bytes"),
    "bad condition": (corrupt(lambda b: b["launches"][-1].update(when="B /")), "'launches\\[[0-9]+\\].when'"),
    "condition of unknown size": (corrupt(lambda b: b["launches"][-1].update(when="X / 2")),
                                  "uses the size 'X', which no parameter defines"),
    "unknown library function": (corrupt(lambda b: b["library"].append("kge_missing")),
                                 "needs the device-library function 'kge_missing'"),
    "duplicate parameter": (corrupt(lambda b: b["function"]["params"].insert(0, b["function"]["params"][0])),
                            "parameter name 'Eemb' is used twice"),
    "unknown role": (corrupt(lambda b: b["function"]["params"][0].update(role="weights")),
                     "must be table, indices, result or output, got 'weights'"),
    "unknown dtype": (corrupt(lambda b: b["function"]["params"][0].update(dtype="f8")),
                      "is not a known dtype: 'f8'"),
    "float indices": (corrupt(lambda b: b["function"]["params"][2].update(dtype="f32")),
                      "index array 'h' must be i32 or i64"),
    "no result": (corrupt(lambda b: b["function"]["params"].pop()), "the function has no result"),
    "dangling buffer": (corrupt(lambda b: b["launches"][-1]["args"][0].update(buffer="param:X")),
                        "refers to no parameter or scratch buffer: 'param:X'"),
    "wrong grid rank": (corrupt(lambda b: b["launches"][-1].update(grid=[1, 1])),
                        "needs 3 grid and 3 block dimensions"),
    "negative mode without array": (corrupt(lambda b: b.update(mode={"kind": "negative", "corrupted": "Eemb"})),
                                    "'mode.corrupted' must name an index array"),
    "check of a table": (corrupt(lambda b: b["checks"][0].update(param="Eemb")),
                         "'checks\\[0\\].param' must name an index array"),
    "tensor map of a 1-D array": (corrupt(lambda b: b["launches"][-1]["args"].append(
        {"kind": "tensormap", "buffer": "param:" + b["function"]["params"][2]["name"],
         "box": [64, 32]})), "a tensor map of a buffer that is not a 2-D argument"),
    "tensor map box over 128 bytes": (corrupt(lambda b: b["launches"][-1]["args"].append(
        {"kind": "tensormap", "buffer": "param:Eemb", "box": [64, 64]})),
        "'launches\\[[0-9]+\\].args\\[[0-9]+\\].box' must have 1 to 256 rows of at most 128 bytes"),
    "tensor map box of text": (corrupt(lambda b: b["launches"][-1]["args"].append(
        {"kind": "tensormap", "buffer": "param:Eemb", "box": ["64", 32]})),
        "must be two integers \\(rows, columns\\)"),
    "scratch tensor map without shape": (corrupt(lambda b: (
        b["scratch"].append({"name": "bt", "dtype": "f32", "count": "4096"}),
        b["launches"][-1]["args"].append(
            {"kind": "tensormap", "buffer": "scratch:bt", "box": [64, 32]}))),
        "'launches\\[[0-9]+\\].args\\[[0-9]+\\]' has no 'shape'"),
    "scratch tensor map of three extents": (corrupt(lambda b: (
        b["scratch"].append({"name": "bt", "dtype": "f32", "count": "4096"}),
        b["launches"][-1]["args"].append(
            {"kind": "tensormap", "buffer": "scratch:bt", "box": [64, 32],
             "shape": ["64", "64", "1"]}))),
        "shape' of a scratch tensor map must be two extents \\(rows, columns\\)"),
    "scratch tensor map of i32": (corrupt(lambda b: (
        b["scratch"].append({"name": "bt", "dtype": "i32", "count": "4096"}),
        b["launches"][-1]["args"].append(
            {"kind": "tensormap", "buffer": "scratch:bt", "box": [64, 32],
             "shape": ["64", "64"]}))),
        "must have 1 to 256 rows of at most 128 bytes of f16, bf16 or f32"),
    "unknown argument kind": (corrupt(lambda b: b["launches"][-1]["args"][0].update(kind="texture")),
                              "must be memref, pointer, tensormap, i32 or i64"),
    "truncated": (lambda text: text[: len(text) // 2], "the bundle is not valid JSON"),
    "not an object": (lambda text: "[1, 2]", "the top level must be an object"),
    "empty": (lambda text: "", "the bundle is not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_corrupted_bundles_are_refused(transe_bundle, case):
    edit, message = CORRUPTIONS[case]
    with pytest.raises(rt.BundleError, match=message):
        rt.validate_bundle(edit(transe_bundle))
    # The error leaves the module usable.
    assert rt.validate_bundle(transe_bundle)["name"] == "transe_l2"


def test_bundle_run_without_gpu_reports_the_driver(transe_bundle, tmp_path):
    """On a machine without a GPU (CI), loading a program is a CudaError."""
    try:
        rt.Program(transe_bundle)
    except rt.CudaError as error:
        assert "CUDA" in str(error)
    else:
        pytest.skip("this machine has a GPU")
    path = tmp_path / "transe.kgebundle"
    path.write_text(transe_bundle)
    runner = BUILD_ROOT / "runtime" / "kge-bundle-run"
    result = subprocess.run([str(runner), str(path), "--size", "B=8"], capture_output=True, text=True)
    assert result.returncode != 0 and "CUDA" in result.stderr
    corrupted = tmp_path / "bad.kgebundle"
    corrupted.write_text(transe_bundle[:100])
    result = subprocess.run([str(runner), str(corrupted)], capture_output=True, text=True)
    assert result.returncode != 0 and "not valid JSON" in result.stderr


def test_row_update_kernels_check_arrays_before_the_gpu():
    """The row-sparse optimizer's kernels (rt.rows_add, adagrad_rows,
    adam_rows) refuse arrays of the wrong dtype, strided or in host memory with a
    message naming the array, before any CUDA call (no GPU here)."""
    import numpy as np
    grad = np.zeros((4, 4), np.float32)
    bad = np.zeros(1, np.int64)
    with pytest.raises(rt.ArgumentError, match="rows_add: 'index' must be i64, got i32"):
        rt.rows_add(np.arange(2, dtype=np.int32), grad[:2], grad, bad)
    with pytest.raises(rt.ArgumentError, match="rows_add: 'index' is in host memory"):
        rt.rows_add(np.arange(2, dtype=np.int64), grad[:2], grad, bad)
    with pytest.raises(rt.ArgumentError,
                       match=r"rows_add: 'index' must be contiguous \(row-major\)"):
        rt.rows_add(np.arange(4, dtype=np.int64)[::2], grad[:2], grad, bad)
    with pytest.raises(rt.ArgumentError, match="adagrad_rows: 'param' must be f32, got f64"):
        rt.adagrad_rows(grad.astype(np.float64), grad, grad, 0.1, 1e-10)
    with pytest.raises(rt.ArgumentError, match="adam_rows: 'param' is in host memory"):
        rt.adam_rows(grad, grad, grad, grad, np.ones(1, np.float32), 0.9, 0.999, 1e-8)
