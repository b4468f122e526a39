"""The torch.compile backend's rewrite (kge.torch_backend) on the CPU: the
score functions of unmodified PyTorch KGE models become KGE kernels (run
here through KGE's CPU path) with results and gradients equal to eager
PyTorch's; what KGE does not express is left as it was, with the reason
in the report, never miscompiled."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from plain_torch_models import MODELS, SoftplusLoss, TransE

kge_backend = pytest.importorskip("kge.torch_backend")

ENTITIES, RELATIONS, DIM, BATCH = 300, 11, 16, 257


def skewed_batch(seed, batch=BATCH):
    """Power-law entity draws (hubs repeat), uniform relations."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, ENTITIES + 1, dtype=np.float64)
    p = ranks ** -1.1
    p /= p.sum()
    h = torch.from_numpy(rng.choice(ENTITIES, batch, p=p))
    t = torch.from_numpy(rng.choice(ENTITIES, batch, p=p))
    r = torch.from_numpy(rng.integers(0, RELATIONS, batch))
    return h, r, t


def rewritten(model, inputs):
    gm = torch.fx.symbolic_trace(copy.deepcopy(model))
    return kge_backend.rewrite(gm, inputs)


def parameters_like(model, other):
    other.load_state_dict(model.state_dict())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_score_functions_become_kge_kernels_equal_to_eager(name):
    torch.manual_seed(0)
    model = MODELS[name](ENTITIES, RELATIONS, DIM)
    inputs = skewed_batch(1)
    gm, report = rewritten(model, inputs)
    assert len(report.replaced) == 1, report
    kernels = [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
    assert len(kernels) == 1
    # Nothing of the score function is left in the graph but the kernel.
    targets = {str(n.target) for n in gm.graph.nodes}
    assert not targets & {"entity", "relation", "norm", "sum", "bmm", "chunk"}
    expected = model(*inputs)
    got = gm(*inputs)
    assert got.shape == expected.shape == (BATCH,)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # Gradients, through the KGE gradient kernel.
    seed = torch.randn(BATCH)
    (expected * seed).sum().backward()
    (got * seed).sum().backward()
    for (pname, p), (_, q) in zip(model.named_parameters(), gm.named_parameters()):
        assert q.grad is not None, pname
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=pname)


def test_the_rest_of_the_graph_stays_pytorch():
    torch.manual_seed(1)
    model = SoftplusLoss(MODELS["distmult"](ENTITIES, RELATIONS, DIM))
    h, r, t = skewed_batch(2)
    labels = torch.where(torch.rand(BATCH) < 0.5, -1.0, 1.0)
    gm, report = rewritten(model, (h, r, t, labels))
    assert len(report.replaced) == 1
    names = {getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes}
    assert "softplus" in names and "mean" in names
    expected, got = model(h, r, t, labels), gm(h, r, t, labels)
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    expected.backward()
    got.backward()
    for p, q in zip(model.parameters(), gm.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6)


