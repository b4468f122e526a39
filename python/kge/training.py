"""Training KGE models on the GPU with KGE's kernels.

A model is a score function compiled twice — its forward kernel and the
kernel of its gradient function (`bvec-differentiate`) — and its tables
(entity and relation embeddings, resident on the GPU). A training step
samples negatives on the GPU, scores positives and negatives in one kernel
call (kge.autograd.ScoreOperator), computes the loss in PyTorch and
propagates it back through the gradient kernel to row-sparse table
gradients, which a sparse optimizer (Adagrad or Adam over the touched rows)
applies. Evaluation is the filtered ranking protocol on the GPU (MRR,
Hits@1/3/10, ties counted half as in kge.link_prediction).

    fwd, grad, _ = compile_model("distmult", dim=128)       # needs the compiler
    model = Model.create("distmult", fwd, grad, entities, relations, dim=128)
    trainer = Trainer(model, train_triples, loss="softplus", negatives=16)
    for epoch in range(10):
        trainer.train_epoch()
    metrics = evaluate(model, test_triples, known)

`Trainer` also takes any score callable with the same interface
(`eager_score`, a plain PyTorch implementation), which the benchmarks use
as the baseline with everything else equal. Needs torch and the runtime;
compile_model needs the compiler.
"""

import math
import pathlib
import time

import numpy as np

from .autograd import WholeTable

# Where the models' score functions are: the package's copy (the build
# puts examples/bvec's there) or the source tree's examples.
_MODEL_DIRS = (pathlib.Path(__file__).resolve().parent / "models",
               pathlib.Path(__file__).resolve().parents[2] / "examples" / "bvec")

# name: (example score function, scores are distances, tables by kind).
MODELS = {
    "transe_l1": ("transe_l1", True, {"Eemb": "entity", "Remb": "relation"}),
    "transe_l2": ("transe_l2", True, {"Eemb": "entity", "Remb": "relation"}),
    "distmult": ("distmult", False, {"Eemb": "entity", "Remb": "relation"}),
    "complex": ("complex", False, {"Ere": "entity", "Eim": "entity", "Rre": "relation",
                                   "Rim": "relation"}),
    "rotate": ("rotate", True, {"Ere": "entity", "Eim": "entity", "Rph": "relation"}),
    # Pm: a dim x dim matrix per relation (its gradient summed per relation
    # by kge.autograd.OUTER_SUM).
    "transr": ("transr", True, {"Eemb": "entity", "Remb": "relation", "Pm": "relation"}),
}
# Tables of matrices (one [dim, dim] matrix per row).
MATRIX_TABLES = {"Pm"}
LOSSES = ("margin", "softplus", "adversarial", "softmax")
OPTIMIZERS = ("adagrad", "adam")
SAMPLERS = ("uniform", "degree")


class TrainingError(RuntimeError):
    """Training stopped: a non-finite loss (with the batch that caused it)."""


def _spec(name):
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r} (expected one of {', '.join(MODELS)})")
    return MODELS[name]


def has_matrices(name):
    """Whether model `name` has a table of matrices (TransR), whose
    gradient needs the OUTER_SUM bundle."""
    return any(t in MATRIX_TABLES for t in _spec(name)[2])


def compile_model(name, dim, source=None):
    """The forward, gradient and outer-sum bundles (kge.Bundle) of model
    `name` for embeddings of length `dim` (the outer-sum bundle
    kge.autograd.OUTER_SUM only for a model with a table of matrices,
    else None); `source` is the bvec text of its score function (default:
    examples/bvec/<example>.mlir, which the build copies into the package
    as kge/models)."""
    from . import ir
    from .autograd import outer_sum_bundle
    from .compiler import compile_bundle, gradient_module
    example, _, _ = _spec(name)
    if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    if source is None:
        found = [d / f"{example}.mlir" for d in _MODEL_DIRS if (d / f"{example}.mlir").exists()]
        if not found:
            raise FileNotFoundError(f"the score function of {name} ({example}.mlir) is in none of "
                                    f"{', '.join(map(str, _MODEL_DIRS))}; pass source=")
        source = found[0].read_text()
    module = ir.Module.parse(ir.Context(), source)
    sizes = {d: dim for p in ir.signature(module, example)["params"]
             for d in p["shape"][1:] if isinstance(d, str)}
    return (compile_bundle(module, sizes=sizes),
            compile_bundle(gradient_module(module, example, factor_matrices=True), sizes=sizes),
            outer_sum_bundle() if has_matrices(name) else None)


def load_bundles(directory, name, dim):
    """The forward, gradient and outer-sum bundle texts of model `name` at
    length `dim` from `directory` (<example>.fwd.D<dim>.kgebundle,
    <example>.grad.D<dim>.kgebundle and, for a model with a table of
    matrices, outer_sum.kgebundle, else None), as
    test/gpu/build_gradient_bundles.py writes them."""
    example = _spec(name)[0]
    paths = [pathlib.Path(directory) / f"{example}.{kind}.D{dim}.kgebundle"
             for kind in ("fwd", "grad")]
    if has_matrices(name):
        paths.append(pathlib.Path(directory) / "outer_sum.kgebundle")
    texts = []
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no bundle {path} (build it with "
                                    f"test/gpu/build_gradient_bundles.py --lengths {dim})")
        texts.append(path.read_text())
    return tuple(texts) + (None,) * (3 - len(texts))


