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
products — the [C, N] scores `S = Q E^T` and, in backward, `dQ = G E` and
`dE = G^T Q` — are three `tile` tasks (PRODUCTS) compiled once for every
model, on tensor cores at TF32 by default as Legend computes them
(`compile_products`; `products=None` takes torch.matmul instead, the
reference and the CPU path). The gathered rows' gradients go to the
trainer's row-sparse optimizer like those of the positives' kernels.

    shared = SharedNegatives(256, chunk_size=512, products=compile_products())
    trainer = Trainer(model, triples, negatives=shared, batch_size=4096)

Needs torch; the products need the runtime, compile_products the compiler.
"""

import pathlib

#: The three products as `tile` queries (GAMUT's syntax): the scores of a
#: chunk (Q [C, D] against the negatives' rows E [N, D]) and their two
#: gradients. Their sizes are symbols: one bundle each serves every chunk,
#: count and length.
PRODUCTS = {
    "scores": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += Q[i, k] * E[j, k]; }
  S[i, j] = accum;
}
""",
    "query_gradient": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += G[i, k] * E[k, j]; }
  dQ[i, j] = accum;
}
""",
    "negative_gradient": """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += G[k, i] * Q[k, j]; }
  dE[i, j] = accum;
}
""",
}


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
    after the first compile): `matrix_math` "tf32" (Legend's), "tf32x3"
    (FP32 accuracy on tensor cores) or "fma" (CUDA cores). Needs the
    compiler."""
    from . import tile
    return {name: tile.query(text, name=name).compile(matrix_math=matrix_math)
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


def _text(bundle):
    return bundle if isinstance(bundle, str) else bundle.text


class TileProducts:
    """The products of PRODUCTS as runtime programs on CUDA device
    `device` (each launched on PyTorch's current stream, so that a CUDA
    graph capturing it captures them); `product(Q, E)` is Q E^T with
    autograd."""

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

    def run(self, name, out_shape, like, **operands):
        import torch
        out = like.new_empty(out_shape)
        stream = torch.cuda.current_stream(like.device).cuda_stream
        output = {"scores": "S", "query_gradient": "dQ", "negative_gradient": "dE"}[name]
        self.programs[name](**{k: v.contiguous() for k, v in operands.items()},
                            **{output: out}, stream=stream)
        return out

    def product(self, Q, E):
        return self._function.apply(Q, E)


def _product_function(products):
    import torch

    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, Q, E):
            ctx.save_for_backward(Q, E)
            return products.run("scores", (Q.shape[0], E.shape[0]), Q, Q=Q, E=E)

        @staticmethod
        def backward(ctx, G):
            Q, E = ctx.saved_tensors
            G = G.contiguous()
            dQ = products.run("query_gradient", Q.shape, Q, G=G, E=E)
            dE = products.run("negative_gradient", E.shape, E, G=G, Q=Q)
            return dQ, dE

    return Product


class SharedNegatives:
    """The Trainer's `negatives` for chunked shared negatives: `count` (N)
    entities drawn per chunk and side (uniformly or by degree, as the
    trainer samples), chunks of `chunk_size` positives (default: the
    whole batch), the products on `tile` (`products`: compile_products'
    or load_products' bundles) or, with products=None, torch.matmul."""

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
        where = "tile" if self.bundles is not None else "torch.matmul"
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
                                 "(products=None takes torch.matmul)")
            self.products = TileProducts(self.bundles, device.index or 0)

    def negatives_per_positive(self):
        return 2 * self.count

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

        out = []
        for c in range(chunks):
            span = slice(c * chunk, min(b, (c + 1) * chunk))
            sides = []
            for head in (False, True):
                negative = drawn[2 * c + head]
                q = side(rows, h[span], r[span], t[span], head)
                e = torch.cat([rows(n, negative) for n in entity_tables], 1)
                product = (self.products.product(q, e) if self.products is not None
                           else q @ e.T)
                if distance:
                    squared = ((q * q).sum(1)[:, None] + (e * e).sum(1)[None, :]
                               - 2 * product)
                    sides.append(-squared.clamp_min(1e-30).sqrt())
                else:
                    sides.append(product)
            out.append(torch.cat(sides, 1))
        return torch.cat(out, 0) if chunks > 1 else out[0]

    def collect(self, captured):
        """Hands the gathered rows' gradients of the last plausibility()
        to `captured` (table, indices, rows), after backward."""
        for table, index, leaf in self._leaves:
            if leaf.grad is not None:
                captured.append((table, index, leaf.grad))
        self._leaves = []
