"""The training engine on the CPU (kge.training with plain PyTorch scores):
the row-sparse optimizer equals PyTorch's optimizers, checkpoints resume
exactly, and non-finite losses stop training naming their triples."""

import numpy as np
import pytest
import torch

from kge import checkpoint, training
from graphs import clustered

TRAIN, TEST, ALL = clustered()
ENTITIES, RELATIONS = 900, 6


def trainer(name, gradients="rows", optimizer="adagrad", seed=0, **options):
    model = training.Model.create(name, None, None, ENTITIES, RELATIONS, 16, eager=True,
                                  gradients=gradients, device="cpu", seed=seed)
    return training.Trainer(model, TRAIN, batch_size=512, negatives=8, device="cpu",
                            optimizer=optimizer, lr=0.05, **options)


@pytest.mark.parametrize("name", list(training.MODELS))
@pytest.mark.parametrize("optimizer", training.OPTIMIZERS)
def test_row_sparse_updates_equal_pytorchs_sparse_optimizers(name, optimizer):
    # Adagrad with sparse gradients and SparseAdam (torch.optim) against
    # RowSparseOptimizer fed the gathered rows' gradients.
    if training.has_matrices(name) and optimizer == "adam":
        # TransR's matrices get dense gradients in plain PyTorch.
        with pytest.raises(ValueError, match="SparseAdam refuses"):
            trainer(name, "sparse", optimizer)
        return
    rows, sparse = trainer(name, "rows", optimizer), trainer(name, "sparse", optimizer)
    assert isinstance(rows.optimizer, training.RowSparseOptimizer)
    assert not isinstance(sparse.optimizer, training.RowSparseOptimizer)
    assert_train_alike(rows, sparse, optimizer)


def assert_train_alike(rows, sparse, optimizer):
    """Two epochs of `rows` (the row-sparse optimizer) and `sparse`
    (PyTorch's sparse optimizer) give the same losses and tables."""
    for _ in range(2):
        a, b = rows.train_epoch(), sparse.train_epoch()
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    # Adam divides by the root of the second moment: float rounding of
    # sums in another order shows more.
    tolerance = 1e-4 if optimizer == "adagrad" else 1e-3
    for table in rows.model.tables:
        torch.testing.assert_close(rows.model.tables[table], sparse.model.tables[table],
                                   rtol=tolerance, atol=tolerance)


def test_training_learns_the_graph():
    t = trainer("distmult")
    before, _ = training.evaluate(t.model, TEST, ALL)
    for _ in range(8):
        t.train_epoch()
    after, ranks = training.evaluate(t.model, TEST, ALL)
    assert ranks.shape == (len(TEST), 2)
    assert after["mrr"] > 5 * before["mrr"] and after["hits@10"] > 0.1


@pytest.mark.parametrize("optimizer", training.OPTIMIZERS)
@pytest.mark.parametrize("gradients", ["rows", "sparse"])
def test_resuming_a_checkpoint_continues_as_if_uninterrupted(tmp_path, optimizer, gradients):
    straight = trainer("complex", gradients, optimizer)
    for _ in range(3):
        straight.train_epoch()
    stopped = trainer("complex", gradients, optimizer)
    for _ in range(2):
        stopped.train_epoch()
    stopped.save(tmp_path / "model.ckpt")
    resumed = trainer("complex", gradients, optimizer, seed=7)  # other tables, other state
    resumed.load(tmp_path / "model.ckpt")
    assert resumed.epoch == 2 and len(resumed.log) == 2
    resumed.train_epoch()
    for table in straight.model.tables:
        assert torch.equal(straight.model.tables[table], resumed.model.tables[table]), table


def test_checkpoints_of_other_models_or_optimizers_are_refused(tmp_path):
    trainer("distmult").save(tmp_path / "a.ckpt")
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model"):
        trainer("distmult", optimizer="adam").load(tmp_path / "a.ckpt")
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model"):
        trainer("transe_l2").load(tmp_path / "a.ckpt")
    data = (tmp_path / "a.ckpt").read_bytes()
    (tmp_path / "b.ckpt").write_bytes(data[:-10])
    with pytest.raises(checkpoint.CheckpointError, match="truncated"):
        trainer("distmult").load(tmp_path / "b.ckpt")


def test_a_non_finite_loss_stops_training_naming_its_triples(tmp_path):
    t = trainer("transe_l1")
    t.save(tmp_path / "last.ckpt")
    before = (tmp_path / "last.ckpt").read_bytes()
    with torch.no_grad():
        t.model.tables["Eemb"][int(TRAIN[0, 0])] = float("nan")
    with pytest.raises(training.TrainingError,
                       match=r"non-finite loss in epoch 0, batch \d+ \(its first triples: \("):
        t.train_epoch()
    assert (tmp_path / "last.ckpt").read_bytes() == before


