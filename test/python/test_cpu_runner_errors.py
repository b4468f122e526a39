"""Bad input to the CPU runner: a clear message naming the problem and exit
code 1, never a crash, a hang or a silent wrong result."""

import subprocess

import numpy as np
import pytest

import kgetest


@pytest.fixture
def transe(examples_dir):
    return examples_dir / "transe_l2.mlir"


def good_args(rng, batch=8, rows=20, length=5):
    return {"Eemb": rng.uniform(-1, 1, (rows, length)).astype(np.float32),
            "Remb": rng.uniform(-1, 1, (4, length)).astype(np.float32),
            "h": rng.integers(0, rows, batch), "r": rng.integers(0, 4, batch),
            "t": rng.integers(0, rows, batch)}


def test_good_arguments_run(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(0))
    (score,) = kgetest.run_cpu(tools, transe, args, tmp_path).values()
    assert score.shape == (8,)


@pytest.mark.parametrize("position,value", [(0, 20), (7, -1), (3, 2**40)])
def test_index_out_of_range(tools, transe, tmp_path, position, value):
    args = good_args(np.random.default_rng(1))
    args["t"][position] = value
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert (f"index {value} at position {position} of 't' is out of range for "
            f"table 'Eemb' with 20 rows") in err


def test_relation_index_checked_against_both_tables(tools, examples_dir, tmp_path):
    """r indexes Remb (4 rows) and Pm (3 rows): the smaller bound applies."""
    rng = np.random.default_rng(2)
    args = {"Eemb": rng.uniform(size=(10, 4)).astype(np.float32),
            "Remb": rng.uniform(size=(4, 3)).astype(np.float32),
            "Pm": rng.uniform(size=(3, 4, 3)).astype(np.float32),
            "h": np.zeros(5, np.int64), "r": np.array([0, 1, 2, 3, 0]),
            "t": np.zeros(5, np.int64)}
    err = kgetest.run_cpu_failing(tools, examples_dir / "transr.mlir", args, tmp_path)
    assert "index 3 at position 3 of 'r' is out of range for table 'Pm' with 3 rows" in err


def test_wrong_dtype(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(3))
    args["Remb"] = args["Remb"].astype(np.float64)
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert "table 'Remb' expects dtype f32, got f64" in err


def test_float_indices(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(3))
    args["h"] = args["h"].astype(np.float32)
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert "indices 'h' expects dtype i64, got f32" in err


def test_wrong_rank(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(4))
    args["Eemb"] = args["Eemb"].reshape(-1)
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert "table 'Eemb' expects rank 2 (shape [N_Eemb, D_Eemb]), got rank 1" in err


def test_lengths_that_must_agree(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(5))
    args["Remb"] = np.zeros((4, 6), np.float32)
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert "table 'Remb' has size 6 in dimension 1 but 'D_Eemb' is 5 (set by 'Eemb')" in err


def test_batch_sizes_that_must_agree(tools, transe, tmp_path):
    args = good_args(np.random.default_rng(6))
    args["t"] = args["t"][:5]
    err = kgetest.run_cpu_failing(tools, transe, args, tmp_path)
    assert "indices 't' has size 5 in dimension 0 but 'B' is 8 (set by 'h')" in err


def test_static_size_mismatch(tools, tmp_path):
    path = tmp_path / "static.mlir"
    path.write_text("""
bvec.func @f(%E: !bvec.table<10x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<10x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %s = bvec.norm %v, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}""")
    err = kgetest.run_cpu_failing(tools, path, {"E": np.zeros((10, 3), np.float32),
                                                "h": np.zeros(2, np.int64)}, tmp_path)
    assert "table 'E' expects size 4 in dimension 1 (shape [10, 4]), got 3 (shape [10, 3])" in err


def run_raw(tools, *args):
    return subprocess.run([str(tools["kge-cpu-runner"]), *map(str, args)],
                          capture_output=True, text=True)


def test_missing_argument(tools, transe):
    result = run_raw(tools, transe)
    assert result.returncode == 1
    assert "missing argument 'Eemb' (pass --arg Eemb=FILE.npy or --random)" in result.stderr


def test_unknown_parameter_names(tools, transe, tmp_path):
    result = run_raw(tools, transe, "--random", "--arg", f"E={tmp_path / 'x.npy'}")
    assert result.returncode == 1
    assert "'transe_l2' has no argument named 'E'" in result.stderr
    result = run_raw(tools, transe, "--random", "--out", f"h={tmp_path / 'x.npy'}")
    assert "'transe_l2' has no result named 'h'" in result.stderr
    result = run_raw(tools, transe, "--random", "--arg", "Eemb")
    assert "expected NAME=FILE, got 'Eemb'" in result.stderr


@pytest.mark.parametrize("content,message", [
    (b"", "missing the \\x93NUMPY magic"),
    (b"\x93NUMPY\x01\x00\xff\xff{", "truncated header"),
    (b"\x93NUMPY\x09\x00\x10\x00" + b" " * 16, "unknown format version 9"),
])
def test_corrupt_npy_file(tools, transe, tmp_path, content, message):
    bad = tmp_path / "bad.npy"
    bad.write_bytes(content)
    result = run_raw(tools, transe, "--random", "--arg", f"Eemb={bad}")
    assert result.returncode == 1
    assert message in result.stderr


def test_npy_dtype_order_and_size(tools, transe, tmp_path):
    cases = [(np.zeros((3, 4), np.complex64), "unsupported dtype '<c8'"),
             (np.asfortranarray(np.zeros((3, 4), np.float32)), "Fortran-ordered"),
             (np.zeros((3, 4), ">f4"), "unsupported dtype '>f4'")]
    for array, message in cases:
        np.save(tmp_path / "a.npy", array)
        result = run_raw(tools, transe, "--random", "--arg", f"Eemb={tmp_path / 'a.npy'}")
        assert result.returncode == 1 and message in result.stderr, result.stderr
    np.save(tmp_path / "a.npy", np.zeros((3, 4), np.float32))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(data[:-4])
    result = run_raw(tools, transe, "--random", "--arg", f"Eemb={tmp_path / 'a.npy'}")
    assert "expected 48 bytes of data, got 44" in result.stderr


def test_function_selection(tools, tmp_path, examples_dir):
    both = tmp_path / "two.mlir"
    both.write_text((examples_dir / "transe_l1.mlir").read_text()
                    + (examples_dir / "distmult.mlir").read_text())
    result = run_raw(tools, both, "--random")
    assert "the module has several functions to run; name the one to run" in result.stderr
    result = run_raw(tools, both, "--random", "--function", "nope")
    assert "the module has no bvec.func or tile function named 'nope'" in result.stderr
    result = run_raw(tools, both, "--random", "--function", "distmult", "--print")
    assert result.returncode == 0 and "score: shape [4] f32" in result.stdout


def test_malformed_ir(tools, tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("bvec.func @f(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {\n")
    result = run_raw(tools, path, "--random")
    assert result.returncode == 1
    assert "bad.mlir:1:69: error: expected operation name in quotes" in result.stderr


def test_batch_size_without_indices(tools, tmp_path):
    """A function without index arrays takes its batch size from the caller."""
    path = tmp_path / "const.mlir"
    path.write_text("""
bvec.func @c(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.5 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}""")
    result = run_raw(tools, path, "--random")
    assert result.returncode == 1
    assert "the size 'B' of result 's' is not determined by the arguments; pass a batch size" in result.stderr
    result = run_raw(tools, path, "--random", "--batch-size", "3", "--print")
    assert result.returncode == 0
    assert "[2] 1.5" in result.stdout
