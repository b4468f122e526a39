"""The gradient functions of the examples (bvec-differentiate) on the GPU
against PyTorch autograd of the float64 references, and the
kge.autograd.ScoreOperator built from them inside a PyTorch training step.

Bundles from test/gpu/build_gradient_bundles.py (KGE_GPU_GRADIENT_BUNDLES,
default .carry/gradients). The tables' gradients are compared dense: the
kernel's rows summed into their tables against the reference's table
gradients, with random per-edge seeds, on uniform, Zipf-skewed and
all-identical index batches (duplicates are summed).
"""

import json
import os
import pathlib
import re
import zlib

import pytest
import torch

from references import REFERENCES
from test_kernels import draw, indexed_by_table

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_GRADIENT_BUNDLES", ROOT / ".carry" / "gradients"))
SKIPPED = json.loads((BUNDLES / "skipped.json").read_text()) if BUNDLES.exists() else {}
EXAMPLES = sorted(n for n in REFERENCES if n not in SKIPPED)


def _program(rt, example, kind, variant):
    path = BUNDLES / f"{example}.{kind}.{variant}.kgebundle"
    if not path.exists():
        pytest.fail(f"missing bundle {path}; run test/gpu/build_gradient_bundles.py")
    return rt.Program(path.read_text())


def _inputs(signature, batch, length, kind, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    params = signature["params"]
    args = {}
    for p in params:
        if p["role"] == "table" and len(p["shape"]) > 1:
            rows = 64 if p["name"].startswith("R") or p["name"] in ("Pv", "Rp", "Rph") else 500
            shape = [rows] + [length] * (len(p["shape"]) - 1)
            args[p["name"]] = torch.randn(shape, generator=generator, device="cuda")
    for p in params:
        if p["role"] == "indices":
            rows = min(args[t].shape[0] for t in indexed_by_table(p, params))
            args[p["name"]] = draw(kind, batch, rows, generator)
    return args


def _dense(program, rows, args):
    """The gradient rows summed into their tables (a matrix table's factors
    d_<table>_<indices>_u<n>, _v<n> as the outer products they stand for)."""
    dense = {}
    for p in program.signature["params"]:
        factor = re.fullmatch(r"(.*)_([uv])(\d+)", p["name"])
        if p["role"] != "result" or factor and factor.group(2) == "v":
            continue
        name, values = p["name"], rows[p["name"]].double()
        if factor:
            name = factor.group(1)
            other = rows[f"{name}_v{factor.group(3)}"].double()
            values = values[:, :, None] * other[:, None, :]
        (table, indices), = [(t, i) for t in args for i in args if name == f"d_{t}_{i}"]
        total = dense.setdefault(table, torch.zeros_like(args[table], dtype=torch.float64))
        total.index_add_(0, args[indices], values)
    return dense


def _reference(example, args, seed):
    leaves = {n: (v.double().requires_grad_() if v.is_floating_point() else v)
              for n, v in args.items()}
    (REFERENCES[example](**leaves) * seed.double()).sum().backward()
    return {n: v.grad for n, v in leaves.items() if v.is_floating_point()}


@pytest.mark.parametrize("kind", ("uniform", "zipf", "identical"))
@pytest.mark.parametrize("batch", (37, 4096))
@pytest.mark.parametrize("variant,length", (("D128", 128), ("dyn", 100)))
@pytest.mark.parametrize("example", EXAMPLES)
def test_gradient_matches_autograd(rt, example, variant, length, batch, kind):
    program = _program(rt, example, "grad", variant)
    seed_value = zlib.crc32(f"{example}/{variant}/{batch}/{kind}".encode())
    args = _inputs(program.signature, batch, length, kind, seed_value)
    seeds = torch.randn(batch, device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(seed_value))
    rows = program(**args, d_score=seeds)
    torch.cuda.synchronize()
    dense = _dense(program, rows, args)
    reference = _reference(example, args, seeds)
    for table, grad in reference.items():
        if grad is None:
            continue
        actual = dense.get(table, torch.zeros_like(grad))
        scale = max(1.0, grad.abs().max().item())
        error = (actual - grad).abs().max().item() / scale
        assert error < 1e-4, f"{table}: max error {error:.3g}"


def test_score_operator_trains_like_autograd(rt):
    """Five Adam steps of DistMult with the softplus loss through
    kge.autograd.ScoreOperator give the tables that the same steps through
    PyTorch autograd give: dense gradients with Adam, sparse ones with
    SparseAdam (against torch's sparse embedding gradients)."""
    from kge.autograd import ScoreOperator
    fwd = (BUNDLES / "distmult.fwd.D128.kgebundle").read_text()
    grad = (BUNDLES / "distmult.grad.D128.kgebundle").read_text()
    generator = torch.Generator(device="cuda").manual_seed(3)
    E0 = torch.randn(300, 128, device="cuda", generator=generator) * 0.1
    R0 = torch.randn(20, 128, device="cuda", generator=generator) * 0.1
    batches = [(torch.randint(0, 300, (512,), device="cuda", generator=generator),
                torch.randint(0, 20, (512,), device="cuda", generator=generator),
                torch.randint(0, 300, (512,), device="cuda", generator=generator),
                torch.randint(0, 2, (512,), device="cuda", generator=generator).float() * 2 - 1)
               for _ in range(5)]

    def train(score, sparse):
        E = torch.nn.Parameter(E0.clone())
        R = torch.nn.Parameter(R0.clone())
        optimizer = (torch.optim.SparseAdam if sparse else torch.optim.Adam)([E, R], lr=0.01)
        for h, r, t, y in batches:
            optimizer.zero_grad()
            loss = torch.nn.functional.softplus(-y * score(E, R, h, r, t)).mean()
            loss.backward()
            assert E.grad.is_sparse == sparse
            optimizer.step()
        return E.detach(), R.detach()

    def eager(E, R, h, r, t, sparse):
        rows = lambda table, i: torch.nn.functional.embedding(i, table, sparse=sparse)
        return (rows(E, h) * rows(R, r) * rows(E, t)).sum(-1)

    for sparse in (False, True):
        op = ScoreOperator(fwd, grad, sparse=sparse)
        actual = train(lambda E, R, h, r, t: op(Eemb=E, Remb=R, h=h, r=r, t=t), sparse)
        expected = train(lambda E, R, h, r, t: eager(E, R, h, r, t, sparse), sparse)
        for a, b in zip(actual, expected):
            assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), (a - b).abs().max().item()


