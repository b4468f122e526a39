"""Autotuning of tile queries (kge.tile.autotune, kge.autotune) without a
GPU: the variants compile to distinct, valid bundles; the choice is the
fastest by the given timer, remembered per shapes and device, never
trusted when the record is damaged; the caller's arrays are not written;
failing variants are reported. The GPU suite times real kernels
(test/gpu/test_tile_autotune.py)."""

import json

import numpy as np
import pytest

import kge.autotune
import kge.tile
from tile_reference import EXAMPLES_DIR


def q1():
    return kge.tile.query((EXAMPLES_DIR / "q1_amplify.gamut").read_text(), name="q1")


def q1_arrays(n=8):
    rng = np.random.default_rng(0)
    return {"S": rng.standard_normal((n, n)).astype(np.float32),
            "W": rng.standard_normal((n, n)).astype(np.float32),
            "thres": rng.random(n).astype(np.float32),
            "Out": np.full((n, n), 7.0, np.float32)}


class FakeProgram:
    """Stands for a loaded bundle: records its calls and writes its output."""

    def __init__(self, bundle, log):
        self.bundle, self.log = bundle, log

    def __call__(self, **arrays):
        self.log.append(self.bundle.manifest["launches"][-1]["function"])
        arrays["Out"][...] = 1.0


def timer_of(times, calls):
    """A timer that runs each variant once and reports the next of `times`
    (variants are timed in the order they are listed)."""
    def timer(fn):
        fn()
        calls.append(fn)
        return times.pop(0)
    return timer


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_variants_of_a_cuda_core_query_compile_to_distinct_bundles(cache):
    variants = kge.tile.tuning_variants(q1())
    names = list(variants)
    assert names[0] == "auto" and variants["auto"] == {}
    assert "b128x128x8.t8x8" in names and "b32x32x8.t2x2" in names and len(names) == 11
    query = q1()
    texts = set()
    for name, options in variants.items():
        bundle = kge.tile.compile_query(query, cubin=False, **options)
        texts.add(bundle.text)
        if name != "auto":
            grid = bundle.manifest["launches"][0]["grid"]
            rows = f"ceildiv(M, {options['block_m']})"
            assert grid == [f"ceildiv(N, {options['block_n']})", f"min({rows}, 65535)",
                            f"ceildiv({rows}, 65535)"]
    assert len(texts) == len(variants)


def test_variants_of_top_k_fit_its_sort():
    text = (EXAMPLES_DIR / "q7_top_preferences.gamut").read_text()
    variants = kge.tile.tuning_variants(kge.tile.query(text, name="q7"))
    shapes = [v for v in variants.values() if "block_m" in v]
    assert shapes and all(v["block_m"] * v["block_n"] <= 4096 for v in shapes)
    assert "b128x128x8.t8x8" not in variants


def test_variants_on_tensor_cores_are_clusters_and_instruction_families():
    text = (EXAMPLES_DIR / "gemm.gamut").read_text()
    half = kge.tile.query(text, name="g", dtypes={"A": "bf16", "B": "bf16"})
    assert kge.tile.tuning_variants(half) == {
        "auto": {}, "cluster1": {"cluster_m": 1}, "cluster4": {"cluster_m": 4},
        "mma_sync": {"warpgroup": False}}
    tf32 = kge.tile.tuning_variants(kge.tile.query(text, name="g"), matrix_math="tf32x3")
    assert all(v["matrix_math"] == "tf32x3" for v in tf32.values()) and len(tf32) == 4
    fma = kge.tile.tuning_variants(half, matrix_math="fma")
    assert "b64x64x16.t4x4" in fma
    with pytest.raises(ValueError, match="matrix_math must be one of"):
        kge.tile.tuning_variants(half, matrix_math="tf16")


def test_autotune_takes_the_fastest_and_remembers_it(cache):
    query, arrays = q1(), q1_arrays()
    variants = {name: options for name, options in kge.tile.tuning_variants(query).items()
                if name in ("auto", "b64x64x16.t4x4", "b32x32x8.t2x2")}
    log, calls = [], []
    load = lambda bundle: FakeProgram(bundle, log)  # noqa: E731
    tuning = kge.tile.autotune(query, arrays, variants=variants, load=load,
                               timer=timer_of([3e-4, 1e-4, 2e-4], calls))
    assert tuning.variant == "b64x64x16.t4x4" and not tuning.choice.cached
    assert tuning.options == variants["b64x64x16.t4x4"]
    assert tuning.choice.times == {"auto": 3e-4, "b64x64x16.t4x4": 1e-4, "b32x32x8.t2x2": 2e-4}
    assert tuning.bundle.manifest["launches"][0]["grid"][0] == "ceildiv(N, 64)"
    assert len(log) == 3
    # The caller's output keeps its values: the programs wrote a copy.
    assert (arrays["Out"] == 7.0).all()
    # Same shapes: from the cache, nothing timed or run.
    again = kge.tile.autotune(q1(), q1_arrays(), variants=variants, load=load,
                              timer=timer_of([], calls))
    assert again.variant == "b64x64x16.t4x4" and again.choice.cached and len(log) == 3
    assert again.bundle.text == tuning.bundle.text
    # Other shapes, or no cache: timed again.
    other = kge.tile.autotune(query, q1_arrays(16), variants=variants, load=load,
                              timer=timer_of([1e-4, 2e-4, 3e-4], calls))
    assert other.variant == "auto" and not other.choice.cached
    fresh = kge.tile.autotune(query, arrays, variants=variants, load=load, cache=False,
                              timer=timer_of([2e-4, 3e-4, 1e-4], calls))
    assert fresh.variant == "b32x32x8.t2x2" and not fresh.choice.cached
    assert len(list((cache / "autotune").glob("*.json"))) == 2


