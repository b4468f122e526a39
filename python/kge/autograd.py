"""Compiled score functions as PyTorch operators with gradients.

A score function's bundle and its gradient function's bundle (from
`bvec-differentiate`, kge.compiler.gradient_module) make one
`torch.autograd`-aware operator: the forward kernel scores the batch, the
backward kernel turns the scores' gradient (one seed per edge) into the
gathered rows' gradients, which are summed into the tables' gradients —
dense (index_add_) or as sparse COO tensors for optimizers that take them
(torch.optim.SparseAdam, Adagrad)::

    score = kge.autograd.ScoreOperator(forward_bundle, gradient_bundle)
    E = torch.nn.Parameter(...); R = torch.nn.Parameter(...)
    loss = torch.nn.functional.softplus(-score(Eemb=E, Remb=R, h=h, r=r, t=t)).mean()
    loss.backward()          # E.grad, R.grad

A table of matrices (TransR's, RESCAL's) is differentiated with
`factor-matrices` (kge.compiler.gradient_module(..., factor_matrices=True)):
the gradient kernel returns the factors u, v of each edge's outer products
and the operator sums them per matrix, `C[key[k]] += u[k] (x) v[k]`, with
the `tile` segment product OUTER_SUM (pass its bundle as `outer_sum`,
kge.autograd.outer_sum_bundle()), instead of a matrix per edge.

Needs torch and the runtime (kge_runtime); not the compiler.
"""

import json
import re

#: The per-key sum of outer products that turns a matrix table's factored
#: gradient (`d_<table>_<indices>_u<n>`, `_v<n>`) into the table's gradient:
#: a segment matrix product along the edges, one matrix per key.
OUTER_SUM = """where (i in [0, M], j in [0, N]) {
  accum = 0;
  reduce (k in [0, K]) { accum += U[k, i] * V[k, j]; }
  C[key[k], i, j] += accum;
}
"""


class WholeTable:
    """A table's gradient handed whole to a row-sparse optimizer: in the
    operator's `captured` entries (table, index, rows), `rows` may be a
    WholeTable whose `grad` is shaped like the table, zero in the rows no
    edge reached, `index` then listing the rows the edges reached (with
    repeats). A matrix table's gradient comes this way: OUTER_SUM writes it
    for every matrix at once, and taking the rows reached out of it would
    need their unique list, a sort whose size only the GPU knows (which no
    CUDA graph can capture)."""

    __slots__ = ("grad",)

    def __init__(self, grad):
        self.grad = grad


def outer_sum_query():
    """OUTER_SUM as a kge.tile.Query (key: 64-bit indices). Needs the
    compiler."""
    from . import tile
    return tile.query(OUTER_SUM, name="outer_sum", dtypes={"key": "i64"})


def outer_sum_bundle():
    """The GPU bundle of OUTER_SUM (compiled once, then from the bundle
    cache). Needs the compiler."""
    return outer_sum_query().compile()


