"""Training against chunked shared negatives (kge.shared_negatives) on the
CPU: each chunk's products score what the model scores pair by pair, the
gathered rows' gradients equal autograd's through the pairwise scores, the
row-sparse path trains like PyTorch's sparse optimizers, training learns
the graph, and bad settings are refused."""

import numpy as np
import pytest
import torch

from kge import shared_negatives, training
from kge.shared_negatives import SharedNegatives
from graphs import clustered
from test_training_cpu import assert_train_alike

TRAIN, TEST, ALL = clustered()
ENTITIES, RELATIONS, DIM = 900, 6, 16


def make(name, negatives, gradients="rows", optimizer="adagrad", batch_size=512, seed=0,
         lr=0.05, **kw):
    model = training.Model.create(name, None, None, ENTITIES, RELATIONS, DIM, eager=True,
                                  gradients=gradients, device="cpu", seed=seed)
    return training.Trainer(model, TRAIN, batch_size=batch_size, negatives=negatives,
                            device="cpu", optimizer=optimizer, lr=lr, **kw)


def fixed_draws(trainer, seed):
    """The trainer's negatives drawn from a generator of the test's: the
    test knows them."""
    draws = []

    def corruptions(h, t, corrupt_head, k):
        g = torch.Generator().manual_seed(seed + len(draws))
        drawn = torch.randint(0, ENTITIES, (len(h), k), generator=g)
        draws.append(drawn)
        return drawn

    trainer.corruptions = corruptions
    return draws


@pytest.mark.parametrize("name", list(shared_negatives.MODELS))
@pytest.mark.parametrize("chunk_size", [None, 48, 100])
def test_chunk_scores_equal_the_models_pairwise_scores(name, chunk_size):
    t = make(name, SharedNegatives(37, chunk_size=chunk_size))
    draws = fixed_draws(t, 5)
    batch = torch.as_tensor(TRAIN[:100])
    h, r, tails = batch[:, 0], batch[:, 1], batch[:, 2]
    with torch.no_grad():
        scores = t.negatives.plausibility(t, h, r, tails)
    assert scores.shape == (100, 74)
    drawn = draws[0]
    chunk = chunk_size or 100
    for i in range(100):
        c = i // chunk
        n = 37
        tail_side = drawn[2 * c]
        head_side = drawn[2 * c + 1]
        with torch.no_grad():
            want_tail = t.model.plausibility(h[i].repeat(n), r[i].repeat(n), tail_side)
            want_head = t.model.plausibility(head_side, r[i].repeat(n), tails[i].repeat(n))
        torch.testing.assert_close(scores[i, :n], want_tail, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(scores[i, n:], want_head, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(shared_negatives.MODELS))
@pytest.mark.parametrize("chunk", [16, 20])  # a shorter last chunk / equal chunks (bmm)
def test_row_gradients_equal_autograd_through_pairwise_scores(name, chunk):
    t = make(name, SharedNegatives(11, chunk_size=chunk))
    draws = fixed_draws(t, 9)
    batch = torch.as_tensor(TRAIN[200:240])
    h, r, tails = batch[:, 0], batch[:, 1], batch[:, 2]
    weights = torch.randn(40, 22, generator=torch.Generator().manual_seed(3))
    (t.negatives.plausibility(t, h, r, tails) * weights).sum().backward()
    captured = []
    t.negatives.collect(captured)
    got = {n: torch.zeros_like(p) for n, p in t.model.tables.items()}
    for table, index, rows in captured:
        got[table].index_add_(0, index, rows)
    # The same scores pair by pair through plain PyTorch, dense gradients.
    tables = {n: p.detach().clone().requires_grad_() for n, p in t.model.tables.items()}
    score = training.eager_score(name, gather=lambda table, index: table[index])
    sign = -1 if t.model.distance else 1
    total = 0
    for i in range(40):
        c = i // chunk
        tail_side, head_side = draws[0][2 * c], draws[0][2 * c + 1]
        hh, rr, tt = h[i].repeat(11), r[i].repeat(11), tails[i].repeat(11)
        total = total + (sign * score(**tables, h=hh, r=rr, t=tail_side) * weights[i, :11]).sum()
        total = total + (sign * score(**tables, h=head_side, r=rr, t=tt)
                         * weights[i, 11:]).sum()
    total.backward()
    for n in tables:
        torch.testing.assert_close(got[n], tables[n].grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(shared_negatives.MODELS))
@pytest.mark.parametrize("optimizer", training.OPTIMIZERS)
def test_row_sparse_path_trains_like_pytorchs_sparse_optimizers(name, optimizer):
    rows = make(name, SharedNegatives(32, chunk_size=128), "rows", optimizer)
    sparse = make(name, SharedNegatives(32, chunk_size=128), "sparse", optimizer)
    assert_train_alike(rows, sparse, optimizer)


@pytest.mark.parametrize("name,loss", [("distmult", "softplus"), ("complex", "softmax"),
                                       ("transe_l2", "margin")])
def test_training_with_shared_negatives_learns_the_graph(name, loss):
    t = make(name, SharedNegatives(16, chunk_size=128), loss=loss, margin=2.0, lr=0.1)
    before, _ = training.evaluate(t.model, TEST, ALL)
    for _ in range(8):
        record = t.train_epoch()
        assert np.isfinite(record["loss"])
    after, _ = training.evaluate(t.model, TEST, ALL)
    assert after["mrr"] > 4 * before["mrr"] and after["hits@10"] > 0.08


def test_bad_settings_are_refused():
    for count in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="count must be a positive integer"):
            SharedNegatives(count)
    with pytest.raises(ValueError, match="chunk_size must be a positive integer"):
        SharedNegatives(8, chunk_size=0)
    with pytest.raises(ValueError, match="rotate has no shared-negative form"):
        make("rotate", SharedNegatives(8))
    with pytest.raises(ValueError, match="run on a CUDA device"):
        make("distmult", SharedNegatives(8, products={}))
    with pytest.raises(ValueError, match="negatives must be a positive integer or"):
        make("distmult", "many")
    with pytest.raises(ValueError, match="lack query_gradient, negative_gradient"):
        shared_negatives.TileProducts({"scores": "{}"})
    assert "torch.bmm" in repr(SharedNegatives(8))