def eager_score(name, gather=None):
    """Model `name`'s score in plain PyTorch (the tables read through
    sparse embedding lookups, or through `gather(table, index)`): the
    baseline of the benchmarks."""
    import torch
    import torch.nn.functional as F

    def rows(table, index):
        if gather is not None:
            return gather(table, index)
        if table.dim() > 2:  # a matrix per row: a dense gradient
            return table[index]
        return F.embedding(index, table, sparse=True)

    def transe(p):
        def score(Eemb, Remb, h, r, t):
            return torch.linalg.vector_norm(rows(Eemb, h) + rows(Remb, r) - rows(Eemb, t),
                                            ord=p, dim=-1)
        return score

    def distmult(Eemb, Remb, h, r, t):
        return (rows(Eemb, h) * rows(Remb, r) * rows(Eemb, t)).sum(-1)

    def complex_(Ere, Eim, Rre, Rim, h, r, t):
        hre, him, tre, tim = rows(Ere, h), rows(Eim, h), rows(Ere, t), rows(Eim, t)
        rre, rim = rows(Rre, r), rows(Rim, r)
        return ((hre * rre - him * rim) * tre).sum(-1) + ((hre * rim + him * rre) * tim).sum(-1)

    def rotate(Ere, Eim, Rph, h, r, t):
        hre, him, tre, tim = rows(Ere, h), rows(Eim, h), rows(Ere, t), rows(Eim, t)
        phase = rows(Rph, r)
        rre, rim = torch.cos(phase), torch.sin(phase)
        real = hre * rre - him * rim - tre
        imag = hre * rim + him * rre - tim
        return torch.sqrt(real * real + imag * imag).sum(-1)

    def transr(Eemb, Remb, Pm, h, r, t):
        # Each relation's edges times its matrix, one product per relation
        # present (the edges sorted by relation), rather than a [B, D, D]
        # gather of a matrix per edge.
        diff = rows(Eemb, h) - rows(Eemb, t)
        order = torch.argsort(r)
        present, counts = torch.unique_consecutive(r[order], return_counts=True)
        parts = torch.split(diff[order], counts.tolist())
        projected = torch.cat([part @ m for part, m in zip(parts, rows(Pm, present))])
        projected = projected[torch.argsort(order)]
        return torch.linalg.vector_norm(projected + rows(Remb, r), ord=2, dim=-1)

    _spec(name)
    return {"transe_l1": transe(1), "transe_l2": transe(2), "distmult": distmult,
            "complex": complex_, "rotate": rotate, "transr": transr}[name]


class EagerRows:
    """Model `name`'s plain PyTorch score as an operator like
    kge.autograd.ScoreOperator with `rows=True`: called with the tables and
    indices by name, it scores; backward leaves the tables' .grad alone and
    records the gathered rows' gradients (table, indices, rows) in
    `captured` for RowSparseOptimizer. The reference of the row-sparse
    path, and the CPU engine of the tests."""

    def __init__(self, name):
        import torch

        op = self

        class Gather(torch.autograd.Function):
            @staticmethod
            def forward(ctx, table, index, table_name):
                ctx.index, ctx.table_name = index, table_name
                return table[index]

            @staticmethod
            def backward(ctx, grad):
                op.captured.append((ctx.table_name, ctx.index, grad))
                return None, None, None

        self.captured = []
        self._names = {}
        self._score = eager_score(
            name, lambda table, index: Gather.apply(table, index, self._names[id(table)]))

    def __call__(self, **tensors):
        self._names = {id(t): n for n, t in tensors.items()}
        return self._score(**tensors)


def _operator(name, forward, gradient, eager, gradients, outer_sum=None):
    """A model's score callable score(tables, h, r, t) and, with `gradients`
    "rows", the operator whose `captured` rows a RowSparseOptimizer takes
    (KGE's kernels, or plain PyTorch with `eager`)."""
    if gradients not in ("dense", "sparse", "rows"):
        raise ValueError(f"gradients must be dense, sparse or rows, got {gradients!r}")
    if eager:
        if gradients == "rows":
            op = EagerRows(name)
            return (lambda t, h, r, tt: op(**t, h=h, r=r, t=tt)), op
        fn = eager_score(name)
        return (lambda t, h, r, tt: fn(**t, h=h, r=r, t=tt)), None
    from .autograd import ScoreOperator
    op = ScoreOperator(forward, gradient, sparse=gradients == "sparse",
                       rows=gradients == "rows", outer_sum=outer_sum)
    return (lambda t, h, r, tt: op(**t, h=h, r=r, t=tt)), (op if gradients == "rows" else None)


def init_rows(name, table, rows, dim, generator):
    """`rows` initial rows of table `table` of model `name`: uniform in
    [-1/sqrt(dim), 1/sqrt(dim)] (RotatE's phases in [-pi, pi]); TransR's
    matrices the identity (TransR starts as TransE)."""
    import torch
    if table in MATRIX_TABLES:
        return torch.eye(dim).expand(rows, dim, dim).clone()
    scale = math.pi if table == "Rph" else 1 / math.sqrt(dim)
    return (torch.rand(rows, dim, generator=generator) * 2 - 1) * scale


