"""KGE as a `torch.compile` backend: ``torch.compile(model, backend="kge")``.

Dynamo hands the backend an FX graph of the user's unmodified PyTorch code.
The backend finds the score functions in it — rows gathered from embedding
tables (``nn.Embedding``, ``F.embedding``, ``W[idx]``, ``index_select``)
followed by elementwise math, inner products, norms and per-edge
vector-matrix products, ending in one score per edge — traces each into a
``bvec.func`` through KGE's Python front end, compiles it (and its gradient
function, from ``bvec-differentiate``) to one fused kernel, and puts a call
of that kernel in the graph in place of the subgraph. What is left (losses,
regularizers, anything KGE does not express) goes to Inductor, to which
the KGE kernel is an opaque custom operator with a fake implementation and
an autograd formula.

Nothing is ever miscompiled to make a match: a subgraph with an operation,
a shape, a dtype or an argument KGE does not support (``max_norm``
embeddings, reductions over another axis, broadcast negatives, ...) stays
as it is, and ``report()`` says which node stopped it and why.

The rewrite itself (``rewrite``) works on any FX graph — Dynamo's, or one
from ``torch.fx.symbolic_trace`` — and the kernels it inserts run on CUDA
tensors through the runtime and on CPU tensors through KGE's CPU path (MLIR
ExecutionEngine), both with gradients.

The backend is registered under the name "kge" when this module is
imported, and PyTorch finds it without an import through the package's
``torch_dynamo_backends`` entry point.
"""

import dataclasses
import hashlib
import inspect
import json
import operator

from . import cache, frontend
from .errors import CompilerUnavailableError

