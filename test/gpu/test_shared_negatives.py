"""Scoring every edge against negatives shared by the batch (bundles of
build_bundles.py's shared mode: the score function as a tile task) against
the PyTorch reference on the expanded pairs: edge i with its tail replaced
by negative j, in float64. Edges 1 to 4096, 1 to 1024 negatives, lengths
32 to 512, uniform and Zipf-skewed indices; outputs poisoned with NaN.
Every bundle on CUDA cores (f32), and with the product forms (DistMult,
ComplEx, SimplE, CrossE, TransE-L2, TransF) on tensor cores: f32 tables at
tf32 and tf32x3, bf16 tables; each within its precision's error."""

import json
import zlib

import pytest
import torch

from conftest import BUNDLES
from references import REFERENCES

SHARED = sorted({p.name.split(".")[0] for p in BUNDLES.glob("*.shared.*.kgebundle")})
CASES = [(1, 1, 32), (37, 256, 100), (4096, 512, 128), (1000, 1024, 512), (513, 77, 32)]


def test_shared_bundles_were_built():
    assert SHARED == ["complex", "crosse", "distmult", "rotate", "simple", "transe_l1",
                      "transe_l2", "transf"], "run test/gpu/build_bundles.py"


def draw(kind, count, rows, generator):
    if kind == "uniform":
        return torch.randint(0, rows, (count,), generator=generator, device="cuda")
    p = torch.arange(1, rows + 1, dtype=torch.float64, device="cuda") ** -1.1
    return torch.multinomial(p, count, replacement=True, generator=generator)


# Errors relative to the largest score (at least 1): f32 sums of up to 512
# terms (tf32x3: three products a step); factors and tails truncated to
# TF32 (10-bit mantissas) or factors rounded to bf16 (7 bits). CrossE's
# scores are sigmoids of sums of ~20: the sums' errors count whole.
TOLERANCES = {"f32": 2e-5, "tf32x3": 5e-5, "tf32": 1e-2, "bf16": 3e-2}
# Polynomials in the edge's and the negative's rows (TransE-L2's square
# multiplies out into three terms); RotatE's and TransE-L1's absolute values
# are not.
PRODUCT_FORMS = {"complex", "crosse", "distmult", "simple", "transe_l2", "transf"}


@pytest.mark.parametrize("precision", ("f32", "tf32", "tf32x3", "bf16"))
def test_product_forms_take_tensor_cores(precision):
    """The product forms' bundles at tf32, tf32x3 and bf16 hold mma.sync
    kernels; the other models' and the f32 ones none."""
    for name in SHARED:
        prefix = "" if precision == "f32" else f"{precision}."
        text = (BUNDLES / f"{name}.shared.{prefix}dyn.kgebundle").read_text()
        tensor_cores = "mma.sync" in text
        assert tensor_cores == (precision != "f32" and name in PRODUCT_FORMS), name


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("edges,negatives,length", CASES,
                         ids=[f"B{b}-N{n}-D{d}" for b, n, d in CASES])