def test_two_calls_of_one_model_share_nothing_wrong():
    """Scores of positives and of corrupted tails: two kernels, or one
    reused, each equal to eager."""
    torch.manual_seed(2)

    class TwoScores(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = TransE(ENTITIES, RELATIONS, DIM)

        def forward(self, h, r, t, t_neg):
            return self.model(h, r, t) - self.model(h, r, t_neg)

    model = TwoScores()
    h, r, t = skewed_batch(3)
    t_neg = torch.flip(t, [0])
    gm, report = rewritten(model, (h, r, t, t_neg))
    assert len(report.replaced) >= 1
    torch.testing.assert_close(gm(h, r, t, t_neg), model(h, r, t, t_neg), rtol=1e-5, atol=1e-5)


class Normalized(nn.Module):
    """TransE on unit-normalized rows (F.normalize: clamp, expand)."""

    def __init__(self):
        super().__init__()
        self.entity = nn.Embedding(ENTITIES, DIM)
        self.relation = nn.Embedding(RELATIONS, DIM)

    def forward(self, h, r, t):
        head = F.normalize(self.entity(h), p=2, dim=-1)
        return -torch.norm(head + self.relation(r) - self.entity(t), p=2, dim=-1)


class AllTails(nn.Module):
    """DistMult against every entity: [B, N] scores by broadcasting."""

    def __init__(self):
        super().__init__()
        self.entity = nn.Embedding(ENTITIES, DIM)
        self.relation = nn.Embedding(RELATIONS, DIM)

    def forward(self, h, r, t):
        query = self.entity(h) * self.relation(r)
        return (query.unsqueeze(1) * self.entity.weight.unsqueeze(0)).sum(-1)


class MaxNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.entity = nn.Embedding(ENTITIES, DIM, max_norm=1.0)
        self.relation = nn.Embedding(RELATIONS, DIM)

    def forward(self, h, r, t):
        return (self.entity(h) * self.relation(r) * self.entity(t)).sum(-1)


class BatchAxis(nn.Module):
    """A reduction over the batch axis: not a score function."""

    def __init__(self):
        super().__init__()
        self.entity = nn.Embedding(ENTITIES, DIM)

    def forward(self, h, r, t):
        return (self.entity(h) * self.entity(t)).sum(0)


class Cube(nn.Module):
    """A 3-norm, which KGE does not have."""

    def __init__(self):
        super().__init__()
        self.entity = nn.Embedding(ENTITIES, DIM)
        self.relation = nn.Embedding(RELATIONS, DIM)

    def forward(self, h, r, t):
        return torch.norm(self.entity(h) + self.relation(r) - self.entity(t), p=3, dim=-1)


@pytest.mark.parametrize("model_class,reason", [
    (Normalized, "normalize (call_function normalize): not an operation KGE compiles"),
    (AllTails, None),
    (MaxNorm, "an embedding with max_norm renormalizes rows in place"),
    (BatchAxis, "reduction over dim=0"),
    (Cube, "norms of order 3"),
])
def test_unsupported_graphs_are_left_alone(model_class, reason):
    torch.manual_seed(3)
    model = model_class()
    inputs = skewed_batch(4)
    expected = model(*inputs)
    gm, report = rewritten(model, inputs)
    assert report.replaced == []
    assert not [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
    if reason is None:
        assert report.rejected == []
    else:
        assert any(reason in why for _, why in report.rejected), report.rejected
    torch.testing.assert_close(gm(*inputs), expected, rtol=0, atol=0)


def test_the_backend_registers_where_torch_has_dynamo():
    has_dynamo = True
    try:
        import torch._dynamo  # noqa: F401
    except ImportError:
        has_dynamo = False
    assert kge_backend.register() is has_dynamo


def _distmult_functional(entity, relation, h, r, t):
    return (F.embedding(h, entity) * F.embedding(r, relation) * F.embedding(t, entity)).sum(-1)


def test_the_kernel_key_does_not_depend_on_how_the_graph_reads_its_tables():
    """nn.Embedding modules (symbolic_trace) and weights passed in and read
    with F.embedding (as Dynamo records inlined modules) give one key: a
    bundle compiled ahead for one is found for the other."""
    torch.manual_seed(5)
    model = MODELS["distmult"](ENTITIES, RELATIONS, DIM)
    inputs = skewed_batch(6)
    _, by_module = rewritten(model, inputs)
    gm = torch.fx.symbolic_trace(_distmult_functional)
    weights = (model.entity.weight.detach(), model.relation.weight.detach())
    gm, by_function = kge_backend.rewrite(gm, weights + inputs)
    assert len(by_module.replaced) == len(by_function.replaced) == 1
    first, second = by_module.replaced[0], by_function.replaced[0]
    assert first.function.name == second.function.name
    torch.testing.assert_close(gm(*weights, *inputs), model(*inputs), rtol=1e-5, atol=1e-5)


def test_bundles_compiled_ahead_run_where_there_is_no_compiler(tmp_path, monkeypatch):
    import kge.frontend
    from kge import cache
    from kge.errors import CompilerUnavailableError
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(6)
    model = MODELS["transe"](ENTITIES, RELATIONS, DIM)
    inputs = skewed_batch(7)
    gm, report = rewritten(model, inputs)
    (kernel,) = [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
    forward, gradient = kernel.compile()
    assert forward.name == report.replaced[0].function.name
    assert gradient.name == forward.name + "_grad"

    def no_compiler(*args, **kwargs):
        raise CompilerUnavailableError("no compiler in this test")

    monkeypatch.setattr(kge.frontend.ScoreFunction, "compile", no_compiler)
    monkeypatch.setattr(kge.frontend.GradientFunction, "compile", no_compiler)
    monkeypatch.setattr(kge_backend, "_compiler_available", lambda: False)
    gm2, report2 = rewritten(model, inputs)
    (kernel2,) = [m for m in gm2.modules() if isinstance(m, kge_backend.KernelModule)]
    before = cache.stats()["hits"]
    again = kernel2.compile()
    assert [b.text for b in again] == [forward.text, gradient.text]
    assert cache.stats()["hits"] == before + 2
    cache.clear()
    with pytest.raises(CompilerUnavailableError, match="no KGE compiler here and no cached "
                                                       "score bundle of fx_"):
        kernel2.compile()


def test_kernel_modules_pickle_by_name():
    """Inductor pickles graphs for its cache keys: a kernel pickles as the
    digest of what it computes."""
    import pickle
    model = MODELS["distmult"](ENTITIES, RELATIONS, DIM)
    gm, _ = rewritten(model, skewed_batch(8))
    (kernel,) = [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
    data = pickle.dumps(kernel)
    assert kernel.kernel.function.name.encode() in data
    loaded = pickle.loads(data)
    # The process's kernel of that name: this one, or an equal one made first.
    assert isinstance(loaded, kge_backend.KernelModule)
    assert loaded.kernel.function.name == kernel.kernel.function.name
    assert loaded.kernel.payload == kernel.kernel.payload


def test_inference_graphs_of_kernels_only_call_the_runtime_directly():
    """Under no_grad a graph that is one kernel skips operator dispatch and
    autograd; with gradients the same model keeps them."""
    torch.manual_seed(9)
    model = MODELS["complex"](ENTITIES, RELATIONS, DIM)
    inputs = skewed_batch(10)
    expected = model(*inputs)
    for grad in (False, True):
        gm = torch.fx.symbolic_trace(copy.deepcopy(model))
        with torch.set_grad_enabled(grad):
            run = kge_backend.kge_backend(gm, list(inputs), inner="eager")
            got = run(*inputs)
        (kernel,) = [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
        assert kernel.direct is (not grad)
        assert got.requires_grad is grad
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # A graph with PyTorch left in it is never run directly.
    loss = SoftplusLoss(MODELS["distmult"](ENTITIES, RELATIONS, DIM))
    labels = torch.ones(BATCH)
    gm = torch.fx.symbolic_trace(loss)
    with torch.no_grad():
        kge_backend.kge_backend(gm, list(inputs) + [labels], inner="eager")
    (kernel,) = [m for m in gm.modules() if isinstance(m, kge_backend.KernelModule)]
    assert not kernel.direct