_ARITHMETIC = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "div": "div"}
_UNARY = {"exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "neg", "abs"}
_REDUCTIONS = {"sum": "sum", "mean": "mean", "amax": "max", "amin": "min"}


class Unsupported(Exception):
    """A node the rewrite cannot express in bvec; the message says why."""

    def __init__(self, node, reason):
        super().__init__(f"{_describe(node)}: {reason}")
        self.node = node


def _describe(node):
    target = node.target
    name = getattr(target, "__name__", None) or str(target)
    return f"{node.name} ({node.op} {name})"


# ----------------------------------------------------------------------------
# Node shapes
# ----------------------------------------------------------------------------

def _meta(node):
    """(shape, dtype) of a node's value from its metadata, or (None, None)."""
    import torch
    if not hasattr(node, "meta"):
        return None, None
    for key in ("val", "example_value"):
        value = node.meta.get(key)
        if isinstance(value, torch.Tensor):
            return tuple(int(s) for s in value.shape), value.dtype
    tensor_meta = node.meta.get("tensor_meta")
    if tensor_meta is not None and hasattr(tensor_meta, "shape"):
        return tuple(int(s) for s in tensor_meta.shape), tensor_meta.dtype
    return None, None


def _is_index(node):
    import torch
    shape, dtype = _meta(node)
    return shape is not None and len(shape) == 1 and dtype in (torch.int64, torch.int32)


# ----------------------------------------------------------------------------
# FX subgraph -> expression
# ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _TableRef:
    """A table the kernel reads: an FX node (a parameter or graph input), or
    an nn.Embedding's weight by module path; `matrix` views rows of
    rows*cols elements as rows x cols matrices."""
    node: object = None
    module: str = None
    matrix: tuple = None


class _Converter:
    """Turns the FX nodes a score depends on into a small expression tree
    (tuples), collecting the tables and index arrays it reads."""

    def __init__(self, gm, modules):
        self.gm = gm
        self.modules = modules  # gm.named_modules(), as a dict
        self.memo = {}

    def expression(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float, self._node_type())):
            raise Unsupported(self.current, f"argument {value!r} is not a tensor or a number")
        if isinstance(value, (int, float)):
            return ("const", float(value))
        if value not in self.memo:
            previous, self.current = getattr(self, "current", value), value
            self.memo[value] = self._convert(value)
            self.current = previous
        return self.memo[value]

    def _node_type(self):
        import torch.fx
        return torch.fx.Node

    # Gathers --------------------------------------------------------------

    def _table(self, node):
        """The table `node` holds (a float tensor of rank 2 or 3 that is a
        parameter or a graph input), or None."""
        import torch
        if node.op not in ("placeholder", "get_attr"):
            return None
        shape, dtype = _meta(node)
        if shape is None and node.op == "get_attr":
            value = self._attr(node.target)
            shape, dtype = tuple(value.shape), value.dtype
        if shape is None or len(shape) not in (2, 3) or dtype != torch.float32:
            return None
        return _TableRef(node=node)

    def _attr(self, target):
        value = self.gm
        for part in target.split("."):
            value = getattr(value, part)
        return value

    def table_shape(self, ref):
        """The shape of the table `ref` (rows, then a row's shape)."""
        if ref.module is not None:
            shape = tuple(self.modules[ref.module].weight.shape)
        else:
            shape, _ = _meta(ref.node)
            if shape is None:
                shape = tuple(self._attr(ref.node.target).shape)
        if ref.matrix is not None:
            rows, cols = ref.matrix
            if len(shape) != 2 or shape[1] != rows * cols:
                raise ValueError(f"rows of {shape[1:]} elements viewed as {rows} x {cols}")
            shape = (shape[0], rows, cols)
        return shape

    def _gather(self, node):
        """("gather", table, indices) when `node` gathers rows, else None."""
        import torch
        import torch.nn.functional as F
        args, kwargs = node.args, node.kwargs
        table = indices = None
        if node.op == "call_module":
            module = self.modules.get(node.target)
            if isinstance(module, torch.nn.Embedding):
                if module.max_norm is not None:
                    raise Unsupported(node, "an embedding with max_norm renormalizes rows "
                                      "in place")
                if module.weight.dtype != torch.float32 or module.weight.dim() != 2:
                    raise Unsupported(node, "only float32 embedding tables are compiled")
                table, indices = _TableRef(module=node.target), args[0]
        elif node.op == "call_function" and node.target is F.embedding:
            if _arg(args, kwargs, 3, "max_norm") is not None:
                raise Unsupported(node, "an embedding with max_norm renormalizes rows in place")
            indices, weight = args[0], _arg(args, kwargs, 1, "weight")
            table = self._table(weight)
        elif node.op == "call_function" and node.target is torch.embedding:
            weight, indices = args[0], args[1]
            table = self._table(weight)
        elif node.op == "call_function" and node.target is operator.getitem:
            if isinstance(args[1], self._node_type()) and isinstance(args[0], self._node_type()):
                table, indices = self._table(args[0]), args[1]
        elif ((node.op == "call_function" and node.target is torch.index_select)
              or (node.op == "call_method" and node.target == "index_select")):
            if _arg(args, kwargs, 1, "dim") == 0:
                table, indices = self._table(args[0]), _arg(args, kwargs, 2, "index")
        if table is None or indices is None:
            return None
        if not isinstance(indices, self._node_type()) or not _is_index(indices):
            raise Unsupported(node, "rows are gathered with something other than a 1-D "
                              "int32/int64 index tensor")
        return ("gather", table, indices)

    # Everything else ------------------------------------------------------

    def _convert(self, node):
        gathered = self._gather(node)
        if gathered is not None:
            return gathered
        if node.op not in ("call_function", "call_method"):
            raise Unsupported(node, "not an operation KGE compiles")
        name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
        args, kwargs = node.args, node.kwargs
        if node.op == "call_function" and node.target is operator.getitem:
            return self._getitem(node)
        if name in _ARITHMETIC and len(args) == 2:
            if kwargs.get("alpha", 1) != 1 or kwargs.get("rounding_mode") is not None:
                raise Unsupported(node, "alpha or rounding_mode is not supported")
            return (_ARITHMETIC[name], self.expression(args[0]), self.expression(args[1]))
        if name in ("maximum", "minimum") and len(args) == 2:
            return (name[:3], self.expression(args[0]), self.expression(args[1]))
        if name in _UNARY and len(args) == 1 and not kwargs:
            return (name, self.expression(args[0]))
        if name in _REDUCTIONS or name in ("norm", "vector_norm"):
            return self._reduction(node, name)
        if name in ("unsqueeze",):
            dim = _arg(args, kwargs, 1, "dim")
            if dim in (1, -2):
                return ("row", self.expression(args[0]))
            raise Unsupported(node, f"unsqueeze({dim}) is only compiled before a "
                              "vector-matrix product")
        if name in ("squeeze",):
            inner = self.expression(args[0])
            dim = _arg(args, kwargs, 1, "dim")
            if inner[0] == "row" and dim in (1, -2):
                return inner[1]
            raise Unsupported(node, "squeeze is only compiled after a vector-matrix product")
        if name in ("matmul", "bmm") and len(args) == 2:
            lhs, rhs = self.expression(args[0]), self.expression(args[1])
            if lhs[0] != "row":
                raise Unsupported(node, "only (batch of row vectors) @ (batch of matrices) "
                                  "products are compiled")
            return ("row", ("vecmat", lhs[1], rhs))
        if name == "einsum":
            return self._einsum(node)
        if name in ("view", "reshape"):
            return self._reshape(node)
        if name in ("chunk", "split"):
            return ("parts", name, node)
        raise Unsupported(node, "not an operation KGE compiles")

    def _getitem(self, node):
        source, index = node.args
        if isinstance(source, self._node_type()):
            parts = self.expression(source)
            if parts[0] == "parts" and isinstance(index, int):
                return self._part(parts, index)
            piece = self._slice_of_rows(source, index)
            if piece is not None:
                start, length = piece
                return ("slice", parts, start, length)
        raise Unsupported(node, "only rows of tables, parts of chunk/split and slices of "
                          "the vectors' axis (x[..., a:b], x[:, a:b]) are indexed")

    def _slice_of_rows(self, source, index):
        """(start, length) of x[..., a:b] or x[:, a:b] on a batch of vectors
        of static length, else None."""
        if not isinstance(index, tuple) or len(index) != 2:
            return None
        first, piece = index
        if not (first is Ellipsis or first == slice(None)) or not isinstance(piece, slice):
            return None
        length = self._length(source)
        if length is None:
            return None
        start, stop, step = piece.indices(length)
        if step != 1 or stop <= start:
            return None
        return start, stop - start

    def _part(self, parts, index):
        _, kind, node = parts
        args, kwargs = node.args, node.kwargs
        vector = self.expression(args[0])
        length = self._length(args[0])
        dim = _arg(args, kwargs, 2, "dim", 0)
        if dim not in (-1, 1) or length is None:
            raise Unsupported(node, f"{kind} is compiled along the vectors' axis only")
        count = _arg(args, kwargs, 1, "chunks" if kind == "chunk" else "split_size_or_sections")
        if kind == "chunk":
            if not isinstance(count, int) or length % count:
                raise Unsupported(node, f"chunk into {count!r} unequal parts")
            sizes = [length // count] * count
        else:
            sizes = ([count] * (length // count) if isinstance(count, int) else list(count))
            if sum(sizes) != length:
                raise Unsupported(node, "split into parts that do not cover the vector")
        if not 0 <= index < len(sizes):
            raise Unsupported(node, f"part {index} of {len(sizes)}")
        start = sum(sizes[:index])
        return ("slice", vector, start, sizes[index])

    def _length(self, node):
        shape, _ = _meta(node)
        return shape[-1] if shape is not None and len(shape) == 2 else None

    def _reduction(self, node, name):
        args, kwargs = node.args, node.kwargs
        if name in ("norm", "vector_norm"):
            p = _arg(args, kwargs, 1, "ord" if name == "vector_norm" else "p", 2)
            dim = _arg(args, kwargs, 2, "dim")
            keep = _arg(args, kwargs, 3, "keepdim", False)
            if p not in (1, 2, 1.0, 2.0):
                raise Unsupported(node, f"norms of order {p!r} (KGE has p = 1 and 2)")
        else:
            dim = _arg(args, kwargs, 1, "dim")
            keep = _arg(args, kwargs, 2, "keepdim", False)
            if kwargs.get("dtype") is not None:
                raise Unsupported(node, "reductions with a dtype")
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        if dim not in (-1, 1):
            raise Unsupported(node, f"reduction over dim={dim!r}: only the vectors' axis "
                              "(-1) is compiled")
        inner = self.expression(args[0])
        out = (("norm", inner, int(p)) if name in ("norm", "vector_norm")
               else ("reduce", inner, _REDUCTIONS[name]))
        return ("keep", out) if keep else out

    def _einsum(self, node):
        equation = node.args[0].replace(" ", "")
        operands = node.args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        if len(operands) == 2:
            inputs, output = equation.split("->") if "->" in equation else (equation, None)
            lhs, rhs = inputs.split(",")
            if (len(lhs) == 2 and len(rhs) == 3 and output is not None and len(output) == 2
                    and lhs[0] == rhs[0] == output[0] and lhs[1] == rhs[1]
                    and output[1] == rhs[2] and len(set(rhs)) == 3):
                return ("vecmat", self.expression(operands[0]), self.expression(operands[1]))
            if (len(lhs) == 2 and lhs == rhs and output is not None and output == lhs[0]):
                return ("reduce", ("mul", self.expression(operands[0]),
                                   self.expression(operands[1])), "sum")
        raise Unsupported(node, f"einsum '{equation}' (compiled: 'bd,bde->be' and 'bd,bd->b')")

    def _reshape(self, node):
        """A gathered row of rows*cols elements viewed as a matrix: a gather
        from the table viewed as matrices."""
        source = node.args[0]
        shape = node.args[1:] if len(node.args) > 2 else node.args[1]
        if not isinstance(shape, (list, tuple)) or len(shape) != 3:
            raise Unsupported(node, "reshapes are compiled only from gathered rows to "
                              "matrices")
        inner = self.expression(source)
        rows, cols = shape[1], shape[2]
        if (inner[0] != "gather" or inner[1].matrix is not None or not isinstance(rows, int)
                or not isinstance(cols, int)):
            raise Unsupported(node, "reshapes are compiled only from gathered rows to "
                              "matrices")
        table = dataclasses.replace(inner[1], matrix=(rows, cols))
        return ("gather", table, inner[2])


def _arg(args, kwargs, position, name, default=None):
    if len(args) > position:
        return args[position]
    return kwargs.get(name, default)


# ----------------------------------------------------------------------------
# Expression -> bvec.func (through the front end)
# ----------------------------------------------------------------------------

def _leaves(expression, tables, indices):
    if not isinstance(expression, tuple):
        return
    if expression[0] == "gather":
        if expression[1] not in tables:
            tables.append(expression[1])
        if expression[2] not in indices:
            indices.append(expression[2])
        return
    for part in expression[1:]:
        _leaves(part, tables, indices)


def _pairs(expression, tables, indices):
    """The distinct (table, index array) positions the expression gathers,
    in order: the row gradients of the gradient kernel."""
    found = set()

    def walk(e):
        if isinstance(e, tuple):
            if e[0] == "gather":
                found.add((tables.index(e[1]), indices.index(e[2])))
            else:
                for part in e[1:]:
                    walk(part)
    walk(expression)
    return sorted(found)


def _has_gather(expression):
    return isinstance(expression, tuple) and (
        expression[0] == "gather" or any(_has_gather(p) for p in expression[1:]))


class _Builder:
    """Evaluates an expression on the front end's traced values."""

    def __init__(self, params):
        self.params = params  # leaf -> _Param
        self.memo = {}

    def value(self, e):
        """The traced value of `e`, once per distinct subexpression (the
        graph's shared values stay shared)."""
        if isinstance(e, tuple):
            if e not in self.memo:
                self.memo[e] = self._value(e)
            return self.memo[e]
        return self._value(e)

    def _value(self, e):
        kind = e[0]
        if kind == "const":
            return e[1]
        if kind == "gather":
            return self.params[e[1]][self.params[e[2]]]
        if kind in ("add", "sub", "mul", "div"):
            a, b = self.value(e[1]), self.value(e[2])
            return {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
                    "div": operator.truediv}[kind](a, b)
        if kind in ("max", "min"):
            return (frontend.maximum if kind == "max" else frontend.minimum)(
                self.value(e[1]), self.value(e[2]))
        if kind == "neg":
            return -self.value(e[1])
        if kind == "abs":
            return abs(self.value(e[1]))
        if kind in _UNARY:
            return getattr(frontend, kind)(self.value(e[1]))
        if kind == "norm":
            return frontend.norm(self.value(e[1]), p=e[2])
        if kind == "reduce":
            inner = e[1]
            if inner[0] == "mul":  # (a * b).sum(-1): an inner product
                if e[2] == "sum":
                    return frontend.dot(self.value(inner[1]), self.value(inner[2]))
            return getattr(frontend, e[2])(self.value(inner))
        if kind == "keep":
            return self.value(e[1])
        if kind == "vecmat":
            return self.value(e[1]) @ self.value(e[2])
        if kind == "slice":
            start, length = e[2], e[3]
            return self.value(e[1])[start:start + length]
        raise frontend.TraceError(f"'{kind}' cannot be the body of a score function")


@dataclasses.dataclass
class Replacement:
    """One score subgraph the rewrite replaced by a KGE kernel."""
    output: str        # the FX node whose value the kernel computes
    function: object   # the kge.ScoreFunction
    tables: list
    indices: list


@dataclasses.dataclass
class Report:
    replaced: list = dataclasses.field(default_factory=list)
    # (node name, reason) of score candidates left to PyTorch/Inductor.
    rejected: list = dataclasses.field(default_factory=list)


def _score_function(name, expression, tables, indices, table_shapes):
    from .frontend import Indices, ScoreFunction, Table
    import torch
    leaves = tables + indices
    names = [f"T{i}" for i in range(len(tables))] + [f"i{i}" for i in range(len(indices))]
    specs = []
    for leaf, shape in zip(tables, table_shapes):
        specs.append(Table(None, *shape[1:]))
    for leaf in indices:
        _, dtype = _meta(leaf)
        specs.append(Indices(None, "i32" if dtype == torch.int32 else "i64"))

    def body(*params):
        return _Builder(dict(zip(leaves, params))).value(expression)

    body.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=s)
         for n, s in zip(names, specs)])
    body.__name__ = name
    return ScoreFunction(body, name=name)




