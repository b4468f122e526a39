"""The training engine (kge.training) on the GPU: KGE's kernels train like
the same loop in plain PyTorch, evaluation equals the host protocol of
kge.link_prediction, non-finite losses stop training with the batch named,
checkpoints round-trip and refuse another model's.

Bundles from test/gpu/build_gradient_bundles.py (<model>.{fwd,grad}.D32).
"""

import numpy as np
import pytest
import torch

from kge import training
from kge.link_prediction import filtered_ranks, ranking_metrics
from test_gradients import BUNDLES

ENTITIES, RELATIONS, DIM = 200, 7, 32


def graph(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    p = np.arange(1, ENTITIES + 1, dtype=np.float64) ** -0.9
    p /= p.sum()
    heads, tails = rng.choice(ENTITIES, n, p=p), rng.choice(ENTITIES, n, p=p)
    return np.unique(np.stack([heads, rng.integers(0, RELATIONS, n), tails], 1), axis=0)


def model(name, eager=False, seed=0):
    fwd, grad, outer_sum = training.load_bundles(BUNDLES, name, DIM)
    return training.Model.create(name, fwd, grad, ENTITIES, RELATIONS, DIM, seed=seed,
                                 eager=eager, gradients="sparse" if eager else "rows",
                                 outer_sum=outer_sum)


def assert_tables_close(name, first, second, tolerance=1e-4):
    for n in first:
        difference = (first[n] - second[n]).abs().max().item()
        assert difference < tolerance, f"{name}: table {n} differs by {difference}"


@pytest.mark.parametrize("name,loss,optimizer,sampler", [
    ("transe_l2", "margin", "adagrad", "uniform"),
    ("distmult", "softplus", "adagrad", "degree"),
    ("complex", "softplus", "adam", "uniform"),
    ("rotate", "adversarial", "adam", "degree"),
    ("transr", "margin", "adagrad", "uniform")])
def test_kernels_train_like_pytorch(name, loss, optimizer, sampler):
    triples = graph()
    tables = []
    for eager in (False, True):
        m = model(name, eager)
        trainer = training.Trainer(m, triples, batch_size=256, negatives=8, loss=loss,
                                   optimizer=optimizer, lr=0.05, margin=2.0, seed=1,
                                   sampler=sampler)
        record = trainer.train_epoch()
        assert np.isfinite(record["loss"])
        tables.append({n: t.detach().clone() for n, t in m.tables.items()})
    assert_tables_close(name, *tables)


@pytest.mark.parametrize("name,loss,optimizer,sampler", [
    ("transe_l2", "adversarial", "adam", "uniform"),
    ("distmult", "softplus", "adagrad", "degree"),
    ("complex", "margin", "adam", "degree"),
    ("transr", "adversarial", "adam", "uniform"),
    ("transr", "softplus", "adagrad", "degree")])
def test_graphed_step_trains_like_eager_steps(name, loss, optimizer, sampler):
    """The step captured in a CUDA graph (after its warm-up steps, with an
    epoch's short last batch run eagerly) trains like eager steps: the
    same random draws, the same tables, Adam's bias correction counted per
    replay; the optimizer's step count is the batches'."""
    triples = graph()
    tables, logs = [], []
    for mode in (True, False):
        m = model(name)
        trainer = training.Trainer(m, triples, batch_size=256, negatives=8, loss=loss,
                                   optimizer=optimizer, lr=0.05, margin=2.0, seed=3,
                                   sampler=sampler, graph=mode)
        for _ in range(2):
            trainer.train_epoch()
        if mode:
            assert trainer.graphed.graph is not None and trainer.graphed.reason is None
        else:
            assert trainer.graphed is None
        assert trainer.optimizer.steps == 2 * -(-len(triples) // 256)
        tables.append({n: t.detach().clone() for n, t in m.tables.items()})
        logs.append([r["loss"] for r in trainer.log])
    np.testing.assert_allclose(logs[0], logs[1], rtol=1e-5)
    assert_tables_close(name, *tables)


def test_graphed_step_is_refused_or_stays_eager_where_it_cannot_capture():
    """Plain PyTorch steps are refused with graph=True and run eagerly with
    "auto"; a table larger than a batch gathers (its update sorts) keeps
    the steps eager after the warm-up, with the reason, and trains like
    graph=False."""
    triples = graph()
    assert training.Trainer(model("distmult", eager=True), triples).graphed is None
    with pytest.raises(ValueError, match="KGE's kernels"):
        training.Trainer(model("distmult", eager=True), triples, graph=True)
    with pytest.raises(ValueError, match="graph must be"):
        training.Trainer(model("distmult"), triples, graph="yes")
    tables = []
    for mode in ("auto", False):
        m = model("distmult")
        trainer = training.Trainer(m, triples[:200], batch_size=8, negatives=2, lr=0.05,
                                   graph=mode)
        trainer.train_epoch()
        if mode == "auto":
            assert trainer.graphed.graph is None
            assert "more rows than DENSE_RATIO times a batch's" in trainer.graphed.reason
        tables.append(m.tables["Eemb"].detach().clone())
    difference = (tables[0] - tables[1]).abs().max().item()
    assert difference < 1e-4, difference


def test_graphed_step_resumes_from_a_checkpoint(tmp_path):
    """Loading a checkpoint into a trainer whose step was captured captures
    it again from the restored generator: the resumed epoch equals the
    epoch that followed the save."""
    triples = graph()
    m = model("complex")
    trainer = training.Trainer(m, triples, batch_size=256, negatives=8, optimizer="adam",
                               lr=0.05, graph=True)
    trainer.train_epoch()
    path = tmp_path / "model.ckpt"
    trainer.save(path)
    trainer.train_epoch()
    after = {n: t.detach().clone() for n, t in m.tables.items()}
    trainer.load(path)
    assert trainer.graphed.graph is None
    trainer.train_epoch()
    assert trainer.graphed.graph is not None
    for n, t in m.tables.items():
        assert (t.detach() - after[n]).abs().max().item() < 1e-5, n


def test_training_lowers_the_loss():
    triples = graph()
    trainer = training.Trainer(model("distmult"), triples, batch_size=256, negatives=8,
                               loss="softplus", lr=0.1)
    losses = [trainer.train_epoch()["loss"] for _ in range(5)]
    assert losses[-1] < 0.8 * losses[0], losses


def test_evaluation_equals_the_host_protocol():
    triples = graph()
    m = model("distmult")
    training.Trainer(m, triples, batch_size=256, lr=0.1).train_epoch()
    test, known = triples[:40], triples
    metrics, ranks = training.evaluate(m, test, known, chunk_edges=ENTITIES * 7)

    def score(h, r, t):
        with torch.no_grad():
            as_tensor = lambda a: torch.as_tensor(a, device="cuda")
            return m.plausibility(as_tensor(h), as_tensor(r), as_tensor(t)).cpu().numpy()

    host = filtered_ranks(score, test, known, ENTITIES, RELATIONS)
    np.testing.assert_array_equal(ranks, host)
    assert metrics == ranking_metrics(host)


def test_non_finite_loss_stops_with_the_batch():
    triples = graph()
    m = model("distmult")
    with torch.no_grad():
        m.tables["Eemb"][:] = float("nan")
    trainer = training.Trainer(m, triples, batch_size=256)
    with pytest.raises(training.TrainingError, match="non-finite loss in epoch 0, batch 0"):
        trainer.train_epoch()


def test_checkpoint_round_trip_and_refusal(tmp_path):
    triples = graph()
    m = model("distmult")
    trainer = training.Trainer(m, triples, batch_size=256)
    trainer.train_epoch()
    path = tmp_path / "model.ckpt"
    trainer.save(path)
    saved = {n: t.detach().clone() for n, t in m.tables.items()}
    trainer.train_epoch()
    trainer.load(path)
    assert trainer.epoch == 1
    for n, t in m.tables.items():
        assert torch.equal(t.detach(), saved[n])
    other = training.Trainer(model("complex"), triples, batch_size=256)
    with pytest.raises(ValueError, match="model"):
        other.load(path)


def test_bad_arguments_are_refused():
    m = model("distmult")
    with pytest.raises(ValueError, match="beyond the model's tables"):
        training.Trainer(m, np.array([[0, 0, ENTITIES]]))
    with pytest.raises(ValueError, match="unknown loss"):
        training.Trainer(m, graph(), loss="hinge")
    with pytest.raises(ValueError, match="non-empty"):
        training.Trainer(m, np.zeros((0, 3), np.int64))


@pytest.mark.parametrize("fused", (True, False))
@pytest.mark.parametrize("method", training.OPTIMIZERS)
@pytest.mark.parametrize("rows,row", [(100, (16,)), (5000, (16,)),  # summed densely / sorted
                                      (100, (6,)), (5000, (3, 5))])  # scalar atomics, matrices
def test_row_sparse_optimizer_equals_torch(method, rows, row, fused):
    """Both ways of summing duplicates (a buffer of the table's size when
    the table has at most DENSE_RATIO times the rows a step gathers, sorted unique
    rows otherwise), through the device library's kernels or PyTorch's
    operations, update like torch.optim.Adagrad / SparseAdam: rows of 16
    floats (vector atomics), of 6 (scalar ones) and matrices."""
    generator = torch.Generator(device="cuda").manual_seed(rows)
    start = torch.randn(rows, *row, device="cuda", generator=generator)
    ours = {"T": start.clone()}
    theirs = torch.nn.Parameter(start.clone())
    optimizer = training.RowSparseOptimizer(ours, method, lr=0.05, fused=fused)
    assert (optimizer.kernels is not None) == fused
    reference = (torch.optim.Adagrad([theirs], lr=0.05) if method == "adagrad"
                 else torch.optim.SparseAdam([theirs], lr=0.05))
    for _ in range(4):
        parts = [(torch.randint(0, rows // 4, (300,), device="cuda", generator=generator),
                  torch.randn(300, *row, device="cuda", generator=generator))
                 for _ in range(2)]
        optimizer.step([("T", i, g) for i, g in parts])
        index = torch.cat([i for i, _ in parts])
        values = torch.cat([g for _, g in parts])
        theirs.grad = torch.sparse_coo_tensor(index[None], values, theirs.shape).coalesce()
        reference.step()
    assert torch.allclose(ours["T"], theirs.detach(), atol=1e-6, rtol=1e-5), \
        (ours["T"] - theirs.detach()).abs().max().item()


def test_fused_updates_report_an_index_beyond_the_table():
    """An index beyond its table is skipped by the sum (the other rows are
    applied) and reported by check(), which the trainer's loss checks call."""
    table = torch.zeros(50, 8, device="cuda")
    optimizer = training.RowSparseOptimizer({"Eemb": table}, "adagrad", lr=0.5, fused=True)
    index = torch.tensor([3, 7, 50, 7], device="cuda")
    optimizer.step([("Eemb", index, torch.ones(4, 8, device="cuda"))])
    with pytest.raises(IndexError, match="table 'Eemb' had an index beyond its 50 rows; "
                                         "the rows with it were not applied"):
        optimizer.check()
    assert (table[3] < 0).all() and (table[7] < 0).all()
    assert (table[torch.arange(50, device="cuda") != 3][:, 0] != 0).sum() == 1
    # The dense path (a table no larger than the step's rows) skips it too.
    small = torch.zeros(3, 8, device="cuda")
    optimizer = training.RowSparseOptimizer({"Remb": small}, "adam", lr=0.5, fused=True)
    optimizer.step([("Remb", torch.tensor([0, 3, 2, 0], device="cuda"),
                     torch.ones(4, 8, device="cuda"))])
    with pytest.raises(IndexError, match="table 'Remb' had an index beyond its 3 rows"):
        optimizer.check()
    assert (small[0] < 0).all() and (small[1] == 0).all() and (small[2] < 0).all()


def test_row_update_kernels_refuse_bad_arrays():
    """kge.runtime's row kernels name the array that does not fit, before
    launching."""
    from kge import runtime
    p = torch.zeros(10, 4, device="cuda")
    s = torch.zeros_like(p)
    g = torch.zeros_like(p)
    bad = torch.zeros(1, dtype=torch.int64, device="cuda")
    index = torch.arange(3, device="cuda")
    cases = [
        (lambda: runtime.rows_add(index.int(), g[:3], g, bad), "'index' must be i64, got i32"),
        (lambda: runtime.rows_add(index, g[:2], g, bad), "'values' has shape \\[2, 4\\]"),
        (lambda: runtime.rows_add(index, g[:3].cpu(), g, bad), "'values' is in host memory"),
        (lambda: runtime.rows_add(index, g[:3], g.t(), bad),
         "'grad' must be contiguous \\(row-major\\)"),
        (lambda: runtime.rows_add(index, g[:3], g, bad,
                                  torch.zeros(9, dtype=torch.int32, device="cuda")),
         "'touched' has shape \\[9\\], expected \\[10\\]"),
        (lambda: runtime.adagrad_rows(p, s[:5], g, 0.1, 1e-10), "'sum_squares' has shape"),
        (lambda: runtime.adagrad_rows(p, s, g[:3], 0.1, 1e-10), "'grad' has shape \\[3, 4\\]"),
        (lambda: runtime.adagrad_rows(p[0], s[0], g[0], 0.1, 1e-10),
         "'param' must be \\[rows, ...\\]"),
        (lambda: runtime.adam_rows(p, s, s.clone(), g[:3], torch.ones(1, device="cuda"), 0.9,
                                   0.999, 1e-8, index=index, first_bad=bad,
                                   touched=torch.zeros(10, dtype=torch.int32, device="cuda")),
         "'touched' goes with the dense buffer"),
        (lambda: runtime.adam_rows(p, s, s.clone(), g, torch.ones(2, device="cuda"), 0.9,
                                   0.999, 1e-8), "'step_size' must hold one element"),
        (lambda: runtime.adagrad_rows(p, s, g[:3], 0.1, 1e-10, index=index),
         "an index needs 'first_bad'")]
    for call, message in cases:
        with pytest.raises(runtime.ArgumentError, match=message):
            call()
    assert (p == 0).all()
