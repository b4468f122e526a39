"""Training against chunked shared negatives (Legend's and
PyTorch-BigGraph's batched negative sampling), the products on `tile`.

A batch of B positives is cut into chunks of C edges; each chunk is scored
against N entities drawn for it, once as corrupted tails and once as
corrupted heads (PyTorch-BigGraph scores both sides), so a positive meets
2N negatives while the batch reads only 2N rows per chunk. A model whose
score is a comparison of a query vector of the edge's other side with the
negative's rows turns each chunk's scores into one matrix product:

    model       corrupted tail: q          corrupted head: q      compare
    distmult    h * r                      r * t                  q . e
    complex     (hr, hi) x (rr, ri)        conj(r) x (tr, ti)     q . (er, ei)
    transe_l2   h + r                      t - r                  -|q - e|_2

(`transe_l2`'s distance is sqrt(|q|^2 + |e|^2 - 2 q . e), PyTorch-BigGraph's
form, clamped at 1e-30 before the root: its subgradient at zero distance is
zero). The query side is elementwise in PyTorch on the gathered rows; the
products — the scores of every chunk and side, `S = Q E^T` per chunk, and,
in backward, `dQ = G E` and `dE = G^T Q` — are three `tile` tasks
(PRODUCTS: segment products, a matrix of negatives per chunk and side, one
kernel each per step after a sort of the keys) compiled once for every model, on tensor cores at
TF32 by default as Legend computes them (`compile_products`;
`products=None` takes cuBLAS through torch.bmm instead, as
PyTorch-BigGraph does: the reference and the CPU path). The gathered rows' gradients go to the trainer's row-sparse
optimizer like those of the positives' kernels.

    shared = SharedNegatives(256, chunk_size=512, products=compile_products())
    trainer = Trainer(model, triples, negatives=shared, batch_size=4096)

Needs torch; the products need the runtime, compile_products the compiler.
"""

import pathlib

from .autograd import _text