def rewrite(gm, example_inputs=None, cubin=True):
    """Replaces the score subgraphs of the FX GraphModule `gm` (in place) by
    calls of KGE kernels; returns (gm, Report). Node shapes come from the
    graph's metadata (Dynamo's) or, when `example_inputs` are given, from
    running the graph on them (torch.fx ShapeProp)."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp
    if example_inputs is not None and not any(
            _meta(n)[0] is not None for n in gm.graph.nodes if n.op != "output"):
        ShapeProp(gm).propagate(*example_inputs)
    report = Report()
    covered = set()
    # Kernel modules added below are not looked up: the graph's own are.
    modules = dict(gm.named_modules())
    nodes = list(gm.graph.nodes)
    for node in reversed(nodes):
        if node in covered or node.op in ("placeholder", "get_attr", "output"):
            continue
        shape, dtype = _meta(node)
        if shape is None or len(shape) != 1 or dtype != torch.float32:
            continue
        converter = _Converter(gm, modules)
        try:
            expression = converter.expression(node)
        except Unsupported as reason:
            if _depends_on_gather(node):
                report.rejected.append((node.name, str(reason)))
            continue
        if expression[0] == "keep" or not _has_gather(expression):
            continue
        tables, indices = [], []
        _leaves(expression, tables, indices)
        if any(_meta(i)[0] != shape for i in indices):
            report.rejected.append((node.name, "index arrays of another length than the "
                                               "scores (broadcast negatives are left to "
                                               "PyTorch)"))
            continue
        try:
            table_shapes = [converter.table_shape(t) for t in tables]
            payload = {"torch_fx": repr(expression_key(expression, tables, indices)),
                       "tables": [list(s) for s in table_shapes],
                       "indices": [str(_meta(i)[1]) for i in indices]}
            digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
            function = _score_function(f"fx_{digest[:12]}", expression, tables, indices,
                                       table_shapes)
            if _compiler_available():
                function.module  # traced now: a TraceError means it is not bvec
        except (frontend.TraceError, ValueError) as error:
            report.rejected.append((node.name, str(error)))
            continue
        pairs = _pairs(expression, tables, indices)
        kernel = KernelModule(function, len(tables), pairs, payload, cubin)
        _replace(gm, node, kernel, tables, indices, table_shapes)
        covered.update(converter.memo)
        report.replaced.append(Replacement(node.name, function, tables, indices))
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return gm, report


def expression_key(expression, tables, indices):
    """The expression with its leaves numbered: equal for equal math."""
    leaves = {leaf: i for i, leaf in enumerate(tables + indices)}

    def key(e):
        if isinstance(e, tuple):
            if e[0] == "gather":
                return ("gather", leaves[e[1]], e[1].matrix, leaves[e[2]])
            return tuple(key(p) for p in e)
        return e
    return key(expression)


def _depends_on_gather(node):
    """Whether a gather is among the node's inputs' producers (a rejected
    candidate worth reporting), looking a few levels up."""
    seen, frontier = set(), [node]
    for _ in range(8):
        nxt = []
        for n in frontier:
            for arg in n.all_input_nodes:
                if arg in seen:
                    continue
                seen.add(arg)
                name = getattr(arg.target, "__name__", str(arg.target))
                if arg.op == "call_module" or name in ("embedding", "index_select", "getitem"):
                    return True
                nxt.append(arg)
        frontier = nxt
    return False


def _replace(gm, node, kernel, tables, indices, table_shapes):
    graph = gm.graph
    index = 0
    while hasattr(gm, f"kge_score_{index}"):
        index += 1
    name = f"kge_score_{index}"
    gm.add_submodule(name, kernel)
    with graph.inserting_before(node):
        arguments = []
        for ref, shape in zip(tables, table_shapes):
            table = ref.node if ref.module is None else graph.get_attr(f"{ref.module}.weight")
            if ref.matrix is not None:
                table = graph.call_method("view", (table, -1, *ref.matrix))
            arguments.append(table)
        arguments.extend(indices)
        call = graph.call_module(name, tuple(arguments))
    node.replace_all_uses_with(call)


# ----------------------------------------------------------------------------
# The kernels in the graph
# ----------------------------------------------------------------------------

def _compiler_available():
    try:
        from . import ir  # noqa: F401 - importing it is the test
    except CompilerUnavailableError:
        return False
    return True


def _custom_ops_available():
    import torch
    return hasattr(torch, "library") and hasattr(torch.library, "custom_op")


class _Kernel:
    """A compiled score function with its gradient: CPU (MLIR ExecutionEngine)
    and GPU (runtime) execution, each with the row gradients summed into
    dense table gradients. The GPU bundles are cached (kge.cache) under
    `payload`, which describes the subgraph without the compiler: a machine
    with the runtime only runs kernels compiled ahead into the cache it is
    given (compile())."""

    def __init__(self, function, table_count, pairs, payload, cubin):
        self.function = function
        self.gradient = function.gradient()
        self.names = [n for n, _ in function.params]
        self.table_count = table_count
        # (table, index array) positions of every gather: one row gradient
        # each.
        self.pairs = pairs
        self.payload = payload
        self.cubin = cubin
        self._operator = None

    def bundles(self):
        """The forward and gradient bundles, from the cache or compiled."""
        def build(what, compiled):
            def run():
                try:
                    return compiled.compile(cubin=self.cubin, cache=False)
                except CompilerUnavailableError:
                    raise CompilerUnavailableError(
                        f"no KGE compiler here and no cached {what} bundle of "
                        f"{self.function.name} in {cache.cache_dir()}: compile it ahead "
                        "(KernelModule.compile) where the compiler is, into the cache "
                        "this machine reads (KGE_CACHE_DIR)") from None
            return run
        forward = cache.cached({"torch_fx_score": self.payload},
                               build("score", self.function), cubin=self.cubin)
        gradient = cache.cached({"torch_fx_gradient": self.payload},
                                build("gradient", self.gradient), cubin=self.cubin)
        return forward, gradient

    def _gpu(self):
        if self._operator is None:
            from .autograd import ScoreOperator
            self._operator = ScoreOperator(*self.bundles())
        return self._operator

    def forward(self, *tensors):
        import torch
        if tensors[0].is_cuda:
            # The runtime's lean entry point: arrays in signature order.
            return self._gpu().forward_program.run(*tensors, stream=_stream(tensors[0]))
        arrays = {n: t.detach().contiguous().numpy() for n, t in zip(self.names, tensors)}
        return torch.from_numpy(self.function.run_cpu(**arrays))

    def gradient_rows(self, tensors, seed):
        """The row gradients of the kernel's (table, index array) pairs, in
        the order of `pairs`: [B, row shape] each."""
        import torch
        if tensors[0].is_cuda:
            op = self._gpu()
            rows = op.gradient_program.run(*tensors, seed.contiguous().float(),
                                           stream=_stream(tensors[0]))
            rows = dict(zip((name for name, _, _ in op.gradients),
                            rows if isinstance(rows, tuple) else (rows,)))
        else:
            arrays = {n: t.detach().contiguous().numpy() for n, t in zip(self.names, tensors)}
            rows = self.gradient.run_cpu(**arrays, d_score=seed.detach().contiguous().numpy())
            rows = {k: torch.from_numpy(v) for k, v in rows.items()}
        return [rows[f"d_{self.names[t]}_{self.names[self.table_count + i]}"]
                for t, i in self.pairs]

    def backward(self, tensors, seed):
        """The dense gradients of the tables: the row gradients summed into
        zeros (the same sums the custom operator's backward leaves to
        Inductor)."""
        return _dense(tensors, self.gradient_rows(tensors, seed), self.pairs,
                      self.table_count)


def _stream(tensor):
    """The handle of the current CUDA stream of `tensor`'s device."""
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:  # no Stream object per call
        return raw(tensor.device.index)
    return torch.cuda.current_stream(tensor.device).cuda_stream