def current_device():
    """PyTorch's current CUDA device (set by torch.cuda.set_device, as each
    rank of a multi-GPU job does), 0 without PyTorch."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


class ScoreOperator:
    """`forward` and `gradient` are kge.Bundle objects or bundle texts of a
    score function `f` and of `f_grad`. Calling the operator with the
    function's arguments by name returns its (first) result as a tensor that
    autograd differentiates with respect to the floating-point tables that
    require gradients. `sparse=True` gives sparse COO gradients. The
    kernels run on CUDA device `device` (default: PyTorch's current one).
    `outer_sum`: the bundle of OUTER_SUM, needed when the gradient returns a
    matrix table's factors (with the compiler installed, compiled when not
    given)."""

    def __init__(self, forward, gradient, sparse=False, rows=False, device=None,
                 outer_sum=None):
        from . import runtime
        device = current_device() if device is None else device
        self.forward_program = runtime.Program(_text(forward), device)
        self.gradient_program = runtime.Program(_text(gradient), device)
        fwd = self.forward_program.signature["params"]
        grad = self.gradient_program.signature["params"]
        self.arguments = [p["name"] for p in fwd if p["role"] != "result"]
        self.results = [p["name"] for p in fwd if p["role"] == "result"]
        if len(self.results) != 1:
            raise ValueError(f"a score operator needs one result, the function has "
                             f"{len(self.results)}")
        self.seed = "d_" + self.results[0]
        grad_arguments = [p["name"] for p in grad if p["role"] != "result"]
        name = self.forward_program.signature["name"]
        if (self.gradient_program.signature["name"] != name + "_grad"
                or grad_arguments != self.arguments + [self.seed]):
            raise ValueError(
                "the gradient bundle is not the gradient of the score bundle: it is "
                f"{self.gradient_program.signature['name']}({', '.join(grad_arguments)}), "
                f"expected {name}_grad({', '.join(self.arguments + [self.seed])})")
        tables = [p["name"] for p in fwd if p["role"] == "table"]
        self.table_names = set(tables)
        # Each gradient result d_<table>_<indices>: where its rows go; the
        # factors d_<table>_<indices>_u<n> / _v<n> of a matrix table's
        # outer products: which matrices they sum into.
        self.gradients = []
        self.factors = {}
        for p in grad:
            if p["role"] != "result":
                continue
            name = p["name"]
            factor = re.fullmatch(r"(.*)_([uv])(\d+)", name)
            pairs = [(t, i) for t in tables for i in self.arguments
                     if name == f"d_{t}_{i}"]
            if not pairs and factor:
                pairs = [(t, i) for t in tables for i in self.arguments
                         if factor.group(1) == f"d_{t}_{i}"]
                if len(pairs) == 1:
                    terms = self.factors.setdefault(pairs[0], {})
                    terms.setdefault(int(factor.group(3)), {})[factor.group(2)] = name
                    continue
            if len(pairs) != 1:
                raise ValueError(f"gradient result {name!r} names no single "
                                 "(table, index array) pair")
            self.gradients.append((name,) + pairs[0])
        for (table, indices), terms in self.factors.items():
            if any(set(t) != {"u", "v"} for t in terms.values()):
                raise ValueError(f"the gradient of {table}[{indices}] lacks one factor of "
                                 "an outer product (each term needs _u<n> and _v<n>)")
            self.factors[(table, indices)] = [(terms[n]["u"], terms[n]["v"])
                                              for n in sorted(terms)]
        self.outer_sum_program = None
        if self.factors:
            if outer_sum is None:
                try:
                    outer_sum = outer_sum_bundle()
                except ImportError as error:
                    raise ValueError(
                        "the gradient returns the factors of a matrix table's outer "
                        "products: pass outer_sum=, the bundle of kge.autograd.OUTER_SUM "
                        "(outer_sum_bundle() where the compiler is)") from error
            self.outer_sum_program = runtime.Program(_text(outer_sum), device)
        self.sparse = sparse
        # With `rows`, backward leaves the tables' .grad alone and records
        # (table, indices, rows) in `captured` for a row-sparse optimizer
        # (kge.training.RowSparseOptimizer) to apply.
        self.rows = rows
        self.captured = []

    def matrix_gradients(self, named, rows, stream=None, only=None):
        """{(table, indices): gradient}: each factored matrix table's
        gradient (of the tables in `only`, default all), the per-key sum of
        its edges' outer products (OUTER_SUM over the terms' factors,
        stacked along the edges)."""
        import torch
        out = {}
        for (table, indices), terms in self.factors.items():
            if only is not None and table not in only:
                continue
            index = named[indices].reshape(-1).to(torch.int64)
            U = torch.cat([rows[u] for u, _ in terms]).float().contiguous()
            V = torch.cat([rows[v] for _, v in terms]).float().contiguous()
            key = index.repeat(len(terms)) if len(terms) > 1 else index.contiguous()
            C = torch.zeros(named[table].shape, dtype=torch.float32,
                            device=named[table].device)
            extra = {} if stream is None else {"stream": stream}
            self.outer_sum_program(U=U, V=V, key=key, C=C, **extra)
            out[(table, indices)] = C.to(named[table].dtype)
        return out

    def torch_op(self, name):
        """The operator registered with torch.library as `kge::<name>`
        (and its gradient as `kge::<name>_grad`): called with the function's
        arguments in order, it returns the scores; autograd gives dense
        gradients of the floating-point tables. As custom ops, both are
        opaque to torch.compile (which traces around them: `fullgraph=True`
        holds) and launch on the current stream, so a CUDA graph that
        captures that stream captures them (after a warm-up call on it,
        which allocates the kernels' scratch for the stream)."""
        import torch
        if not name.isidentifier():
            raise ValueError(f"operator name must be an identifier, got {name!r}")
        op = self
        args = ", ".join(self.arguments)
        tables = [n for n in self.arguments
                  if n in {t for _, t, _ in self.gradients} | {t for t, _ in self.factors}]
        first_index = next(n for n in self.arguments if n not in self.table_names)
        first_table = next(n for n in self.arguments if n in self.table_names)

        def stream():
            return torch.cuda.current_stream().cuda_stream

        def forward_impl(*tensors):
            named = dict(zip(op.arguments, tensors))
            return op.forward_program(**named, stream=stream())[op.results[0]]

        def forward_fake(*tensors):
            named = dict(zip(op.arguments, tensors))
            return named[first_table].new_empty(named[first_index].shape[0])

        def gradient_impl(*tensors):
            named = dict(zip(op.arguments, tensors[:-1]))
            seed = tensors[-1].contiguous().float()
            rows = op.gradient_program(**named, **{op.seed: seed}, stream=stream())
            dense = {t: torch.zeros_like(named[t]) for t in tables}
            for result, table, indices in op.gradients:
                dense[table].index_add_(0, named[indices].reshape(-1),
                                        rows[result].to(named[table].dtype))
            for (table, _), grad in op.matrix_gradients(named, rows, stream()).items():
                dense[table] += grad
            return [dense[t] for t in tables]

        def gradient_fake(*tensors):
            named = dict(zip(op.arguments, tensors[:-1]))
            return [torch.empty_like(named[t]) for t in tables]

        # custom_op reads the parameters of the functions it wraps: give
        # them the score function's argument names.
        namespace = {"forward_impl": forward_impl, "forward_fake": forward_fake,
                     "gradient_impl": gradient_impl, "gradient_fake": gradient_fake}
        exec(f"def forward({args}): return forward_impl({args})\n"
             f"def forward_abstract({args}): return forward_fake({args})\n"
             f"def gradient({args}, seed): return gradient_impl({args}, seed)\n"
             f"def gradient_abstract({args}, seed): return gradient_fake({args}, seed)\n",
             namespace)
        schema = "(" + ", ".join(f"Tensor {n}" for n in self.arguments) + ")"
        score_op = torch.library.custom_op(f"kge::{name}", namespace["forward"],
                                           mutates_args=(), schema=schema + " -> Tensor")
        score_op.register_fake(namespace["forward_abstract"])
        grad_op = torch.library.custom_op(
            f"kge::{name}_grad", namespace["gradient"], mutates_args=(),
            schema=schema[:-1] + ", Tensor seed) -> Tensor[]")
        grad_op.register_fake(namespace["gradient_abstract"])
        position = {n: i for i, n in enumerate(self.arguments)}

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        def backward(ctx, seed):
            inputs = ctx.saved_tensors
            grads = [None] * len(inputs)
            for table, grad in zip(tables, grad_op(*inputs, seed)):
                grads[position[table]] = grad
            return tuple(grads)

        score_op.register_autograd(backward, setup_context=setup_context)
        return score_op

    def __call__(self, **tensors):
        missing = [n for n in self.arguments if n not in tensors]
        extra = [n for n in tensors if n not in self.arguments]
        if missing or extra:
            raise TypeError(f"the score function takes {', '.join(self.arguments)}"
                            + (f"; missing {', '.join(missing)}" if missing else "")
                            + (f"; unknown {', '.join(extra)}" if extra else ""))
        return _ScoreFunction.apply(self, *[tensors[n] for n in self.arguments])


def _text(bundle):
    if isinstance(bundle, str):
        json.loads(bundle)  # a clear error for a text that is not a bundle
        return bundle
    return bundle.text


def _on_stream(tensors):
    """{"stream": handle} of PyTorch's current stream on the tensors' CUDA
    device: the kernels then run in order with PyTorch's work, also while a
    CUDA graph captures that stream (kge.training's graphed step)."""
    import torch
    first = next((t for t in tensors if isinstance(t, torch.Tensor)), None)
    if first is None or not first.is_cuda:
        return {}
    return {"stream": torch.cuda.current_stream(first.device).cuda_stream}


def _autograd_function():
    import torch

    class ScoreFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, op, *tensors):
            named = dict(zip(op.arguments, tensors))
            ctx.op = op
            ctx.save_for_backward(*tensors)
            with torch.no_grad():
                return op.forward_program(**named, **_on_stream(tensors))[op.results[0]]

        @staticmethod
        def backward(ctx, seed):
            op = ctx.op
            tensors = ctx.saved_tensors
            named = dict(zip(op.arguments, tensors))
            position = {n: i for i, n in enumerate(op.arguments)}
            wanted = ctx.needs_input_grad[1:]
            grads = [None] * len(tensors)
            on_stream = _on_stream(tensors)
            rows = op.gradient_program(**named, **{op.seed: seed.contiguous().float()},
                                       **on_stream)
            for result, table, indices in op.gradients:
                i = position[table]
                if not wanted[i]:
                    continue
                index = named[indices].reshape(-1)
                values = rows[result].to(named[table].dtype)
                if op.rows:
                    op.captured.append((table, index, values))
                elif op.sparse:
                    part = torch.sparse_coo_tensor(index.unsqueeze(0), values,
                                                   named[table].shape)
                    grads[i] = part if grads[i] is None else grads[i] + part
                else:
                    if grads[i] is None:
                        grads[i] = torch.zeros_like(named[table])
                    grads[i].index_add_(0, index, values)
            needed = {t for t, _ in op.factors if wanted[position[t]]}
            for (table, indices), grad in op.matrix_gradients(
                    named, rows, on_stream.get("stream"), only=needed).items():
                i = position[table]
                if not (op.rows or op.sparse):
                    grads[i] = grad if grads[i] is None else grads[i] + grad
                    continue
                # Row-sparse: the matrices the batch reached (a sparse
                # optimizer leaves the others' states alone).
                if op.rows:
                    op.captured.append((table, named[indices].reshape(-1), WholeTable(grad)))
                else:
                    present = torch.unique(named[indices])
                    part = torch.sparse_coo_tensor(present.unsqueeze(0), grad[present],
                                                   grad.shape)
                    grads[i] = part if grads[i] is None else grads[i] + part
            if op.sparse and not op.rows:
                grads = [g.coalesce() if g is not None else None for g in grads]
            return (None, *grads)

    return ScoreFunction


class _Lazy:
    """The autograd.Function, created on first use (torch imported then)."""

    _function = None

    @classmethod
    def apply(cls, *args):
        if cls._function is None:
            cls._function = _autograd_function()
        return cls._function.apply(*args)


_ScoreFunction = _Lazy