#: The three products as `tile` queries (GAMUT's syntax), over the rows
#: of every chunk and side at once: row i of Q [R, D] (a positive's query
#: vector on one side) is scored against the N rows of its key's matrix
#: E[key[i]] ([keys, N, D]: the negatives' rows of its chunk and side) —
#: tile's segment iterators, a matrix per row's key, as Pigeon's typed
#: linear layers — and the scores' gradient G [R, N] goes back as
#: dQ = G E[key] (segments again) and dE[key] += G^T Q (a matrix per key of
#: the reduction's steps). One kernel per product and step, whatever the
#: number of chunks (after a counting sort of the keys). Their sizes are symbols: one bundle each serves every
#: batch, chunk, count and length.
PRODUCTS = {
    "scores": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += Q[i, k] * E[key[i], j, k]; }
  S[i, j] = accum;
}
""",
    "query_gradient": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += G[i, k] * E[key[i], k, j]; }
  dQ[i, j] = accum;
}
""",
    "negative_gradient": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += G[k, i] * Q[k, j]; }
  dE[key[k], i, j] += accum;
}
""",
}
# The keys are 64-bit (PyTorch's indices).
_DTYPES = {"key": "i64"}


def _distmult(rows, h, r, t, head):
    return rows("Remb", r) * rows("Eemb", t if head else h)


def _complex(rows, h, r, t, head):
    import torch
    rre, rim = rows("Rre", r), rows("Rim", r)
    if head:
        # Re(<h, r, conj(t)>) = h_re (r_re t_re + r_im t_im)
        #                     + h_im (r_re t_im - r_im t_re)
        tre, tim = rows("Ere", t), rows("Eim", t)
        return torch.cat([rre * tre + rim * tim, rre * tim - rim * tre], 1)
    hre, him = rows("Ere", h), rows("Eim", h)
    return torch.cat([hre * rre - him * rim, hre * rim + him * rre], 1)


def _transe_l2(rows, h, r, t, head):
    relation = rows("Remb", r)
    return rows("Eemb", t) - relation if head else rows("Eemb", h) + relation


#: model: (its query side, the entity tables a negative's row spans,
#: whether it compares by distance).
MODELS = {
    "distmult": (_distmult, ("Eemb",), False),
    "complex": (_complex, ("Ere", "Eim"), False),
    "transe_l2": (_transe_l2, ("Eemb",), True),
}


def compile_products(matrix_math="tf32"):
    """{name: kge.Bundle} of PRODUCTS for the GPU (from the bundle cache
    after the first compile): on tensor cores (mma.sync) at `matrix_math`
    "tf32" (Legend's precision) or "tf32x3" (FP32 accuracy), or on CUDA
    cores with "fma" (rows that are not whole 16-byte chunks, a length
    or count not a multiple of 4, take CUDA cores too). Needs the
    compiler."""
    from . import tile
    return {name: tile.query(text, name=name, dtypes=_DTYPES).compile(matrix_math=matrix_math)
            for name, text in PRODUCTS.items()}


def save_products(products, directory):
    """Writes compile_products' bundles as <directory>/<name>.kgebundle."""
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, bundle in products.items():
        (directory / f"{name}.kgebundle").write_text(_text(bundle))


def load_products(directory):
    """The bundle texts save_products wrote (for a machine without the
    compiler)."""
    directory = pathlib.Path(directory)
    texts = {}
    for name in PRODUCTS:
        path = directory / f"{name}.kgebundle"
        if not path.exists():
            raise FileNotFoundError(f"no bundle {path} (write it with "
                                    "kge.shared_negatives.save_products)")
        texts[name] = path.read_text()
    return texts


class TileProducts:
    """The products of PRODUCTS as runtime programs on CUDA device
    `device` (each launched on PyTorch's current stream, so that a CUDA
    graph capturing it captures them); `product(Q, E, key)` is
    S[i] = E[key[i]] Q[i] with autograd."""

    def __init__(self, bundles, device=None):
        from . import runtime
        from .autograd import current_device
        missing = [n for n in PRODUCTS if n not in bundles]
        if missing:
            raise ValueError(f"the shared-negative products lack {', '.join(missing)} "
                             f"(expected the bundles of {', '.join(PRODUCTS)})")
        device = current_device() if device is None else device
        self.programs = {}
        for name in PRODUCTS:
            program = runtime.Program(_text(bundles[name]), device)
            if program.signature["name"] != name:
                raise ValueError(f"bundle {name!r} holds {program.signature['name']!r}, not "
                                 f"the product {name!r} of PRODUCTS")
            self.programs[name] = program
        self._function = _product_function(self)

    def run(self, name, out, **operands):
        """Runs product `name` into `out` (dE accumulates: pass it
        cleared)."""
        import torch
        stream = torch.cuda.current_stream(out.device).cuda_stream
        output = {"scores": "S", "query_gradient": "dQ", "negative_gradient": "dE"}[name]
        self.programs[name](**{k: v.contiguous() for k, v in operands.items()},
                            **{output: out}, stream=stream)
        return out

    def product(self, Q, E, key):
        return self._function.apply(Q, E, key)


def _product_function(products):
    import torch

    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, Q, E, key):
            ctx.save_for_backward(Q, E, key)
            return products.run("scores", Q.new_empty(Q.shape[0], E.shape[1]), Q=Q, E=E,
                                key=key)

        @staticmethod
        def backward(ctx, G):
            Q, E, key = ctx.saved_tensors
            G = G.contiguous()
            dQ = products.run("query_gradient", torch.empty_like(Q), G=G, E=E, key=key)
            dE = products.run("negative_gradient", torch.zeros_like(E), G=G, Q=Q, key=key)
            return dQ, dE, None

    return Product


def _matmul_product(Q, E, b, chunk):
    """product() in cuBLAS through PyTorch, as PyTorch-BigGraph computes it:
    one torch.bmm over the chunks and sides when the chunks are equal, else
    one torch.matmul per chunk and side (Q's rows: the b tails' then the b
    heads' query vectors; E's matrices by key 2 chunk + side)."""
    import torch
    keys, n, d = E.shape
    chunks = keys // 2
    # E's matrices in Q's order: side, then chunk.
    E = E.view(chunks, 2, n, d).transpose(0, 1).reshape(keys, n, d)
    if b % chunk == 0:
        return torch.bmm(Q.view(keys, chunk, d), E.transpose(1, 2)).view(2 * b, n)
    spans = [(s * chunks + c, s * b + c * chunk, s * b + min(b, (c + 1) * chunk))
             for s in (0, 1) for c in range(chunks)]
    return torch.cat([Q[first:end] @ E[k].T for k, first, end in spans], 0)