def _dense(tensors, rows, pairs, table_count):
    """Each table's gradient: its pairs' rows summed into zeros."""
    grads = [None] * table_count
    for (t, i), row in zip(pairs, rows):
        table, index = tensors[t], tensors[table_count + i]
        base = grads[t] if grads[t] is not None else table.new_zeros(table.shape)
        grads[t] = base.index_add(0, index.reshape(-1), row.to(table.dtype))
    return [g if g is not None else tensors[t].new_zeros(tensors[t].shape)
            for t, g in enumerate(grads)]


_function_class = None


def _kernel_function():
    """The autograd.Function of kernels where torch has no custom ops
    (made once)."""
    global _function_class
    if _function_class is None:
        _function_class = _make_kernel_function()
    return _function_class


def _make_kernel_function():
    import torch

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, kernel, *tensors):
            ctx.kernel = kernel
            ctx.save_for_backward(*tensors)
            with torch.no_grad():
                return kernel.forward(*tensors)

        @staticmethod
        def backward(ctx, seed):
            tensors = ctx.saved_tensors
            grads = ctx.kernel.backward(tensors, seed)
            wanted = ctx.needs_input_grad[1:]
            out = [g if w else None for g, w in zip(grads, wanted)]
            return (None, *out, *[None] * (len(tensors) - len(grads)))

    return KernelFunction