def test_bad_settings_and_triples_are_refused():
    with pytest.raises(ValueError, match="beyond the model's tables"):
        training.Trainer(trainer("distmult").model, np.array([[0, 0, ENTITIES]]), device="cpu")
    with pytest.raises(ValueError, match="beyond the model's tables"):
        training.Trainer(trainer("distmult").model, np.array([[0, RELATIONS, 1]]), device="cpu")
    with pytest.raises(ValueError, match="must be integers"):
        training.Trainer(trainer("distmult").model, np.array([[0.5, 0, 1]]), device="cpu")
    with pytest.raises(ValueError, match="unknown loss 'hinge'"):
        trainer("distmult", loss="hinge")
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        training.Trainer(trainer("distmult").model, TRAIN, batch_size=0, device="cpu")
    # The graphed step and the fused updates run on CUDA devices only.
    with pytest.raises(ValueError, match="cannot be captured in a CUDA graph: the trainer "
                                         "is not on a CUDA device"):
        trainer("distmult", graph=True)
    with pytest.raises(ValueError, match="graph must be 'auto', True or False"):
        trainer("distmult", graph="always")
    assert trainer("distmult").graphed is None
    tables = {"E": torch.zeros(4, 2)}
    with pytest.raises(ValueError, match="fused updates run on a CUDA device"):
        training.RowSparseOptimizer(tables, fused=True)
    with pytest.raises(ValueError, match="fused must be 'auto', True or False"):
        training.RowSparseOptimizer(tables, fused="yes")
    assert training.RowSparseOptimizer(tables).kernels is None


def test_sampled_evaluation_ranks_among_drawn_candidates():
    t = trainer("distmult")
    for _ in range(4):
        t.train_epoch()
    full, _ = training.evaluate(t.model, TEST, ALL)
    sampled, ranks = training.evaluate(t.model, TEST, ALL, candidates=50, seed=3)
    assert ranks.shape == (len(TEST), 2) and ranks.min() >= 1 and ranks.max() <= 51
    # Fewer candidates: better ranks than against all 900 entities.
    assert sampled["mrr"] > full["mrr"]
    again, _ = training.evaluate(t.model, TEST, ALL, candidates=50, seed=3)
    assert again == sampled
    with pytest.raises(ValueError, match="candidates must be a positive integer"):
        training.evaluate(t.model, TEST, ALL, candidates=0)


@pytest.mark.parametrize("method", training.OPTIMIZERS)
@pytest.mark.parametrize("edges", [40, 1])  # dense buffer / sorted rows
def test_a_whole_table_gradient_updates_like_its_rows(method, edges):
    """A matrix table's gradient handed whole (kge.autograd.WholeTable, with
    the edges' rows as its index) updates like the same gradient given as
    the rows the edges reached: only those rows, with lazy Adam's states of
    the others untouched."""
    from kge.autograd import WholeTable
    generator = torch.Generator().manual_seed(edges)
    start = torch.randn(6, 3, 3, generator=generator)
    index = torch.randint(0, 6, (edges,), generator=generator)
    index[0] = 4  # at least one row reached
    reached = torch.unique(index)
    whole = torch.zeros(6, 3, 3)
    whole[reached] = torch.randn(len(reached), 3, 3, generator=generator)
    tables = [{"Pm": start.clone()}, {"Pm": start.clone()}]
    optimizers = [training.RowSparseOptimizer(t, method, lr=0.1) for t in tables]
    for _ in range(3):
        optimizers[0].step([("Pm", index, WholeTable(whole))])
        optimizers[1].step([("Pm", reached, whole[reached])])
    torch.testing.assert_close(tables[0]["Pm"], tables[1]["Pm"], rtol=1e-6, atol=1e-6)
    untouched = torch.ones(6, dtype=torch.bool)
    untouched[reached] = False
    assert torch.equal(tables[0]["Pm"][untouched], start[untouched])
    for a, b in zip(optimizers[0].state["Pm"], optimizers[1].state["Pm"]):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


def test_losses_equal_their_formulas():
    """Each loss of the engine on hand-made scores: margin ranking,
    softplus, self-adversarial, and softmax cross-entropy (against
    PyTorch's cross_entropy with the positive as the class), which also
    trains."""
    F = torch.nn.functional
    generator = torch.Generator().manual_seed(5)
    positive = torch.randn(7, generator=generator)
    negative = torch.randn(7, 4, generator=generator)
    scores = torch.cat([positive[:, None], negative], 1)
    expected = {
        "margin": F.relu(2.0 - positive[:, None] + negative).mean(),
        "softplus": F.softplus(torch.cat([-positive, negative.reshape(-1)])).mean(),
        "adversarial": (-F.logsigmoid(2.0 + positive).mean()
                        - (F.softmax(negative, 1) * F.logsigmoid(-2.0 - negative)).sum(1).mean()),
        "softmax": F.cross_entropy(scores, torch.zeros(7, dtype=torch.int64))}
    assert set(expected) == set(training.LOSSES)
    for name, value in expected.items():
        torch.testing.assert_close(training._loss(name, positive, negative, 2.0, 1.0), value)
    t = trainer("distmult", loss="softmax")
    losses = [t.train_epoch()["loss"] for _ in range(3)]
    assert losses[-1] < losses[0], losses