class SharedNegatives:
    """The Trainer's `negatives` for chunked shared negatives: `count` (N)
    entities drawn per chunk and side (uniformly or by degree, as the
    trainer samples), chunks of `chunk_size` positives (default: the
    whole batch), the products on `tile` (`products`: compile_products'
    or load_products' bundles) or, with products=None, torch.bmm (or a
    torch.matmul per chunk and side when the batch's last chunk is
    shorter)."""

    def __init__(self, count, chunk_size=None, products=None):
        for what, value in (("count", count), ("chunk_size", chunk_size)):
            if value is None and what == "chunk_size":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"shared negatives: {what} must be a positive integer, got "
                                 f"{value!r}")
        self.count, self.chunk_size = count, chunk_size
        self.bundles = products
        self.products = None

    def __repr__(self):
        where = "tile" if self.bundles is not None else "torch.bmm"
        return (f"SharedNegatives(count={self.count}, chunk_size={self.chunk_size}, "
                f"products on {where})")

    def bind(self, model, device):
        """Checks that `model` scores shared negatives; loads the products
        on `device`."""
        import torch
        if model.name not in MODELS:
            raise ValueError(f"{model.name} has no shared-negative form (models with one: "
                             f"{', '.join(MODELS)})")
        if self.bundles is not None:
            device = torch.device(device)
            if device.type != "cuda":
                raise ValueError("the shared-negative products on tile run on a CUDA device "
                                 "(products=None takes torch.bmm)")
            self.products = TileProducts(self.bundles, device.index if device.index is not None
                                         else torch.cuda.current_device())

    def plausibility(self, trainer, h, r, t):
        """[b, 2N] plausibilities of the positives (h, r, t) against their
        chunk's negatives: N corrupted tails, then N corrupted heads. With
        a row-sparse optimizer, the gathered rows' gradients reach it
        through the model operator's `captured` after backward (call
        `collect` then)."""
        import torch
        import torch.nn.functional as F
        model = trainer.model
        side, entity_tables, distance = MODELS[model.name]
        b = len(h)
        chunk = self.chunk_size or b
        chunks = -(-b // chunk)
        # The negatives of every chunk and side: [2 chunks, N] entities.
        drawn = trainer.corruptions(h.new_empty(2 * chunks), None, None, self.count)
        leaves = self._leaves = []

        def rows(table, index):
            if model.operator is None:
                return F.embedding(index, model.tables[table], sparse=True)
            leaf = model.tables[table].detach()[index].requires_grad_()
            leaves.append((table, index, leaf))
            return leaf

        # Every chunk's rows on both sides at once: the query vectors of
        # the corrupted tails (rows 0..b-1) then of the corrupted heads
        # (b..2b-1); row i's key is 2 chunk + side, whose matrix holds
        # that chunk's negatives on that side.
        q = torch.cat([side(rows, h, r, t, False), side(rows, h, r, t, True)], 0)
        e = torch.cat([rows(n, drawn.reshape(-1)) for n in entity_tables], 1).view(
            2 * chunks, self.count, -1)
        chunk_of = torch.arange(b, device=h.device) // chunk
        key = torch.cat([2 * chunk_of, 2 * chunk_of + 1])
        product = (self.products.product(q, e, key) if self.products is not None
                   else _matmul_product(q, e, b, chunk))
        if distance:
            squared = ((q * q).sum(1)[:, None] + (e * e).sum(2)[key] - 2 * product)
            product = -squared.clamp_min(1e-30).sqrt()
        return torch.cat([product[:b], product[b:]], 1)

    def collect(self, captured):
        """Hands the gathered rows' gradients of the last plausibility()
        to `captured` (table, indices, rows), after backward."""
        for table, index, leaf in self._leaves:
            if leaf.grad is not None:
                captured.append((table, index, leaf.grad))
        self._leaves = []