@pytest.mark.parametrize("example", ("transr", "rescal"))
@pytest.mark.parametrize("mode", ("dense", "sparse", "rows"))
def test_score_operator_sums_matrix_gradients_per_relation(rt, example, mode):
    """A table of matrices through kge.autograd.ScoreOperator: the gradient
    kernel's factors summed per relation by the OUTER_SUM bundle give the
    float64 autograd gradient of every table (dense .grad, sparse .grad over
    every matrix, or the rows handed to a row-sparse optimizer), Zipf-drawn
    relations, a relation without edges."""
    from kge.autograd import ScoreOperator
    fwd = (BUNDLES / f"{example}.fwd.D128.kgebundle").read_text()
    grad = (BUNDLES / f"{example}.grad.D128.kgebundle").read_text()
    outer = (BUNDLES / "outer_sum.kgebundle").read_text()
    op = ScoreOperator(fwd, grad, sparse=mode == "sparse", rows=mode == "rows",
                       outer_sum=outer)
    assert op.factors, "the gradient bundle returns no matrix factors"
    generator = torch.Generator(device="cuda").manual_seed(11)
    tables = {"Eemb": torch.randn(400, 128, device="cuda", generator=generator) * 0.1,
              "Pm": torch.randn(12, 128, 128, device="cuda", generator=generator) * 0.1}
    if example == "transr":
        tables["Remb"] = torch.randn(12, 128, device="cuda", generator=generator) * 0.1
    batch = 6000
    index = {"h": draw("uniform", batch, 400, generator), "t": draw("zipf", batch, 400, generator),
             "r": draw("zipf", batch, 11, generator)}  # relation 11 has no edge
    seed = torch.randn(batch, device="cuda", generator=generator)
    params = {n: torch.nn.Parameter(v.clone()) for n, v in tables.items()}
    (op(**params, **index) * seed).sum().backward()
    expected = _reference(example, {**tables, **index}, seed)
    if mode == "rows":
        from kge.autograd import WholeTable
        got = {n: torch.zeros_like(v, dtype=torch.float64) for n, v in tables.items()}
        for table, rows_index, values in op.captured:
            if isinstance(values, WholeTable):
                # The matrices' gradient whole, with the edges' relations.
                assert table == "Pm" and torch.equal(rows_index, index["r"])
                got[table] += values.grad.double()
            else:
                got[table].index_add_(0, rows_index, values.double())
        assert all(params[n].grad is None for n in params)
    else:
        got = {n: (v.grad.to_dense() if mode == "sparse" else v.grad).double()
               for n, v in params.items()}
        assert params["Pm"].grad.is_sparse == (mode == "sparse")
    for name, value in expected.items():
        scale = max(1.0, value.abs().max().item())
        error = (got[name] - value).abs().max().item() / scale
        assert error < 1e-4, f"{name}: max error {error:.3g}"
    assert got["Pm"][11].abs().max().item() == 0