def test_a_damaged_tuning_record_is_retuned(cache):
    query, arrays = q1(), q1_arrays()
    variants = {k: v for k, v in kge.tile.tuning_variants(query).items()
                if k in ("auto", "b32x32x8.t2x2")}
    load = lambda bundle: FakeProgram(bundle, [])  # noqa: E731
    kge.tile.autotune(query, arrays, variants=variants, load=load,
                      timer=timer_of([1e-4, 2e-4], []))
    (record,) = (cache / "autotune").glob("*.json")
    for damage in ("{not json", json.dumps({"best": "b99", "times": {}}), json.dumps([1])):
        record.write_text(damage)
        tuning = kge.tile.autotune(query, arrays, variants=variants, load=load,
                                   timer=timer_of([3e-4, 2e-4], []))
        assert tuning.variant == "b32x32x8.t2x2" and not tuning.choice.cached
        assert json.loads(record.read_text())["best"] == "b32x32x8.t2x2"


def test_failing_variants_are_reported_and_skipped(cache):
    query, arrays = q1(), q1_arrays()
    variants = {k: v for k, v in kge.tile.tuning_variants(query).items()
                if k in ("auto", "b64x64x16.t4x4", "b32x32x8.t2x2")}

    def load(bundle):
        if bundle.manifest["launches"][0]["grid"][0] == "ceildiv(N, 64)":
            def refused(**arrays):
                raise RuntimeError("too many resources requested for launch")
            return refused
        return FakeProgram(bundle, [])

    times = iter([5e-4, float("nan")])
    tuning = kge.tile.autotune(query, arrays, variants=variants, load=load, cache=False,
                               timer=lambda fn: (fn(), next(times))[1])
    assert tuning.variant == "auto"
    assert tuning.choice.failures == {
        "b64x64x16.t4x4": "RuntimeError: too many resources requested for launch",
        "b32x32x8.t2x2": "timer returned nan"}
    with pytest.raises(kge.autotune.AutotuneError, match="no variant ran: auto: RuntimeError"):
        kge.tile.autotune(query, arrays, variants={"auto": {}}, cache=False,
                          load=lambda bundle: lambda **a: (_ for _ in ()).throw(
                              RuntimeError("launch failed")),
                          timer=lambda fn: fn())


def test_bad_tuning_requests_are_diagnosed(cache):
    query, arrays = q1(), q1_arrays()
    with pytest.raises(kge.autotune.AutotuneError, match=r"needs every parameter.*\['Out'\]"):
        kge.tile.autotune(query, {k: v for k, v in arrays.items() if k != "Out"})
    with pytest.raises(kge.autotune.AutotuneError, match=r"\['X'\] are not parameters of 'q1'"):
        kge.tile.autotune(query, {**arrays, "X": arrays["S"]})
    with pytest.raises(kge.autotune.AutotuneError, match="no variants to tune"):
        kge.tile.autotune(query, arrays, variants={})
    with pytest.raises(kge.autotune.AutotuneError, match=r"outputs \['Y'\] are not among"):
        kge.autotune.select({"a": lambda **a: None}, {"X": 1}, outputs=["Y"])
    with pytest.raises(kge.autotune.AutotuneError, match="cannot copy an array of type int"):
        kge.autotune.select({"a": lambda **a: None}, {"X": 1}, outputs=["X"])
    with pytest.raises(kge.autotune.AutotuneError, match="'X' has no shape"):
        kge.autotune.shape_key({"X": 1})


def test_ties_go_to_the_first_listed():
    choice = kge.autotune.select({"auto": lambda: None, "other": lambda: None}, {},
                                 timer=lambda fn: 1e-4)
    assert choice.best == "auto"
    times = iter([2e-4, 1e-4])
    choice = kge.autotune.select({"a": lambda: None, "b": lambda: None}, {},
                                 timer=lambda fn: next(times))
    assert choice.best == "b" and choice.times == {"a": 2e-4, "b": 1e-4}
