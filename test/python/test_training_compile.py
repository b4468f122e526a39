"""The parts of kge.training that run without a GPU: each model's forward
and gradient bundles (compile_model) and the filter lists of the ranking
protocol. The training loop itself runs in the GPU suite
(test/gpu/test_training.py)."""

import numpy as np
import pytest

from kge import training


@pytest.mark.parametrize("name", sorted(training.MODELS))
def test_models_compile_to_a_forward_and_a_gradient_bundle(name):
    example, _, tables = training.MODELS[name]
    forward, gradient, outer_sum = training.compile_model(name, 32)
    fwd = forward.validate()
    grad = gradient.validate()
    # A table of matrices comes as the factors of its outer products, with
    # the bundle that sums them per matrix.
    assert (outer_sum is not None) == training.has_matrices(name)
    if outer_sum is not None:
        assert outer_sum.validate()["name"] == "outer_sum"
        assert {p["name"] for p in grad["params"] if p["name"].startswith("d_Pm")} == {
            "d_Pm_r_u0", "d_Pm_r_v0"}
    assert fwd["name"] == example and grad["name"] == example + "_grad"
    arguments = [p["name"] for p in fwd["params"] if p["role"] != "result"]
    assert [p["name"] for p in grad["params"] if p["role"] != "result"] == arguments + ["d_score"]
    results = {p["name"] for p in grad["params"] if p["role"] == "result"}
    # One gradient per (table, index array) the model gathers through.
    assert {r.split("_")[1] for r in results} == set(tables)
    for p in fwd["params"]:
        if p["role"] == "table":
            assert p["shape"][1:] == [32] * (2 if p["name"] in training.MATRIX_TABLES else 1)


def test_compile_model_refuses_bad_arguments():
    with pytest.raises(ValueError, match="unknown model 'transx'"):
        training.compile_model("transx", 32)
    with pytest.raises(ValueError, match="dim must be a positive integer"):
        training.compile_model("distmult", 0)


def test_filter_lists_leave_out_the_other_true_entities():
    rng = np.random.default_rng(0)
    known = np.unique(rng.integers(0, 6, (80, 3)), axis=0)
    known[:, 1] %= 2
    known = np.unique(known, axis=0)
    test = known[::7]
    (tail_offsets, tails), (head_offsets, heads) = training.filter_lists(test, known)
    for k, (h, r, t) in enumerate(test.tolist()):
        other_tails = sorted(x for hh, rr, x in known.tolist() if (hh, rr) == (h, r) and x != t)
        other_heads = sorted(x for x, rr, tt in known.tolist() if (rr, tt) == (r, t) and x != h)
        assert sorted(tails[tail_offsets[k]:tail_offsets[k + 1]].tolist()) == other_tails
        assert sorted(heads[head_offsets[k]:head_offsets[k + 1]].tolist()) == other_heads


def test_cpu_training_example_learns():
    """examples/python/train_cpu.py: DistMult trained with its gradient
    function on the CPU path; it fails unless the loss falls and the
    filtered MRR at least doubles."""
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    packages = str(pathlib.Path(training.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [packages] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    result = subprocess.run([sys.executable, str(root / "examples" / "python" / "train_cpu.py")],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "filtered test MRR after 12 epochs" in result.stdout


def test_load_bundles_reads_what_compile_model_gives(tmp_path):
    forward, gradient, outer_sum = training.compile_model("complex", 16)
    assert outer_sum is None
    forward.save(tmp_path / "complex.fwd.D16.kgebundle")
    gradient.save(tmp_path / "complex.grad.D16.kgebundle")
    assert training.load_bundles(tmp_path, "complex", 16) == (forward.text, gradient.text, None)
    with pytest.raises(FileNotFoundError, match="complex.fwd.D32.kgebundle"):
        training.load_bundles(tmp_path, "complex", 32)
    forward, gradient, outer_sum = training.compile_model("transr", 16)
    forward.save(tmp_path / "transr.fwd.D16.kgebundle")
    gradient.save(tmp_path / "transr.grad.D16.kgebundle")
    with pytest.raises(FileNotFoundError, match="outer_sum.kgebundle"):
        training.load_bundles(tmp_path, "transr", 16)
    outer_sum.save(tmp_path / "outer_sum.kgebundle")
    assert training.load_bundles(tmp_path, "transr", 16) == (
        forward.text, gradient.text, outer_sum.text)
