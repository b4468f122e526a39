"""Every example score function on the CPU path against NumPy.

The examples are compiled by kge-cpu-runner (kge-lower-to-cpu + MLIR's
ExecutionEngine) and run on random tables and index batches: uniform,
duplicate-heavy, all-identical and duplicate-free indices, batch sizes from
1 up, lengths that are not powers of two.
"""

import zlib

import numpy as np
import pytest

import kgetest
from reference import EXAMPLES

# (batch size, embedding length, index kind, table rows)
CASES = [
    (1, 7, "uniform", 50),
    (37, 100, "duplicate_heavy", 50),
    (256, 128, "duplicate_free", 300),
    (64, 33, "all_identical", 20),
    (1000, 64, "uniform", 2000),
]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
@pytest.mark.parametrize("batch,length,kind,rows", CASES,
                         ids=[f"B{b}-D{d}-{k}" for b, d, k, _ in CASES])
def test_example_matches_numpy(tools, examples_dir, tmp_path, name, batch, length, kind, rows):
    path = examples_dir / f"{name}.mlir"
    sig = kgetest.signature(tools, path)
    rng = np.random.default_rng(zlib.crc32(f"{name}-{batch}-{length}-{kind}".encode()))
    args = kgetest.make_inputs(sig, rng, batch, kgetest.sizes_for(sig, length), kind, rows)
    (score,) = kgetest.run_cpu(tools, path, args, tmp_path).values()
    reference = EXAMPLES[name](**args)
    assert score.dtype == np.float32 and score.shape == (batch,)
    assert kgetest.scores_match(score, reference), (
        f"max error {np.max(np.abs(score - reference))}")


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_perturbed_result_is_rejected(tools, examples_dir, tmp_path, name):
    """The comparison is tight enough to catch one wrong score."""
    path = examples_dir / f"{name}.mlir"
    sig = kgetest.signature(tools, path)
    rng = np.random.default_rng(7)
    args = kgetest.make_inputs(sig, rng, 16, kgetest.sizes_for(sig, 24), "uniform", 40)
    (score,) = kgetest.run_cpu(tools, path, args, tmp_path).values()
    reference = EXAMPLES[name](**args)
    assert kgetest.scores_match(score, reference)
    for position in (0, 15):
        perturbed = score.copy()
        perturbed[position] += np.float32(1e-3 * max(np.max(np.abs(reference)), 1.0))
        assert not kgetest.scores_match(perturbed, reference)
    swapped = score[::-1].copy()
    assert not kgetest.scores_match(swapped, reference)
