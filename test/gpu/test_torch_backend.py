"""torch.compile(model, backend="kge") on the GPU: the score functions of
plain PyTorch models run as KGE kernels inside Inductor's graph, with
scores and gradients equal to eager PyTorch's; a model KGE does not
express compiles with Inductor alone, unchanged.

The kernels come from the bundle cache compiled ahead by
`bench/bench_torch_backend.py --prepare` (KGE_CACHE_DIR); this machine has
no compiler."""

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import bench_torch_backend as configs  # noqa: E402
import kge.torch_backend as kge_backend  # noqa: E402

NAMES = ["transe", "transe_l1", "distmult", "complex", "transr", "rotate",
         "functional_distmult"]


def models(name):
    entities, relations, dim = configs.TEST_SIZES
    return (configs.build(name, entities, relations, dim).cuda(),
            configs.build(name, entities, relations, dim).cuda())


@pytest.mark.parametrize("name", NAMES)
def test_compiled_models_equal_eager(name):
    entities, relations, _ = configs.TEST_SIZES
    h, r, t, y = configs.batch("cuda", 4099, entities, relations, seed=3)
    eager, model = models(name)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="kge")
    scores = compiled(h, r, t)
    report = kge_backend.report()
    assert len(report.replaced) == 1, report
    torch.testing.assert_close(scores, eager(h, r, t), rtol=1e-4, atol=1e-4)
    with torch.no_grad():  # another frame: the kernel called directly
        torch.testing.assert_close(compiled(h, r, t), eager(h, r, t), rtol=1e-4, atol=1e-4)
    F.softplus(-y * compiled(h, r, t)).mean().backward()
    F.softplus(-y * eager(h, r, t)).mean().backward()
    for (pname, p), q in zip(eager.named_parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-3, atol=1e-6, msg=pname)


def test_a_model_kge_does_not_express_is_left_to_inductor():
    entities, relations, dim = configs.TEST_SIZES

    class Cube(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.entity = torch.nn.Embedding(entities, dim)
            self.relation = torch.nn.Embedding(relations, dim)

        def forward(self, h, r, t):
            return torch.norm(self.entity(h) + self.relation(r) - self.entity(t), p=3, dim=-1)

    model = Cube().cuda()
    h, r, t, _ = configs.batch("cuda", 999, entities, relations, seed=4)
    torch._dynamo.reset()
    scores = torch.compile(model, backend="kge")(h, r, t)
    report = kge_backend.report()
    assert report.replaced == [] and any("order 3" in why for _, why in report.rejected)
    torch.testing.assert_close(scores, model(h, r, t), rtol=1e-5, atol=1e-5)