def test_a_non_finite_loss_names_the_batch():
    t = make("distmult", SharedNegatives(16))
    with torch.no_grad():
        t.model.tables["Eemb"][TRAIN[3, 0]] = float("nan")
    with pytest.raises(training.TrainingError, match="non-finite loss in epoch 0"):
        t.train_epoch()


def test_out_of_core_training_takes_shared_negatives_from_the_buffer(tmp_path):
    """The partitioned trainers draw a chunk's negatives as they draw
    corruptions: rows of the partitions in the buffer. Out of core with a
    third of the partitions resident, training still learns."""
    from kge import out_of_core as ooc
    t = ooc.OutOfCoreTrainer("distmult", TRAIN, tmp_path, num_entities=ENTITIES,
                             num_relations=RELATIONS, dim=DIM, partitions=9, capacity=3,
                             eager=True, device="cpu", batch_size=512, lr=0.1,
                             negatives=SharedNegatives(16, chunk_size=128))
    drawn = []
    corruptions = t.corruptions

    def recording(h, tails, corrupt_head, k):
        out = corruptions(h, tails, corrupt_head, k)
        drawn.append((out, {t.slot_of[p]: int(np.diff(t.ranges)[p]) for p in t.slot_of}))
        return out

    t.corruptions = recording
    before = training.evaluate(t.gather(), TEST, ALL)[0]["mrr"]
    for _ in range(8):
        assert np.isfinite(t.train_epoch()["loss"])
    after = training.evaluate(t.gather(), TEST, ALL)[0]["mrr"]
    assert after > 4 * before
    for out, sizes in drawn:
        assert out.shape[1] == 16 and out.shape[0] % 2 == 0
        slot, row = out // t.rows, out % t.rows
        limit = torch.tensor([sizes.get(s, 0) for s in range(t.capacity)])
        assert bool((row < limit[slot]).all())
        assert set(slot.unique().tolist()) <= set(sizes)


def test_kge_train_trains_against_shared_negatives(tmp_path):
    """kge-train --shared N --chunk C on the CPU (products by torch.bmm):
    every epoch's loss finite, the test metrics at the end."""
    import json
    import os
    import pathlib
    import subprocess
    import sys
    data = tmp_path / "data.npz"
    np.savez(data, train=TRAIN, valid=TEST[:100], test=TEST[100:], num_entities=ENTITIES,
             num_relations=RELATIONS)
    package = str(pathlib.Path(training.__file__).resolve().parents[1])
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([package, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "kge.train_cli", "--model", "complex", "--data", str(data),
         "--dim", "16", "--batch-size", "512", "--shared", "16", "--chunk", "128",
         "--loss", "softmax", "--epochs", "3", "--device", "cpu"],
        capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["epoch"] for r in records[:-1]] == [0, 1, 2]
    assert all(np.isfinite(r["loss"]) for r in records[:-1])
    assert records[-1]["test"]["mrr"] > 0.02