_registered = {}


def _custom_op(kernel):
    """kernel as the opaque operator kge::<function name> (torch >= 2.4):
    Inductor calls it, never traces into it. The name is a digest of what
    the kernel computes, so the first kernel of a name serves every later
    one."""
    import torch
    name = kernel.function.name
    if name in _registered:
        return _registered[name]
    args = ", ".join(kernel.names)
    schema = "(" + ", ".join(f"Tensor {n}" for n in kernel.names) + ")"
    table_count = kernel.table_count

    def impl(*tensors):
        return kernel.forward(*tensors)

    def fake(*tensors):
        return tensors[0].new_empty(tensors[table_count].shape[0])

    pairs = kernel.pairs

    def rows_impl(*tensors):
        return kernel.gradient_rows(tensors[:-1], tensors[-1])

    def rows_fake(*tensors):
        batch = tensors[table_count].shape[0]
        return [tensors[t].new_empty((batch, *tensors[t].shape[1:])) for t, _ in pairs]

    namespace = {"impl": impl, "fake": fake, "rows_impl": rows_impl, "rows_fake": rows_fake}
    exec(f"def forward({args}): return impl({args})\n"
         f"def forward_fake({args}): return fake({args})\n"
         f"def rows({args}, seed): return rows_impl({args}, seed)\n"
         f"def rows_abstract({args}, seed): return rows_fake({args}, seed)\n", namespace)
    op = torch.library.custom_op(f"kge::{name}", namespace["forward"], mutates_args=(),
                                 schema=schema + " -> Tensor")
    op.register_fake(namespace["forward_fake"])
    rows_op = torch.library.custom_op(f"kge::{name}_rows", namespace["rows"],
                                      mutates_args=(),
                                      schema=schema[:-1] + ", Tensor seed) -> Tensor[]")
    rows_op.register_fake(namespace["rows_abstract"])

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, seed):
        # The KGE gradient kernel gives the rows; their sums into the
        # tables are plain PyTorch, which Inductor compiles (and fuses)
        # like the scatter of its own embedding backward.
        inputs = ctx.saved_tensors
        grads = _dense(inputs, rows_op(*inputs, seed), pairs, table_count)
        return (*grads, *[None] * (len(inputs) - table_count))

    op.register_autograd(backward, setup_context=setup_context)
    _registered[name] = op
    return op