def test_score_operator_needs_the_outer_sum_bundle(rt, monkeypatch):
    from kge import autograd
    fwd = (BUNDLES / "transr.fwd.D128.kgebundle").read_text()
    grad = (BUNDLES / "transr.grad.D128.kgebundle").read_text()

    def no_compiler():
        raise ImportError("no compiler here")
    monkeypatch.setattr(autograd, "outer_sum_bundle", no_compiler)
    with pytest.raises(ValueError, match="pass outer_sum="):
        autograd.ScoreOperator(fwd, grad)


def test_score_operator_refuses_mismatched_bundles(rt):
    from kge.autograd import ScoreOperator
    fwd = (BUNDLES / "distmult.fwd.D128.kgebundle").read_text()
    other = (BUNDLES / "transe_l2.grad.D128.kgebundle").read_text()
    with pytest.raises(ValueError, match="not the gradient of the score bundle"):
        ScoreOperator(fwd, other)


def _distmult_op(name):
    from kge.autograd import ScoreOperator
    fwd = (BUNDLES / "distmult.fwd.D128.kgebundle").read_text()
    grad = (BUNDLES / "distmult.grad.D128.kgebundle").read_text()
    return ScoreOperator(fwd, grad).torch_op(name)


def _distmult_inputs(batch=1000, seed=5):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    E = torch.randn(400, 128, device="cuda", generator=generator) * 0.1
    R = torch.randn(11, 128, device="cuda", generator=generator) * 0.1
    h, t = (torch.randint(0, 400, (batch,), device="cuda", generator=generator) for _ in "ht")
    r = torch.randint(0, 11, (batch,), device="cuda", generator=generator)
    y = torch.randint(0, 2, (batch,), device="cuda", generator=generator).float() * 2 - 1
    return E, R, h, r, t, y


def _reference_step(E, R, h, r, t, y):
    E, R = E.clone().requires_grad_(), R.clone().requires_grad_()
    loss = torch.nn.functional.softplus(-y * (E[h] * R[r] * E[t]).sum(-1)).mean()
    return (loss.detach(), *torch.autograd.grad(loss, [E, R]))


def _close(actual, expected):
    for a, b in zip(actual, expected):
        assert torch.allclose(a, b, atol=1e-6, rtol=1e-4), (a - b).abs().max().item()


def test_torch_library_operator_in_eager_and_compiled_code(rt):
    """kge::<name> (torch.library) gives PyTorch's loss and gradients called
    directly and inside torch.compile(fullgraph=True)."""
    op = _distmult_op("distmult_library")
    E, R, h, r, t, y = _distmult_inputs()

    def loss_of(E, R, h, r, t, y):
        return torch.nn.functional.softplus(-y * op(E, R, h, r, t)).mean()

    def step(loss_fn):
        Ep, Rp = E.clone().requires_grad_(), R.clone().requires_grad_()
        loss = loss_fn(Ep, Rp, h, r, t, y)
        return (loss.detach(), *torch.autograd.grad(loss, [Ep, Rp]))

    expected = _reference_step(E, R, h, r, t, y)
    _close(step(loss_of), expected)
    _close(step(torch.compile(loss_of, fullgraph=True)), expected)


@pytest.mark.parametrize("kind", ("torch_op", "score_operator"))
def test_step_captured_in_a_cuda_graph(rt, kind):
    """Forward, loss and backward through KGE's kernels captured in one
    torch.cuda.CUDAGraph (the kernels launch on PyTorch's current stream)
    and replayed on new indices give PyTorch's loss and gradients; the
    kernels' scratch for the capture stream comes from a warm-up call on
    it, as PyTorch asks of every captured workload."""
    from kge.autograd import ScoreOperator
    E, R, h, r, t, y = _distmult_inputs()
    Ep, Rp = E.clone().requires_grad_(), R.clone().requires_grad_()
    if kind == "torch_op":
        op = _distmult_op("distmult_graphed")
    else:
        fwd = (BUNDLES / "distmult.fwd.D128.kgebundle").read_text()
        grad = (BUNDLES / "distmult.grad.D128.kgebundle").read_text()
        operator = ScoreOperator(fwd, grad)
        op = lambda E, R, h, r, t: operator(Eemb=E, Remb=R, h=h, r=r, t=t)  # noqa: E731
    static = [x.clone() for x in (h, r, t, y)]

    def step():
        Ep.grad = Rp.grad = None
        loss = torch.nn.functional.softplus(-static[3] * op(Ep, Rp, *static[:3])).mean()
        loss.backward()
        return loss.detach()

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        step()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        loss = step()
    for seed in (6, 7):
        inputs = _distmult_inputs(seed=seed)[2:]
        for s, x in zip(static, inputs):
            s.copy_(x)
        graph.replay()
        expected = _reference_step(E, R, *inputs)
        _close((loss, Ep.grad, Rp.grad), expected)