class Model:
    """A model's tables (torch.nn.Parameters on the GPU) and its score:
    `score(tables, h, r, t)` gives one score per edge; `distance` says
    that lower scores are more plausible."""

    def __init__(self, name, tables, score, distance, operator=None, eager=False):
        self.name, self.tables, self.score, self.distance = name, tables, score, distance
        # Plain PyTorch scores (a matrix table's gradient is then dense).
        self.eager = eager
        # KGE's operator when it hands row gradients to a RowSparseOptimizer.
        self.operator = operator

    @classmethod
    def create(cls, name, forward=None, gradient=None, num_entities=None, num_relations=None,
               dim=None, seed=0, device="cuda", eager=False, gradients="rows", outer_sum=None):
        """Tables initialized by init_rows; the score through KGE's kernels
        (the bundles of compile_model, `outer_sum` its third) or, with
        `eager`, plain PyTorch.
        Gradients go to the tables' .grad (`gradients` "dense" or "sparse")
        or, with "rows", straight to the Trainer's row-sparse optimizer."""
        import torch
        _, distance, kinds = _spec(name)
        for what, value in (("num_entities", num_entities), ("num_relations", num_relations),
                            ("dim", dim)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{what} must be a positive integer, got {value!r}")
        score, op = _operator(name, forward, gradient, eager, gradients, outer_sum)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        tables = {}
        for table, kind in kinds.items():
            rows = num_entities if kind == "entity" else num_relations
            values = init_rows(name, table, rows, dim, generator)
            tables[table] = torch.nn.Parameter(values.to(device))
        return cls(name, tables, score, distance, op, eager)

    def rows_of(self, kind):
        """The rows of the model's tables of `kind` ("entity" or
        "relation")."""
        kinds = _spec(self.name)[2]
        return min(t.shape[0] for n, t in self.tables.items() if kinds[n] == kind)

    def plausibility(self, h, r, t):
        s = self.score(self.tables, h, r, t)
        return -s if self.distance else s


# A table's "first bad index" slot when no index was out of range.
_NO_BAD_INDEX = 2 ** 63 - 1


def _probe_row_kernels(runtime, device):
    """`runtime` once its row kernels ran on `device` (one row added): the
    device library loads and links there. Raises otherwise."""
    import torch
    one = torch.zeros(1, 1, device=device)
    bad = torch.full((1,), _NO_BAD_INDEX, dtype=torch.int64, device=device)
    runtime.rows_add(torch.zeros(1, dtype=torch.int64, device=device), one, one.clone(), bad,
                     stream=torch.cuda.current_stream(device).cuda_stream)
    return runtime


def _sum_by_unique(param, parts, add):
    """(unique, grad): the table rows that `parts` ((index, rows) pairs)
    reach, sorted, and their gradients summed into a [unique, ...] buffer
    by `add(positions, rows, grad)` (positions: rows' places in unique)."""
    import torch
    index = torch.cat([i for i, _ in parts]) if len(parts) > 1 else parts[0][0]
    unique, inverse = torch.unique(index.long(), return_inverse=True)
    grad = torch.zeros((len(unique),) + tuple(param.shape[1:]), device=param.device,
                       dtype=param.dtype)
    offset = 0
    for i, rows in parts:
        add(inverse[offset:offset + len(i)], rows, grad)
        offset += len(i)
    return unique, grad


def _reached_rows(index, rows):
    """(unique rows reached, their gradients) for a WholeTable part; other
    parts as they are."""
    import torch
    if not isinstance(rows, WholeTable):
        return index, rows
    reached = torch.unique(index)
    return reached, rows.grad[reached]


class RowSparseOptimizer:
    """Adagrad or Adam applied to the rows a step touched, from the gathered
    rows' gradients (table, indices, rows) that KGE's gradient kernel gives,
    with the updates of torch.optim.Adagrad (sparse gradients) and of
    torch.optim.SparseAdam (lazy Adam: the moments of untouched rows stay).

    Duplicate rows are summed once per table, in one of two ways:
    - a table with more than DENSE_RATIO times the rows the step gathers
      (large graphs): the indices sorted and made unique, the rows summed
      into a [unique, D] buffer, the unique rows and their states updated;
    - a table with at most DENSE_RATIO times as many rows as the step
      gathers (relations, and entities of graphs of moderate size, where a
      pass over a buffer of the table's size costs about what the sort
      would): the rows summed into a buffer of the table's size and every
      row updated, untouched ones unchanged (a zero gradient, or masked
      for Adam) — no sort and no wait for the GPU, so the host runs ahead
      and the step can be captured in a CUDA graph (not for the tables
      named in `rows_only`, whose untouched rows another stream may be
      writing).

    On the GPU (float32 tables, with the runtime) the sums and the updates
    are the device library's kernels (kge.runtime.rows_add, adagrad_rows,
    adam_rows: `fused`): vector atomics into the buffer, then one pass over
    the rows reached, which also clears the buffer for the next step.
    Elsewhere, or with fused=False, PyTorch's operations do the same. A
    gradient row whose index is beyond its table is skipped by the kernels
    and reported by check() (which the Trainer calls with its loss
    checks)."""

    # A table of up to this many times the rows a step gathers is summed
    # densely (above). (Chunked shared negatives gather few rows: the
    # WN18-like graph's 64,319 entities against 20,480 rows of a batch of
    # 4,096 with 512 negatives per chunk of 1,024 and side.)
    DENSE_RATIO = 4

    def __init__(self, tables, method="adagrad", lr=0.1, eps=None, betas=(0.9, 0.999),
                 rows_only=(), fused="auto"):
        import torch
        if method not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {method!r} (expected one of "
                             f"{', '.join(OPTIMIZERS)})")
        self.tables, self.method, self.lr, self.betas = tables, method, lr, betas
        self.eps = eps if eps is not None else (1e-10 if method == "adagrad" else 1e-8)
        self.steps = 0
        self.state = {n: [torch.zeros_like(t) for _ in range(self.state_count(method))]
                      for n, t in tables.items()}
        # Adam's step count on the device too: its bias correction is then
        # computed there, so that a step captured in a CUDA graph (the
        # Trainer's graphed step) corrects by the count of each replay.
        device = next(iter(tables.values())).device
        self.count = torch.zeros((), dtype=torch.float64, device=device)
        self.workspace = {}
        # Whether the last step updated every table through its dense path
        # (no sort, no wait for the GPU: a step that may be captured).
        self.dense_only = True
        # Tables whose untouched rows must not be written (another stream
        # copies into them: the out-of-core buffer) take the sorted path.
        self.rows_only = set(rows_only)
        if fused not in ("auto", True, False):
            raise ValueError(f"fused must be 'auto', True or False, got {fused!r}")
        self.kernels = None
        if fused is not False and device.type == "cuda":
            try:
                from . import runtime
                self.kernels = _probe_row_kernels(runtime, device)
            except (ImportError, RuntimeError):
                # No runtime, or one built without the device library (or
                # whose library does not link for this GPU): PyTorch's
                # operations, unless the kernels were asked for.
                if fused is True:
                    raise
        elif fused is True:
            raise ValueError("fused updates run on a CUDA device")
        # Per table: the flags of the rows a step reached (Adam's dense
        # path) and the first position of an index beyond the table.
        self.touched, self.first_bad = {}, {}

    @staticmethod
    def state_count(method):
        """The per-row state tensors of `method`: Adagrad's sum of squares,
        Adam's two moments."""
        return 1 if method == "adagrad" else 2

    def state_arrays(self, tables=None):
        """The states of `tables` (default: all) as host arrays
        {"<table>.state<i>": ndarray} and the step count, for checkpoints."""
        arrays = {f"{n}.state{i}": s.detach().cpu().numpy()
                  for n, states in self.state.items() if tables is None or n in tables
                  for i, s in enumerate(states)}
        return arrays, self.steps

    def load_state_arrays(self, arrays, steps, tables=None):
        """Restores what state_arrays gave."""
        import torch
        with torch.no_grad():
            for n, states in self.state.items():
                if tables is None or n in tables:
                    for i, s in enumerate(states):
                        s.copy_(torch.as_tensor(arrays[f"{n}.state{i}"], device=s.device))
        self.steps = int(steps)
        self.count.fill_(self.steps)

    def step(self, captured):
        import torch
        self.steps += 1
        by_table = {}
        for table, index, rows in captured:
            by_table.setdefault(table, []).append((index, rows))
        self.dense_only = True
        with torch.no_grad():
            size = None
            if self.method == "adam":
                self.count.add_(1)
                b1, b2 = self.betas
                # lr sqrt(1 - b2^t) / (1 - b1^t), t the step count, in
                # PyTorch's order (in double precision).
                size = (1 - torch.pow(b2, self.count)).sqrt_().mul_(self.lr).div_(
                    1 - torch.pow(b1, self.count))
            for table, parts in by_table.items():
                param = self.tables[table]
                gathered = sum(len(i) for i, _ in parts)
                dense = (param.shape[0] <= self.DENSE_RATIO * gathered
                         and table not in self.rows_only)
                self.dense_only &= dense
                if not dense:
                    parts = [_reached_rows(i, rows) for i, rows in parts]
                if self._fused(param):
                    self._fused_step(table, param, parts, size, dense)
                elif dense:
                    self._dense_step(table, param, parts, size)
                else:
                    self._sorted_step(table, param, parts, size)
        captured.clear()

    def _fused(self, param):
        import torch
        return (self.kernels is not None and param.is_cuda and param.dtype == torch.float32
                and param.dim() >= 2 and param.is_contiguous())

    def _fused_step(self, table, param, parts, size, dense):
        """The step of one table through the device library's kernels."""
        import torch
        k = self.kernels
        stream = torch.cuda.current_stream(param.device).cuda_stream
        bad = self.first_bad.get(table)
        if bad is None:
            bad = self.first_bad[table] = torch.full((1,), _NO_BAD_INDEX, dtype=torch.int64,
                                                     device=param.device)
        touched, index = None, None
        if dense:
            grad = self.workspace.get(table)
            if grad is None:
                # Zero now; the update kernels clear what they used.
                grad = self.workspace[table] = torch.zeros_like(param)
            if self.method == "adam":
                touched = self.touched.get(table)
                if touched is None:
                    touched = self.touched[table] = torch.zeros(
                        param.shape[0], dtype=torch.int32, device=param.device)
            for i, rows in parts:
                if isinstance(rows, WholeTable):
                    grad.add_(rows.grad)
                    if touched is not None:
                        touched.index_fill_(0, i, 1)
                else:
                    k.rows_add(i.long(), rows.float().contiguous(), grad, bad, touched,
                               stream=stream)
        else:
            index, grad = _sum_by_unique(
                param, parts, lambda positions, rows, grad: k.rows_add(
                    positions, rows.float().contiguous(), grad, bad, stream=stream))
        if self.method == "adagrad":
            (total,) = self.state[table]
            k.adagrad_rows(param, total, grad, self.lr, self.eps, index=index, first_bad=bad,
                           stream=stream)
        else:
            m, v = self.state[table]
            b1, b2 = self.betas
            k.adam_rows(param, m, v, grad, size.float(), b1, b2, self.eps, index=index,
                        touched=touched, first_bad=bad, stream=stream)

    def check(self):
        """Raises IndexError naming the table when a fused step met a
        gradient row whose index is beyond its table (reads the device:
        synchronizes)."""
        for table, bad in self.first_bad.items():
            position = int(bad.item())
            if position != _NO_BAD_INDEX:
                raise IndexError(f"a gradient row of table {table!r} had an index beyond its "
                                 f"{self.tables[table].shape[0]} rows; the rows with it were "
                                 "not applied")

    def _dense_step(self, table, param, parts, size):
        import torch
        grad = self.workspace.get(table)
        if grad is None:
            grad = self.workspace[table] = torch.empty_like(param)
        grad.zero_()
        for index, rows in parts:
            if isinstance(rows, WholeTable):
                grad.add_(rows.grad)
            else:
                grad.index_add_(0, index, rows)
        if self.method == "adagrad":
            (total,) = self.state[table]
            total.addcmul_(grad, grad)
            param.addcdiv_(grad, total.sqrt().add_(self.eps), value=-self.lr)
            return
        touched = torch.zeros(param.shape[0], dtype=torch.bool, device=param.device)
        for index, _ in parts:
            touched.index_fill_(0, index, True)
        # Weights 1 on touched rows, 0 elsewhere: m += w (1 - b1) (g - m) is
        # Adam's moment update where w = 1 and leaves other rows alone.
        w = touched.to(param.dtype).view((-1,) + (1,) * (param.dim() - 1))
        m, v = self.state[table]
        b1, b2 = self.betas
        m.lerp_(grad, w * (1 - b1))
        v.lerp_(grad * grad, w * (1 - b2))
        param.sub_((m * w).div_(v.sqrt().add_(self.eps)).mul_(size))

    def _sorted_step(self, table, param, parts, size):
        unique, grad = _sum_by_unique(
            param, parts, lambda positions, rows, grad: grad.index_add_(0, positions, rows))
        if self.method == "adagrad":
            (total,) = self.state[table]
            acc = total[unique].addcmul_(grad, grad)
            total[unique] = acc
            param[unique] -= self.lr * grad / (acc.sqrt() + self.eps)
            return
        m, v = self.state[table]
        b1, b2 = self.betas
        mu = m[unique].mul_(b1).add_(grad, alpha=1 - b1)
        nu = v[unique].mul_(b2).addcmul_(grad, grad, value=1 - b2)
        m[unique], v[unique] = mu, nu
        param[unique] -= size * mu / (nu.sqrt() + self.eps)


def _loss(name, positive, negative, margin, temperature):
    """positive [b], negative [b, K] plausibilities (higher is better):
    margin ranking, softplus (logistic), self-adversarial (RotatE's), or
    softmax cross-entropy of each positive among itself and its negatives
    (PyKEEN's CrossEntropyLoss, the 1-vs-K softmax)."""
    import torch
    import torch.nn.functional as F
    if name == "softmax":
        scores = torch.cat([positive[:, None], negative], 1)
        return (torch.logsumexp(scores, 1) - positive).mean()
    if name == "margin":
        return F.relu(margin - positive[:, None] + negative).mean()
    if name == "softplus":
        return (F.softplus(-positive).sum() + F.softplus(negative).sum()) / (
            positive.numel() + negative.numel())
    # Self-adversarial negative sampling (RotatE): negatives weighted by
    # their softmax, the weights held constant.
    weights = F.softmax(negative * temperature, dim=1).detach()
    return (-F.logsigmoid(margin + positive).mean()
            - (weights * F.logsigmoid(-margin - negative)).sum(1).mean())


class GraphedStep:
    """The Trainer's step (sampling, scoring, loss, backward, update) as one
    CUDA graph: captured once on a batch of the full size and replayed for
    each next one, so that a step costs one graph launch of host time
    instead of some forty kernel launches and the Python between them (the
    kernels of a batch of 1,024 positives take microseconds each, the host
    work around each more). Replays draw the same random numbers as eager
    steps would (the trainer's generator is registered with the graph).

    Steps run eagerly until the capture: the first WARMUP full batches on
    the capture stream (they allocate what the step keeps, the kernels'
    scratch for that stream among it), and every batch of another size (an
    epoch's last). A step that synchronizes cannot be captured: when a
    warm-up step updated a table through the sorted path (a table with more
    rows than a batch gathers), or the capture itself failed, the steps
    stay eager and `reason` says why (with graph=True a failed capture
    raises). The step's settings (learning rate, loss, margin, negatives)
    are those of the capture: replays do not see later changes."""

    WARMUP = 2

    @staticmethod
    def refusal(trainer):
        """Why `trainer`'s step cannot be captured, or None."""
        import torch
        operator = trainer.model.operator
        if trainer.device.type != "cuda":
            return "the trainer is not on a CUDA device"
        if operator is None or not hasattr(operator, "gradient_program"):
            return ("the model does not run KGE's kernels with row gradients (gradients "
                    "'rows', not eager)")
        if not hasattr(torch.cuda.CUDAGraph, "register_generator_state"):
            return "this PyTorch cannot capture a generator of the trainer's own"
        return None

    def __init__(self, trainer, required=False):
        import torch
        self.trainer, self.required = trainer, required
        self.stream = torch.cuda.Stream(trainer.device)
        self.warm = 0
        self.graph = self.batch = self.loss = None
        self.reason = None

    def __call__(self, batch):
        import torch
        trainer = self.trainer
        if self.graph is not None and batch.shape == self.batch.shape:
            self.batch.copy_(batch)
            self.graph.replay()
            trainer.optimizer.steps += 1
            return self.loss.clone()
        if self.reason is not None or len(batch) != trainer.batch_size or self.graph is not None:
            return trainer.step(batch)
        current = torch.cuda.current_stream(trainer.device)
        self.stream.wait_stream(current)
        batch.record_stream(self.stream)
        with torch.cuda.stream(self.stream):
            if self.warm < self.WARMUP:
                loss = trainer.step(batch)
                self.warm += 1
                if not trainer.optimizer.dense_only:
                    self.reason = ("a table has more rows than DENSE_RATIO times a batch's "
                                   "gathered rows: its update "
                                   "sorts the batch's rows")
            else:
                loss = self._capture(batch)
        current.wait_stream(self.stream)
        loss.record_stream(current)
        return loss

    def _capture(self, batch):
        import torch
        trainer = self.trainer
        self.batch = batch.clone()
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(trainer.generator)
        optimizer = trainer.optimizer
        steps = optimizer.steps
        buffers = [dict(d) for d in (optimizer.workspace, optimizer.touched,
                                     optimizer.first_bad)]
        try:
            with torch.cuda.graph(graph, stream=self.stream):
                self.loss = trainer.step(self.batch).detach()
        except RuntimeError as error:
            if self.required:
                raise
            # Nothing captured ran: forget what the capture recorded and
            # allocated, and step eagerly from now on.
            optimizer.steps = steps
            optimizer.workspace, optimizer.touched, optimizer.first_bad = buffers
            trainer.model.operator.captured.clear()
            self.batch = self.loss = None
            self.reason = f"capturing the step failed: {error}"
            return trainer.step(batch)
        # Capturing ran nothing: the replay is the step.
        optimizer.steps = steps
        self.graph = graph
        graph.replay()
        trainer.optimizer.steps += 1
        return self.loss.clone()


class Trainer:
    """Mini-batch training of `model` on `triples` ([N, 3] head, relation,
    tail): `negatives` corruptions per positive (head or tail, half each),
    drawn uniformly or by entity degree (`sampler`) — or a
    kge.shared_negatives.SharedNegatives, negatives shared by chunks of
    positives on both sides (Legend's and PyTorch-BigGraph's) — `loss` one of
    margin / softplus / adversarial / softmax, `optimizer` adagrad or adam (sparse
    updates of the touched rows). `graph`: run the step as a CUDA graph
    (GraphedStep) — "auto" where the step can be captured (KGE's kernels
    with row gradients on a CUDA device, every table updated without a
    sort), True to insist (refused with the reason
    otherwise), False for eager steps. `graphed.reason` says why an "auto"
    trainer stayed eager after its warm-up."""

    def __init__(self, model, triples, *, batch_size=1024, negatives=16, loss="softplus",
                 margin=1.0, temperature=1.0, optimizer="adagrad", lr=0.1, sampler="uniform",
                 seed=0, device="cuda", graph="auto"):
        import torch
        self._configure(model, batch_size=batch_size, negatives=negatives, loss=loss,
                        margin=margin, temperature=temperature, optimizer=optimizer, lr=lr,
                        sampler=sampler, seed=seed, device=device, graph=graph)
        self.num_entities = model.rows_of("entity")
        triples = check_triples(triples, self.num_entities, model.rows_of("relation"))
        self.triples = torch.as_tensor(triples, dtype=torch.int64, device=device)
        self.degree = None
        if sampler == "degree":
            counts = torch.bincount(self.triples[:, [0, 2]].reshape(-1),
                                    minlength=self.num_entities).double()
            # The degree distribution's cumulative sum: draws by inverse
            # transform (a search per draw, no wait for the GPU).
            self.degree = torch.cumsum((counts + 1) / (counts + 1).sum(), 0)

    def _configure(self, model, *, batch_size, negatives, loss, margin, temperature, optimizer,
                   lr, sampler, seed, device, rows_only=(), graph=False):
        """What every trainer checks and holds: the step's settings, the
        generator, the optimizer (`rows_only`: tables it updates row by
        row), the graphed step (`graph`), the epoch and its log."""
        import torch
        for what, value, allowed in (("loss", loss, LOSSES), ("optimizer", optimizer, OPTIMIZERS),
                                     ("sampler", sampler, SAMPLERS)):
            if value not in allowed:
                raise ValueError(f"unknown {what} {value!r} (expected one of "
                                 f"{', '.join(allowed)})")
        if graph not in ("auto", True, False):
            raise ValueError(f"graph must be 'auto', True or False, got {graph!r}")
        from .shared_negatives import SharedNegatives
        checked = [("batch_size", batch_size)]
        if not isinstance(negatives, SharedNegatives):
            checked.append(("negatives", negatives))
        for what, value in checked:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{what} must be a positive integer or, for negatives, "
                                 f"kge.shared_negatives.SharedNegatives, got {value!r}"
                                 if what == "negatives" else
                                 f"{what} must be a positive integer, got {value!r}")
        if isinstance(negatives, SharedNegatives):
            negatives.bind(model, device)
        self.model, self.device = model, torch.device(device)
        self.batch_size, self.negatives = batch_size, negatives
        self.loss, self.margin, self.temperature = loss, margin, temperature
        self.generator = torch.Generator(device=device).manual_seed(seed)
        if model.operator is not None:
            self.optimizer = RowSparseOptimizer(model.tables, optimizer, lr, rows_only=rows_only)
        else:
            if optimizer == "adam" and model.eager and has_matrices(model.name):
                raise ValueError(f"{model.name} in plain PyTorch trains with adagrad: its "
                                 "matrices' gradients are dense, which SparseAdam refuses")
            params = list(model.tables.values())
            self.optimizer = (torch.optim.Adagrad(params, lr=lr) if optimizer == "adagrad"
                              else torch.optim.SparseAdam(params, lr=lr))
        self.epoch = 0
        self.log = []
        self.graphed = None
        if graph is not False:
            refusal = GraphedStep.refusal(self)
            if refusal is None:
                self.graphed = GraphedStep(self, required=graph is True)
            elif graph is True:
                raise ValueError(f"the step cannot be captured in a CUDA graph: {refusal}")

    def corruptions(self, h, t, corrupt_head, k):
        """[b, k] entities that replace the head (where `corrupt_head`) or
        the tail of each positive: uniform or by degree over all entities."""
        import torch
        count = len(h) * k
        if self.degree is None:
            drawn = torch.randint(0, self.num_entities, (count,), device=self.device,
                                  generator=self.generator)
        else:
            u = torch.rand(count, dtype=torch.float64, device=self.device,
                           generator=self.generator)
            drawn = torch.searchsorted(self.degree, u, right=True).clamp_(
                max=self.num_entities - 1)
        return drawn.view(len(h), k)

    def step(self, batch):
        """One step on the positives `batch` ([b, 3] on the device); returns
        the loss (a tensor: reading it synchronizes)."""
        import torch
        h, r, t = batch[:, 0], batch[:, 1], batch[:, 2]
        if not isinstance(self.negatives, int):
            # (The kernels take each index array contiguous.)
            return self._shared_step(*batch.t().contiguous())
        b, k = len(h), self.negatives
        corrupt_head = torch.rand(b, 1, device=self.device, generator=self.generator) < 0.5
        negative = self.corruptions(h, t, corrupt_head, k)
        heads = torch.cat([h[:, None], torch.where(corrupt_head, negative, h[:, None])], 1)
        tails = torch.cat([t[:, None], torch.where(corrupt_head, t[:, None], negative)], 1)
        relations = r.repeat_interleave(k + 1)
        scores = self.model.plausibility(heads.reshape(-1), relations,
                                         tails.reshape(-1)).view(b, k + 1)
        loss = _loss(self.loss, scores[:, 0], scores[:, 1:], self.margin, self.temperature)
        return self._backward(loss)

    def _shared_step(self, h, r, t):
        """A step against chunked shared negatives (self.negatives, a
        kge.shared_negatives.SharedNegatives): the positives through the
        model's kernels, each chunk's negatives as products."""
        shared = self.negatives
        positive = self.model.plausibility(h, r, t)
        negative = shared.plausibility(self, h, r, t)
        loss = _loss(self.loss, positive, negative, self.margin, self.temperature)
        return self._backward(loss, shared.collect)

    def _backward(self, loss, collect=None):
        """Backward from `loss` and the optimizer's step (`collect` hands
        further gathered rows' gradients to the row-sparse optimizer)."""
        if self.model.operator is not None:
            loss.backward()
            if collect is not None:
                collect(self.model.operator.captured)
            self.optimizer.step(self.model.operator.captured)
        else:
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return loss

    def train_epoch(self, progress=False, check_every=50):
        """One pass over the triples in a random order; returns
        {epoch, loss (mean), seconds}. A non-finite loss stops training
        with a TrainingError naming the epoch, the batch and its first
        triples (the tables then hold the last step's update; checkpoints on
        disk are untouched)."""
        epoch = self._begin_epoch()
        batches = -(-len(self.triples) // self.batch_size)
        self._train_edges(epoch, self.triples, self._progress(progress, batches), check_every)
        return self._end_epoch(epoch)

    def _synchronize(self):
        import torch
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _begin_epoch(self):
        import torch
        self._synchronize()
        return {"start": time.perf_counter(), "batches": 0,
                "total": torch.zeros((), device=self.device)}

    def _progress(self, progress, batches):
        """A tqdm bar of `batches` when asked for and tqdm is there."""
        if not progress:
            return None
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is optional
            return None
        return tqdm(total=batches, desc=f"epoch {self.epoch}", unit="batch")

    def _train_edges(self, epoch, edges, bar=None, check_every=50):
        """Steps over `edges` ([m, 3] on the device, in the model's table
        rows) in a random order, batch by batch; a non-finite loss raises
        TrainingError with the batch's first triples."""
        import torch
        order = torch.randperm(len(edges), device=self.device, generator=self.generator)
        pending = []
        step = self.step if self.graphed is None else self.graphed
        for first in range(0, len(order), self.batch_size):
            batch = edges[order[first:first + self.batch_size]]
            loss = step(batch).detach()
            epoch["total"] += loss
            pending.append((epoch["batches"], batch[:4], loss))
            epoch["batches"] += 1
            if bar is not None:
                bar.update(1)
            if len(pending) >= check_every:
                self._check(pending)
        self._check(pending)

    def _end_epoch(self, epoch):
        self._synchronize()
        record = {"epoch": self.epoch, "loss": epoch["total"].item() / max(1, epoch["batches"]),
                  "seconds": time.perf_counter() - epoch["start"]}
        self.epoch += 1
        self.log.append(record)
        return record

    def _check(self, pending):
        import torch
        if not pending:
            return
        if isinstance(self.optimizer, RowSparseOptimizer):
            try:
                self.optimizer.check()
            except IndexError as error:
                raise TrainingError(f"epoch {self.epoch}: {error}") from error
        finite = torch.isfinite(torch.stack([loss for _, _, loss in pending]))
        if not bool(finite.all()):
            k, first, _ = pending[int((~finite).nonzero()[0])]
            raise TrainingError(f"non-finite loss in epoch {self.epoch}, batch {k} (its first "
                                f"triples: {self.describe(first)})")
        pending.clear()

    def describe(self, batch):
        """The (head, relation, tail) of `batch`'s rows, as a message shows
        them."""
        return ", ".join(str(tuple(row)) for row in batch.tolist())

    def save(self, path):
        """A checkpoint of the tables, the optimizer's state, the random
        generator and the epoch (kge.checkpoint: atomic); resuming from it
        continues training as if it had not stopped."""
        from . import checkpoint
        arrays = {n: t.detach().cpu().numpy() for n, t in self.model.tables.items()}
        states, scalars = self._optimizer_state()
        arrays.update(states)
        arrays["generator"] = self.generator.get_state().numpy()
        return checkpoint.save(path, arrays, "model", self.fingerprint(),
                               {"epoch": self.epoch, "log": self.log, "optimizer": scalars})

    def load(self, path):
        """Restores tables, optimizer state and epoch from `path` (refused
        whole when it is not a checkpoint of this model and optimizer)."""
        import torch
        from . import checkpoint
        arrays, meta = checkpoint.load(path, "model", self.fingerprint())
        with torch.no_grad():
            for n, t in self.model.tables.items():
                t.copy_(torch.as_tensor(arrays[n], device=t.device))
        self._load_optimizer_state(arrays, meta.get("optimizer", {}))
        self.generator.set_state(torch.as_tensor(arrays["generator"]))
        self.epoch = meta["epoch"]
        self.log = list(meta.get("log", []))
        if self.graphed is not None:
            # Captured again from the restored generator.
            self.graphed = GraphedStep(self, self.graphed.required)

    def _optimizer_state(self, tables=None):
        """The optimizer's per-row states of `tables` (default: all) as
        arrays {"<table>.<state>": ndarray} and its scalars (step counts) as
        a JSON-able dict."""
        if isinstance(self.optimizer, RowSparseOptimizer):
            arrays, steps = self.optimizer.state_arrays(tables)
            return arrays, {"steps": steps}
        arrays, scalars = {}, {}
        for n, t in self.model.tables.items():
            for key, value in self.optimizer.state.get(t, {}).items():
                if hasattr(value, "dim") and value.dim() > 0:
                    arrays[f"{n}.{key}"] = value.detach().cpu().numpy()
                else:
                    scalars[f"{n}.{key}"] = [float(value), hasattr(value, "dim")]
        return arrays, scalars

    def _load_optimizer_state(self, arrays, scalars, tables=None):
        import torch
        if isinstance(self.optimizer, RowSparseOptimizer):
            self.optimizer.load_state_arrays(arrays, scalars.get("steps", 0), tables)
            return
        for n, t in self.model.tables.items():
            state = {}
            for key, value in arrays.items():
                table, _, name = key.partition(".")
                if table == n and name:
                    state[name] = torch.as_tensor(value, device=t.device)
            for key, (value, tensor) in scalars.items():
                table, _, name = key.partition(".")
                if table == n:
                    state[name] = torch.tensor(value) if tensor else int(value)
            if state:
                self.optimizer.state[t] = state

    def fingerprint(self):
        from . import checkpoint
        return checkpoint.fingerprint({"model": self.model.name, "optimizer": self._method(),
                                       "tables": {n: list(t.shape)
                                                  for n, t in self.model.tables.items()}})

    def _method(self):
        if isinstance(self.optimizer, RowSparseOptimizer):
            return self.optimizer.method
        return type(self.optimizer).__name__.lower()


def check_triples(triples, num_entities, num_relations):
    """`triples` as an [N, 3] int64 array, refused unless non-empty and
    within the entity and relation counts."""
    triples = np.asarray(triples)
    if triples.ndim != 2 or triples.shape[1] != 3 or len(triples) == 0:
        raise ValueError(f"triples must be a non-empty [N, 3] array, got shape {triples.shape}")
    if not np.issubdtype(triples.dtype, np.integer):
        raise ValueError(f"triples must be integers, got {triples.dtype}")
    if triples.min() < 0 or triples[:, [0, 2]].max() >= num_entities \
            or triples[:, 1].max() >= num_relations:
        raise ValueError("triples index entities or relations beyond the model's tables "
                         f"({num_entities} entities, {num_relations} relations)")
    return triples.astype(np.int64, copy=False)


def filter_lists(triples, known):
    """For each of `triples`, the other true tails of (h, r) and the other
    true heads of (r, t) in `known`: two CSR pairs (offsets, values)."""
    triples, known = np.asarray(triples, np.int64), np.asarray(known, np.int64)
    # Only the known triples that share (h, r) or (r, t) with one of
    # `triples` matter: picked out in NumPy before the dictionaries.
    span = int(max(known[:, 1].max(initial=0), triples[:, 1].max(initial=0))) + 1
    pairs = lambda a, e: a[:, e] * span + a[:, 1]
    known = known[np.isin(pairs(known, 0), pairs(triples, 0))
                  | np.isin(pairs(known, 2), pairs(triples, 2))]
    by_tail, by_head = {}, {}
    for h, r, t in known.tolist():
        by_tail.setdefault((h, r), []).append(t)
        by_head.setdefault((r, t), []).append(h)
    result = []
    for side in (0, 1):
        offsets, values = [0], []
        for h, r, t in np.asarray(triples).tolist():
            true = by_tail.get((h, r), []) if side == 0 else by_head.get((r, t), [])
            truth = t if side == 0 else h
            values.extend(e for e in true if e != truth)
            offsets.append(len(values))
        result.append((np.asarray(offsets, np.int64), np.asarray(values, np.int64)))
    return result


def evaluate(model, triples, known, chunk_edges=1 << 22, candidates=None, seed=0):
    """Filtered MRR and Hits@1/3/10 of `triples` ([N, 3]) on the model's
    device: each triple's tail ranked among all entities with the other
    true tails in `known` left out, and its head likewise; ties count half.
    With `candidates` (a count), each side is ranked instead among that
    many entities drawn uniformly (`seed`), unfiltered: OGB's protocol for
    graphs too large to rank against every entity (ogbl-wikikg2 uses
    1,000). Returns the metrics and the ranks ([N, 2])."""
    import torch
    from .link_prediction import ranking_metrics
    triples = np.asarray(triples, np.int64)
    first = next(iter(model.tables.values()))
    device = first.device
    entities = model.rows_of("entity")
    if candidates is not None:
        return _sampled_ranks(model, triples, candidates, seed, device, entities)
    filters = filter_lists(triples, known)
    rows = max(1, chunk_edges // entities)
    all_entities = torch.arange(entities, device=device)
    ranks = np.empty((len(triples), 2))
    with torch.no_grad():
        for side in (0, 1):
            offsets, values = filters[side]
            for start in range(0, len(triples), rows):
                part = triples[start:start + rows]
                n = len(part)
                h = torch.as_tensor(part[:, 0], device=device)
                r = torch.as_tensor(part[:, 1], device=device)
                t = torch.as_tensor(part[:, 2], device=device)
                fixed = (h if side == 0 else t).repeat_interleave(entities)
                varied = all_entities.repeat(n)
                relations = r.repeat_interleave(entities)
                heads, tails = (fixed, varied) if side == 0 else (varied, fixed)
                scores = model.plausibility(heads, relations, tails).view(n, entities)
                truth_index = t if side == 0 else h
                truth = scores.gather(1, truth_index[:, None])
                if not bool(torch.isfinite(truth).all()):
                    bad = int((~torch.isfinite(truth[:, 0])).nonzero()[0]) + start
                    raise ValueError(f"triple {bad} {tuple(triples[bad])} scores non-finite")
                lo, hi = offsets[start], offsets[start + n]
                if hi > lo:
                    counts = torch.as_tensor(np.diff(offsets[start:start + n + 1]), device=device)
                    row = torch.arange(n, device=device).repeat_interleave(counts)
                    col = torch.as_tensor(values[lo:hi], device=device)
                    scores[row, col] = -math.inf
                better = (scores > truth).sum(1)
                equal = (scores == truth).sum(1) - 1
                ranks[start:start + n, side] = (1 + better + equal / 2).double().cpu().numpy()
    return ranking_metrics(ranks), ranks


def _sampled_ranks(model, triples, candidates, seed, device, entities):
    import torch
    from .link_prediction import ranking_metrics
    if not isinstance(candidates, int) or candidates <= 0:
        raise ValueError(f"candidates must be a positive integer, got {candidates!r}")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    ranks = np.empty((len(triples), 2))
    rows = max(1, (1 << 22) // (candidates + 1))
    with torch.no_grad():
        for start in range(0, len(triples), rows):
            part = torch.as_tensor(triples[start:start + rows], device=device)
            n = len(part)
            for side in (0, 1):
                drawn = torch.randint(0, entities, (n, candidates), generator=generator)
                truth = part[:, 2 if side == 0 else 0]
                varied = torch.cat([truth[:, None], drawn.to(device)], 1)
                fixed = part[:, 0 if side == 0 else 2][:, None].expand_as(varied)
                relations = part[:, 1][:, None].expand_as(varied)
                heads, tails = (fixed, varied) if side == 0 else (varied, fixed)
                scores = model.plausibility(heads.reshape(-1), relations.reshape(-1),
                                            tails.reshape(-1)).view(n, candidates + 1)
                better = (scores[:, 1:] > scores[:, :1]).sum(1)
                equal = (scores[:, 1:] == scores[:, :1]).sum(1)
                ranks[start:start + n, side] = (1 + better + equal / 2).double().cpu().numpy()
    return ranking_metrics(ranks), ranks