_modules = {}


def _kernel_module(name):
    """The KernelModule of the kernel called `name` in this process."""
    return _modules[name]


def _module_base():
    import torch
    return torch.nn.Module


class KernelModule(_module_base()):
    """The call of one KGE kernel in a rewritten graph: tables, then index
    arrays in; one score per edge out."""

    def __init__(self, function, table_count, pairs, payload, cubin=True):
        super().__init__()
        self.kernel = _Kernel(function, table_count, pairs, payload, cubin)
        self._op = _custom_op(self.kernel) if _custom_ops_available() else None
        _modules.setdefault(function.name, self)

    def __reduce__(self):
        # Pickled by name (a digest of what the kernel computes): Inductor
        # pickles graphs for its cache keys; the traced function inside
        # is a closure.
        return (_kernel_module, (self.kernel.function.name,))

    def compile(self):
        """Compiles the kernel's GPU bundles into the bundle cache (ahead of
        time, for machines that run but do not compile); returns them."""
        return self.kernel.bundles()

    # Set by the backend for inference graphs made of kernels only: the
    # runtime is called directly (no operator dispatch, no autograd).
    direct = False

    def forward(self, *tensors):
        if self.direct:
            return self.kernel.forward(*tensors)
        if self._op is not None:
            return self._op(*tensors)
        return _kernel_function().apply(self.kernel, *tensors)

    def extra_repr(self):
        return self.kernel.function.name


