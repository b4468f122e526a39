"""Every example's fused kernel against PyTorch, positive and negative mode.

Batch sizes 1, 37, 4096, 16384; embedding lengths 32, 100, 128, 512; index
batches uniform, Zipf-skewed, all-identical and all-distinct. Outputs are
poisoned with NaN before each call, inputs are fresh random numbers, and the
reference is computed in float64.
"""

import zlib

import pytest
import torch

from references import REFERENCES

BATCHES = (1, 37, 4096, 16384)
LENGTHS = (32, 100, 128, 512)
KINDS = ("uniform", "zipf", "identical", "distinct")
NEGATIVES = 7
ENTITY_ROWS, RELATION_ROWS = 1000, 64


def draw(kind, count, rows, generator):
    if kind == "uniform":
        return torch.randint(0, rows, (count,), generator=generator, device="cuda")
    if kind == "zipf":
        p = torch.arange(1, rows + 1, dtype=torch.float64, device="cuda") ** -1.1
        return torch.multinomial(p, count, replacement=True, generator=generator)
    if kind == "identical":
        return torch.full((count,), rows // 2, dtype=torch.int64, device="cuda")
    assert rows >= count
    return torch.randperm(rows, generator=generator, device="cuda")[:count]


def make_inputs(signature, mode, batch, length, kind, seed):
    """Random tables and index arrays for a signature, flattened indices for
    the reference."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    params = signature["params"]
    negative = mode == "neg"
    edges = {p["name"]: batch * (NEGATIVES if negative and p["name"] == "t" else 1)
             for p in params if p["role"] == "indices"}
    indexed_by = {}
    for p in params:
        for table in p.get("indexes", []):
            indexed_by.setdefault(table, []).append(p["name"])
    args = {}
    for p in params:
        if p["role"] != "table":
            continue
        users = indexed_by.get(p["name"], [])
        rows = RELATION_ROWS if users == ["r"] else ENTITY_ROWS
        if kind == "distinct":
            rows = max([rows] + [edges[u] for u in users])
        shape = [rows] + [length] * (len(p["shape"]) - 1)
        scale = length ** -0.5 if len(shape) == 3 else 1.0
        args[p["name"]] = torch.randn(shape, generator=generator, device="cuda") * scale
    for p in params:
        if p["role"] != "indices":
            continue
        rows = min(args[t].shape[0] for t in indexed_by_table(p, params))
        index = draw(kind, edges[p["name"]], rows, generator)
        if negative and p["name"] == "t":
            index = index.view(batch, NEGATIVES)
        args[p["name"]] = index
    return args


def indexed_by_table(param, params):
    return param.get("indexes") or [q["name"] for q in params if q["role"] == "table"][:1]


def flatten_for_reference(args, mode, batch):
    """Index arrays with one entry per scored edge."""
    if mode != "neg":
        return args
    flat = dict(args)
    for name, value in args.items():
        if value.dtype != torch.int64:
            continue
        flat[name] = (value.reshape(-1) if name == "t"
                      else value.repeat_interleave(NEGATIVES))
    return flat


def check(program, example, mode, batch, length, kind, table_dtype=torch.float32):
    seed = zlib.crc32(f"{example}/{mode}/{batch}/{length}/{kind}".encode())
    args = make_inputs(program.signature, mode, batch, length, kind, seed)
    args = {name: value.to(table_dtype) if value.is_floating_point() else value
            for name, value in args.items()}
    shape = (batch, NEGATIVES) if mode == "neg" else (batch,)
    out = torch.full(shape, float("nan"), device="cuda")
    result = program(**args, out={"score": out})["score"]
    torch.cuda.synchronize()
    assert result is out
    reference = REFERENCES[example](**flatten_for_reference(args, mode, batch))
    actual = out.reshape(-1).double()
    assert not torch.isnan(actual).any(), "some scores were not written"
    scale = max(1.0, reference.abs().max().item())
    error = (actual - reference).abs().max().item() / scale
    # Relative to the scores' norm, at least an RMS of 1 (like `scale`): a
    # batch of one score that cancels to near zero has no meaningful
    # relative error (3xTF32's products are within ~1e-6 of the summands).
    relative = ((actual - reference).norm()
                / reference.norm().clamp_min(reference.numel() ** 0.5)).item()
    assert error < 1e-4 and relative < 1e-5, (
        f"max error {error:.3g} (relative norm {relative:.3g})")


EXAMPLES = sorted(REFERENCES)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("mode", ("pos", "neg"))
@pytest.mark.parametrize("example", EXAMPLES)
def test_static_length_kernel(program, example, mode, batch, length, kind):
    check(program(example, mode, f"D{length}"), example, mode, batch, length, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("length", (100, 512))
@pytest.mark.parametrize("batch", (37, 4096))
@pytest.mark.parametrize("mode", ("pos", "neg"))
@pytest.mark.parametrize("example", EXAMPLES)
def test_dynamic_length_kernel(program, example, mode, batch, length, kind):
    check(program(example, mode, "dyn"), example, mode, batch, length, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("variant,length", (("staged.D128", 128), ("staged.dyn", 100), ("staged.dyn", 512)))
@pytest.mark.parametrize("batch", (37, 4096))
@pytest.mark.parametrize("mode", ("pos", "neg"))
@pytest.mark.parametrize("example", EXAMPLES)
def test_staged_kernel(program, example, mode, batch, variant, length, kind):
    """Rows staged in shared memory (stage-repeats=0), the layout option
    that the default leaves off."""
    check(program(example, mode, variant), example, mode, batch, length, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("example", ["transr", "rescal"])
def test_fused_matrix_kernel(program, example, batch, length, kind):
    """TransR's and RESCAL's matrix products in bvec's fused kernel
    (fuse-matrix-products=1); by default they lower through tile."""
    check(program(example, "pos", f"fused.D{length}"), example, "pos", batch, length, kind)


@pytest.mark.parametrize("example", ("transr", "rescal"))
@pytest.mark.parametrize("variant", ("D512", "fused.D512"))
def test_matrix_models_are_bitwise_deterministic(program, example, variant):
    """Identical inputs give bitwise-identical scores, call after call
    (FB15k-like relation skew: runs of one relation span tiles, and the
    sort's atomics order their edges differently every call), through tile
    and in the fused kernel."""
    fn = program(example, "pos", variant)
    generator = torch.Generator(device="cuda").manual_seed(11)
    args = make_inputs(fn.signature, "pos", 16384, 512, "uniform", 11)
    p = torch.arange(1, 1346, dtype=torch.float64, device="cuda") ** -1.1
    args["r"] = torch.multinomial(p, 16384, replacement=True, generator=generator)
    for name in [n for n, v in args.items() if v.is_floating_point() and v.dim() == 3]:
        args[name] = torch.randn(1345, 512, 512, generator=generator, device="cuda") / 512**0.5
    for name in [n for n, v in args.items() if v.is_floating_point() and v.dim() == 2
                 and n in ("Remb",)]:
        args[name] = torch.randn(1345, 512, generator=generator, device="cuda")
    first = fn(**args)["score"].clone()
    reference = REFERENCES[example](**args)
    assert ((first.double() - reference).norm() / reference.norm()).item() < 1e-5
    for _ in range(20):
        assert torch.equal(fn(**args)["score"], first)


@pytest.mark.parametrize("kind", ("uniform", "zipf", "identical"))
@pytest.mark.parametrize("batch", (37, 4095, 4096, 16384))
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e not in ("transr", "rescal")])
def test_batches_sorted_from_a_size_on(program, example, batch, kind):
    """reorder-min-batch=4096: batches of 4096 edges and more are sorted by
    head before scoring, smaller ones scored in their own order (the sort's
    steps skipped, its permutation never read); both like the reference."""
    check(program(example, "pos", "sort_large.D128"), example, "pos", batch, 128, kind)


@pytest.mark.parametrize("kind", ("zipf", "distinct"))
@pytest.mark.parametrize("mode", ("pos", "neg"))
@pytest.mark.parametrize("example", [e for e in EXAMPLES if e not in ("transr", "rescal")])
def test_default_layout_sorts_large_batches_by_entity(program, example, mode, kind):
    """By default a batch of 70,000 edges over 1000 entities (70 edges per
    entity) with rows of 512 is sorted by head before scoring
    (reorder_min_batch 65536, reorder_min_reuse 16, reorder_min_row 512;
    models without elementwise functions of vectors); over 70,000 distinct
    entities it is scored in its own order, and so is every batch with rows
    of 128. All like the reference."""
    check(program(example, mode, "dyn"), example, mode, 70000, 512, kind)
    check(program(example, mode, "dyn"), example, mode, 70000, 128, kind)


HALF_VARIANTS = (("dyn", 100), ("dyn", 512), ("D128", 128), ("D512", 512),
                 ("staged.D128", 128))


@pytest.mark.parametrize("kind", ("zipf", "distinct"))
@pytest.mark.parametrize("variant,length", HALF_VARIANTS,
                         ids=[f"{v}-{n}" for v, n in HALF_VARIANTS])
@pytest.mark.parametrize("batch", (37, 4096))
@pytest.mark.parametrize("mode", ("pos", "neg"))
@pytest.mark.parametrize("precision", ("bf16", "f16"))
@pytest.mark.parametrize("example", EXAMPLES)
def test_half_precision_tables(program, example, precision, mode, batch, variant, length, kind):
    """Every table in half precision: the kernel reads the rows in half
    precision, widens them and computes in f32, like the float64 reference
    on the same numbers."""
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[precision]
    check(program(example, mode, f"{precision}.{variant}"), example, mode, batch, length, kind,
          table_dtype=dtype)
