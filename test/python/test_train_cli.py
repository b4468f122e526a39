"""kge-train's argument and input checks (before any GPU work): bad
arguments, data files that are missing, malformed or out of range, missing
bundles each end the run with a message naming the problem. Training itself
runs in the GPU suite (test/gpu/test_training.py)."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from kge import train_cli


def data_file(tmp_path, **override):
    arrays = {"train": np.array([[0, 0, 1], [1, 1, 2]]), "valid": np.array([[0, 0, 2]]),
              "test": np.array([[2, 1, 0]]), "num_entities": 3, "num_relations": 2}
    arrays.update(override)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    path = tmp_path / "data.npz"
    np.savez(path, **arrays)
    return path


def run(*argv):
    # The kge package these tests import (the build's), for the command too.
    package_root = str(pathlib.Path(train_cli.__file__).resolve().parents[1])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([package_root] + [p for p in [os.environ.get(
               "PYTHONPATH")] if p])}
    return subprocess.run([sys.executable, "-m", "kge.train_cli", *map(str, argv)],
                          capture_output=True, text=True, env=env)


def test_load_data_reads_a_valid_file(tmp_path):
    train, valid, test, entities, relations = train_cli.load_data(data_file(tmp_path))
    assert train.shape == (2, 3) and valid.shape == (1, 3) and test.shape == (1, 3)
    assert (entities, relations) == (3, 2)


@pytest.mark.parametrize("override,message", [
    ({"valid": None}, "lacks valid"),
    ({"train": np.zeros((2, 2), np.int64)}, "'train' must be an integer \\[N, 3\\] array"),
    ({"test": np.array([[0, 0, 3]])}, "'test' indexes beyond 3 entities or 2 relations"),
    ({"train": np.array([[0, 2, 1]])}, "'train' indexes beyond"),
    ({"train": np.zeros((0, 3), np.int64)}, "no training triples"),
    ({"train": np.array([[0.0, 0.0, 1.0]])}, "must be an integer"),
])
def test_bad_data_is_refused(tmp_path, override, message):
    with pytest.raises(ValueError, match=message):
        train_cli.load_data(data_file(tmp_path, **override))


def test_command_reports_bad_input(tmp_path):
    missing = run("--model", "distmult", "--data", tmp_path / "none.npz")
    assert missing.returncode == 1 and "not a readable .npz data file" in missing.stderr
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    bad = run("--model", "distmult", "--data", tmp_path / "bad.npz")
    assert bad.returncode == 1 and "not a readable .npz data file" in bad.stderr
    no_bundle = run("--model", "distmult", "--data", data_file(tmp_path), "--bundles", tmp_path)
    assert no_bundle.returncode == 1 and "no bundle" in no_bundle.stderr
    assert "Traceback" not in missing.stderr + bad.stderr + no_bundle.stderr


def test_command_refuses_bad_arguments(tmp_path):
    data = data_file(tmp_path)
    for argv, message in ((["--model", "transx"], "invalid choice"),
                          (["--model", "distmult", "--epochs", "0"], "--epochs must be positive"),
                          (["--model", "distmult", "--resume"], "--resume needs --checkpoint"),
                          (["--model", "distmult", "--shared", "8", "--chunk", "0"],
                           "--chunk must be positive"),
                          (["--model", "distmult", "--shared", "-1"], "--shared must be positive"),
                          (["--model", "rotate", "--shared", "8"],
                           "rotate has no shared-negative form")):
        result = run(*argv, "--data", data)
        assert result.returncode == 2 and message in result.stderr, result.stderr