# ----------------------------------------------------------------------------
# The torch.compile backend
# ----------------------------------------------------------------------------

_last_report = None


def report():
    """The Report of the backend's last graph: what it replaced, and which
    candidate subgraphs it left (with the reason)."""
    return _last_report


def kge_backend(gm, example_inputs, inner="inductor"):
    """The torch.compile backend: KGE kernels for the graph's score
    functions, `inner` ("inductor" or "eager") for the rest."""
    global _last_report
    import torch
    gm, _last_report = rewrite(gm, example_inputs)
    if not torch.is_grad_enabled() and _only_kernels(gm):
        # An inference graph that is KGE kernels only (Dynamo compiles a
        # frame per grad mode): nothing for Inductor to do, and no autograd,
        # so the kernels call the runtime directly.
        for module in gm.modules():
            if isinstance(module, KernelModule):
                module.direct = True
        return gm.forward
    if inner == "inductor":
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(gm, example_inputs)
    return gm.forward


def _only_kernels(gm):
    """Whether every operation of `gm` is a KGE kernel call (or the view of
    a table as matrices that feeds one)."""
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        if node.op == "call_module" and isinstance(modules.get(node.target), KernelModule):
            continue
        if node.op == "call_method" and node.target == "view":
            continue
        return False
    return True


def register():
    """Registers the backend with Dynamo under the name "kge" (no-op where
    torch has no Dynamo, or when it is registered already)."""
    try:
        from torch._dynamo import list_backends, register_backend
    except ImportError:
        return False
    if "kge" not in list_backends(exclude_tags=()):
        register_backend(kge_backend, name="kge")
    return True


register()
