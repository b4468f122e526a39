"""Training against chunked shared negatives on the GPU
(kge.shared_negatives): the products on tile and their gradients equal
float64 matrix products within their precision, aligned or not; training
with them equals training with cuBLAS's (torch.bmm); the step is captured in a
CUDA graph and trains like eager steps; training learns the graph.

Bundles from test/gpu/build_gradient_bundles.py (shared.<math>/ and the
models' D32 bundles)."""

import numpy as np
import pytest
import torch

from kge import training
from kge.shared_negatives import SharedNegatives, TileProducts, load_products
from test_gradients import BUNDLES
from test_training import assert_tables_close, graph, model

# The largest error of a product relative to the largest value: TF32
# truncates operands to 10 mantissa bits; 3xTF32 keeps FP32's accuracy.
TOLERANCE = {"tf32": 5e-3, "tf32x3": 2e-5}


def products(matrix_math):
    return load_products(BUNDLES / f"shared.{matrix_math}")


@pytest.mark.parametrize("matrix_math", list(TOLERANCE))
@pytest.mark.parametrize("keys,rows,n,d", [(8, 8192, 512, 128), (4, 1024, 256, 256),
                                           (3, 37, 101, 32), (2, 300, 300, 20), (1, 1, 7, 4),
                                           (5, 129, 65, 12)])
def test_products_and_their_gradients_equal_float64(matrix_math, keys, rows, n, d):
    """Rows of several keys in a random order (the launch plan groups them
    by key), aligned and unaligned rows."""
    p = TileProducts(products(matrix_math))
    g = torch.Generator(device="cuda").manual_seed(rows * n + d)
    Q = torch.randn(rows, d, device="cuda", generator=g, requires_grad=True)
    E = torch.randn(keys, n, d, device="cuda", generator=g, requires_grad=True)
    G = torch.randn(rows, n, device="cuda", generator=g)
    key = torch.randint(0, keys, (rows,), device="cuda", generator=g)
    S = p.product(Q, E, key)
    S.backward(G)
    q, e, gd = Q.detach().double(), E.detach().double(), G.double()
    dE = torch.zeros_like(e).index_add_(0, key, gd[:, :, None] * q[:, None, :])
    for got, want in ((S, torch.einsum("id,ijd->ij", q, e[key])),
                      (Q.grad, torch.einsum("ij,ijd->id", gd, e[key])), (E.grad, dE)):
        assert got.shape == want.shape and got.dtype == torch.float32
        error = (got.double() - want).abs().max().item()
        assert error <= TOLERANCE[matrix_math] * want.abs().max().item(), (got.shape, error)


@pytest.mark.parametrize("name,loss,optimizer", [("distmult", "softplus", "adagrad"),
                                                 ("complex", "softmax", "adam"),
                                                 ("transe_l2", "margin", "adagrad")])
def test_tile_products_train_like_cublas(name, loss, optimizer):
    """KGE's kernels for the positives, each chunk's products on tile at
    3xTF32 against the same training with cuBLAS's at FP32; chunks of 100
    (the batch's last one shorter: a torch.matmul per chunk) and of 64
    (torch.bmm)."""
    tables = []
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        for bundles, chunk in ((products("tf32x3"), 100), (None, 100), (None, 64)):
            m = model(name)
            trainer = training.Trainer(m, graph(), batch_size=256, loss=loss, margin=2.0,
                                       optimizer=optimizer, lr=0.05, seed=2, graph=False,
                                       negatives=SharedNegatives(24, chunk, bundles))
            record = trainer.train_epoch()
            assert np.isfinite(record["loss"])
            tables.append({n: t.detach().clone() for n, t in m.tables.items()})
    finally:
        torch.set_float32_matmul_precision(previous)
    # (Chunks of 64 draw other negatives: they train alike, not equal.)
    assert_tables_close(name, tables[0], tables[1], tolerance=1e-3)
    for n in tables[2]:
        assert bool(torch.isfinite(tables[2][n]).all())


@pytest.mark.parametrize("name", ["distmult", "transe_l2"])
def test_graphed_shared_step_trains_like_eager_steps(name):
    tables, logs = [], []
    for mode in (True, False):
        m = model(name)
        trainer = training.Trainer(m, graph(), batch_size=256, loss="softmax", lr=0.05,
                                   seed=4, graph=mode,
                                   negatives=SharedNegatives(32, 64, products("tf32")))
        for _ in range(2):
            trainer.train_epoch()
        if mode:
            assert trainer.graphed.graph is not None and trainer.graphed.reason is None
        tables.append({n: t.detach().clone() for n, t in m.tables.items()})
        logs.append([r["loss"] for r in trainer.log])
    np.testing.assert_allclose(logs[0], logs[1], rtol=1e-5)
    # (Float atomics sum rows in any order: not bit for bit.)
    assert_tables_close(name, *tables)


def test_training_with_tile_products_learns_the_graph():
    triples = graph()
    held_out, train = triples[:300], triples[300:]
    m = model("complex")
    trainer = training.Trainer(m, train, batch_size=512, loss="softmax", lr=0.1, seed=0,
                               negatives=SharedNegatives(64, 128, products("tf32")))
    before, _ = training.evaluate(m, held_out, triples)
    losses = [trainer.train_epoch()["loss"] for _ in range(10)]
    after, _ = training.evaluate(m, held_out, triples)
    assert losses[-1] < 0.8 * losses[0], losses
    assert after["mrr"] > 1.5 * before["mrr"], (before, after)


def test_products_refuse_bundles_of_other_functions():
    bundles = products("tf32")
    bundles["scores"], bundles["query_gradient"] = bundles["query_gradient"], bundles["scores"]
    with pytest.raises(ValueError, match="bundle 'scores' holds 'query_gradient'"):
        TileProducts(bundles)