@pytest.mark.parametrize("kind", ("uniform", "zipf"))
@pytest.mark.parametrize("variant", ("dyn", "D"))
@pytest.mark.parametrize("precision", ("f32", "tf32", "tf32x3", "bf16"))
def test_shared_negatives_match_pytorch(rt, name, edges, negatives, length, kind, variant,
                                        precision):
    if precision != "f32" and name not in PRODUCT_FORMS:
        pytest.skip("not a product form: the same kernels as f32")
    prefix = "" if precision == "f32" else f"{precision}."
    path = BUNDLES / (f"{name}.shared.{prefix}"
                      f"{'dyn' if variant == 'dyn' else f'D{length}'}.kgebundle")
    program = rt.Program(path.read_text())
    generator = torch.Generator(device="cuda").manual_seed(
        zlib.crc32(f"{name}-{edges}-{negatives}-{length}-{kind}".encode()))
    signature = json.loads(path.read_text())["function"]["params"]
    # Tables read only through r are relations (64 rows), the others
    # entities (2000 rows).
    readers = {}
    for p in signature:
        for table in p.get("indexes", []):
            readers.setdefault(table, set()).add(p["name"])
    args = {}
    for p in signature:
        if p["role"] == "table":
            rows = 64 if readers.get(p["name"]) == {"r"} else 2000
            args[p["name"]] = torch.randn(rows, length, generator=generator, device="cuda")
            if precision == "bf16":
                args[p["name"]] = args[p["name"]].to(torch.bfloat16)
    rows_of = {p["name"]: args[p["indexes"][0]].shape[0] for p in signature
               if p["role"] == "indices"}
    for p in signature:
        if p["role"] == "indices":
            count = negatives if p["name"] == "t" else edges
            args[p["name"]] = draw(kind, count, rows_of[p["name"]], generator)
    (output,) = [p["name"] for p in signature if p["role"] == "output"]
    scores = torch.full((edges, negatives), float("nan"), device="cuda")
    program(**args, **{output: scores})
    torch.cuda.synchronize()
    expanded = dict(args, h=args["h"].repeat_interleave(negatives),
                    r=args["r"].repeat_interleave(negatives), t=args["t"].repeat(edges))
    reference = REFERENCES[name](**expanded).reshape(edges, negatives)
    scale = max(1.0, float(reference.abs().max()))
    error = float((scores.double() - reference).abs().max()) / scale
    assert error < TOLERANCES[precision], f"max relative error {error}"


@pytest.mark.parametrize("precision", ("f32", "tf32", "tf32x3", "bf16"))
def test_distance_to_the_same_row_is_zero_not_nan(rt, precision):
    """On tensor cores TransE-L2's squares come multiplied out (||h + r||^2
    - 2 (h + r) . t + ||t||^2), whose rounding can fall below zero where
    h + r = t: the root is taken of the sum clamped at zero."""
    prefix = "" if precision == "f32" else f"{precision}."
    program = rt.Program((BUNDLES / f"transe_l2.shared.{prefix}D128.kgebundle").read_text())
    g = torch.Generator(device="cuda").manual_seed(7)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    E = (torch.randn(300, 128, generator=g, device="cuda") * 3).to(dtype)
    R = torch.zeros(10, 128, device="cuda", dtype=dtype)
    h = torch.arange(0, 256, device="cuda")
    r = torch.zeros(256, dtype=torch.int64, device="cuda")
    t = torch.arange(0, 256, device="cuda")
    scores = torch.full((256, 256), float("nan"), device="cuda")
    program(Eemb=E, Remb=R, h=h, r=r, t=t, score=scores)
    torch.cuda.synchronize()
    assert not scores.isnan().any()
    diagonal = scores.diagonal()
    scale = float(scores.max())
    # CUDA cores square the difference: exactly 0. Multiplied out, the
    # sum's rounding error is relative to ||h||^2 (~1150 here) and its root
    # near zero up to sqrt(error): 3xTF32 sqrt(1e-6 * 2300) ~ 0.05, TF32
    # and bf16 sqrt(1e-3 * 2300) ~ 1.5.
    assert float(diagonal.max()) <= {"f32": 0.0, "tf32x3": 0.1}.get(precision, 0.1 * scale)
    assert float(scores.min()) >= 0


def test_out_of_range_negative_is_refused(rt):
    """The negatives are an index array like the others: checked mode
    refuses one outside its table before running."""
    path = BUNDLES / "distmult.shared.dyn.kgebundle"
    program = rt.Program(path.read_text())
    E = torch.randn(100, 32, device="cuda")
    R = torch.randn(10, 32, device="cuda")
    h = torch.randint(0, 100, (8,), device="cuda")
    r = torch.randint(0, 10, (8,), device="cuda")
    t = torch.tensor([1, 2, 100], device="cuda")
    scores = torch.zeros(8, 3, device="cuda")
    with pytest.raises(rt.IndexRangeError, match="index 100 at position 2 of 't'"):
        program(Eemb=E, Remb=R, h=h, r=r, t=t, score=scores, checked=True)
