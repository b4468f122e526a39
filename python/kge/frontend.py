"""The tracing front end: score functions as Python over symbolic tables
and index arrays, traced into `bvec` IR (cuKE's front end).

    @kge.function
    def transr(Eemb: Table, Remb: Table, Pm: Table(None, None, None),
               h: Indices, r: Indices, t: Indices):
        return kge.norm((Eemb[h] - Eemb[t]) @ Pm[r] + Remb[r], p=2)

Parameters are annotated with `Table(...)` (rank 2 by default; give three
sizes for a table of matrices; `None` is a dynamic size) or `Indices(...)`.
The body sees traced values and may use:

  E[h]               gather_vec / gather_mat (by the table's rank)
  + - * /            elementwise on batches of one type; a batch of scalars
                     times a batch of vectors is scal_mul_vec; numbers
                     become constants
  -x, abs(x)         neg, abs
  v @ M              vec_mul_mat (row vector times matrix)
  v[a:b]             slice
  dot, outer, norm, sum, mean, max, min, maximum, minimum,
  exp, log, sqrt, tanh, sigmoid, sin, cos

Python control flow on traced values (`if`, `while`, `for`, `len`, `float`)
cannot be traced: it raises TraceError pointing at the user's line, as do
operands the dialect rejects (shape or rank mismatches). Every operation
carries the user's file:line:column as its MLIR location.
"""

import builtins
import functools
import inspect
import linecache
import os

from .errors import MLIRError, TraceError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# ----------------------------------------------------------------------------
# Parameter specifications
# ----------------------------------------------------------------------------

def _check_size(size, what):
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise TypeError(f"{what} must be a non-negative int or None, got {size!r}")
    return size


class Table:
    """An embedding table (two sizes: rows, length) or a table of matrices
    (three sizes: rows, matrix rows, matrix columns). `None` is dynamic.
    `Table` itself, unparametrized, means `Table(None, None)`."""

    def __init__(self, *shape, dtype="f32"):
        if not shape:
            shape = (None, None)
        if len(shape) not in (2, 3):
            raise TypeError(f"Table takes 2 sizes (rows, length) or 3 (rows, matrix rows, "
                            f"matrix columns), got {len(shape)}")
        self.shape = tuple(_check_size(s, "a table size") for s in shape)
        self.dtype = dtype

    def type(self, context):
        from . import ir
        return ir.Type.table(context, list(self.shape), self.dtype)

    def __repr__(self):
        sizes = ", ".join("None" if s is None else str(s) for s in self.shape)
        return f"Table({sizes}, dtype={self.dtype!r})"


class Indices:
    """An index array: one row index per edge (i64 by default)."""

    def __init__(self, batch=None, dtype="i64"):
        self.batch = _check_size(batch, "the batch size")
        self.dtype = dtype

    def type(self, context):
        from . import ir
        return ir.Type.indices(context, self.batch, self.dtype)

    def __repr__(self):
        return f"Indices({self.batch}, dtype={self.dtype!r})"


def _spec(annotation, name):
    if annotation is Table:
        return Table()
    if annotation is Indices:
        return Indices()
    if isinstance(annotation, (Table, Indices)):
        return annotation
    raise TypeError(f"parameter '{name}' needs an annotation kge.Table(...) or "
                    f"kge.Indices(...), got {annotation!r}")


# ----------------------------------------------------------------------------
# Tracing
# ----------------------------------------------------------------------------

def _user_frame():
    """The innermost frame outside the kge package (the user's line)."""
    frame = inspect.currentframe()
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
            return frame
        frame = frame.f_back
    return None


def _frame_position(frame):
    line, column = frame.f_lineno, 1
    try:
        positions = list(frame.f_code.co_positions())
        start_line, _, start_column, _ = positions[frame.f_lasti // 2]
        if start_line == line and start_column is not None:
            column = start_column + 1
    except (AttributeError, IndexError):
        pass
    return frame.f_code.co_filename, line, column


class _Tracer:
    """Builds one bvec.func while the user's Python runs."""

    def __init__(self, context, builder):
        self.context, self.builder = context, builder

    def error(self, message):
        frame = _user_frame()
        if frame is None:
            return TraceError(message)
        filename, line, _ = _frame_position(frame)
        return TraceError(message, filename, line, linecache.getline(filename, line))

    def emit(self, method, *args):
        """Calls builder.`method` at the user's location; MLIR errors become
        TraceErrors at the user's line."""
        from . import ir
        frame = _user_frame()
        if frame is not None:
            filename, line, column = _frame_position(frame)
            self.builder.loc = ir.Location.file(self.context, filename, line, column)
        try:
            return _Value(self, getattr(self.builder, method)(*args))
        except MLIRError as error:
            raise self.error("; ".join(error.diagnostics)) from None

    # Values ------------------------------------------------------------------

    def value(self, operand, like, role):
        """`operand` as a bvec value: traced values as they are, numbers as
        constants shaped like `like`."""
        if isinstance(operand, _Value):
            if operand.tracer is not self:
                raise self.error("a value of another traced function is used here")
            return operand
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return self.constant(float(operand), like)
        if isinstance(operand, _Param):
            raise self.error(f"{operand.describe()} cannot be the {role} of an arithmetic "
                             "operation; gather rows first, e.g. E[h]")
        raise self.error(f"cannot use a {type(operand).__name__} as the {role} of a "
                         "traced operation")

    def constant(self, number, like):
        """`number` broadcast to the type of `like` (its sizes, dynamic ones
        included: they are those of `like`)."""
        return self.emit("constant", like.type, number)

    def scalar_constant(self, number, like):
        from . import ir
        return self.emit("constant", ir.Type.scalar(self.context, like.type.shape[0],
                                                     like.type.dtype), float(number))

    # Operators ---------------------------------------------------------------

    def arithmetic(self, op, lhs, rhs):
        """lhs `op` rhs, where at least one side is a traced value."""
        anchor = lhs if isinstance(lhs, _Value) else rhs
        # A number times (or dividing) a batch of vectors scales it.
        for number, other, swapped in ((lhs, rhs, False), (rhs, lhs, True)):
            if (isinstance(number, (int, float)) and not isinstance(number, bool)
                    and isinstance(other, _Value) and other.kind == "vec"):
                if op == "mul":
                    return self.emit("scal_mul_vec", self.scalar_constant(number, other).handle,
                                     other.handle)
                if op == "div" and swapped:
                    return self.emit("scal_mul_vec",
                                     self.scalar_constant(1.0 / number, other).handle,
                                     other.handle)
        lhs = self.value(lhs, anchor, "left operand")
        rhs = self.value(rhs, anchor, "right operand")
        kinds = {lhs.kind, rhs.kind}
        if kinds == {"scalar", "vec"}:
            scalar, vec = (lhs, rhs) if lhs.kind == "scalar" else (rhs, lhs)
            if op == "mul":
                return self.emit("scal_mul_vec", scalar.handle, vec.handle)
            if op == "div" and vec is lhs:
                one = self.scalar_constant(1.0, scalar)
                inverse = self.emit("div", one.handle, scalar.handle)
                return self.emit("scal_mul_vec", inverse.handle, vec.handle)
            symbol = {"add": "+", "sub": "-", "div": "/", "max": "maximum", "min": "minimum"}[op]
            raise self.error(f"'{symbol}' of a batch of scalars and a batch of vectors is not "
                             "defined; scale with '*' or reduce the vector first")
        return self.emit(op, lhs.handle, rhs.handle)


class _Value:
    """A traced bvec value."""

    __slots__ = ("tracer", "handle")
    __array_priority__ = 1000  # NumPy scalars defer to our operators

    def __init__(self, tracer, handle):
        self.tracer, self.handle = tracer, handle

    @property
    def type(self):
        return self.handle.type

    @property
    def kind(self):
        return self.handle.type.kind

    def __add__(self, other):
        return self.tracer.arithmetic("add", self, other)

    def __radd__(self, other):
        return self.tracer.arithmetic("add", other, self)

    def __sub__(self, other):
        return self.tracer.arithmetic("sub", self, other)

    def __rsub__(self, other):
        return self.tracer.arithmetic("sub", other, self)

    def __mul__(self, other):
        return self.tracer.arithmetic("mul", self, other)

    def __rmul__(self, other):
        return self.tracer.arithmetic("mul", other, self)

    def __truediv__(self, other):
        return self.tracer.arithmetic("div", self, other)

    def __rtruediv__(self, other):
        return self.tracer.arithmetic("div", other, self)

    def __neg__(self):
        return self.tracer.emit("neg", self.handle)

    def __pos__(self):
        return self

    def __abs__(self):
        return self.tracer.emit("abs", self.handle)

    def __matmul__(self, other):
        if not isinstance(other, _Value):
            raise self.tracer.error("'@' needs a traced batch of matrices on the right")
        if self.kind != "vec" or other.kind != "mat":
            raise self.tracer.error(
                f"'@' multiplies a batch of vectors by a batch of matrices (vec_mul_mat), "
                f"got {self.kind} @ {other.kind}; use kge.dot for inner products")
        return self.tracer.emit("vec_mul_mat", self.handle, other.handle)

    def __rmatmul__(self, other):
        raise self.tracer.error("'@' needs a traced batch of vectors on the left")

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise self.tracer.error("traced values can only be sliced (v[a:b]); gathers "
                                    "index tables, E[h]")
        if self.kind != "vec":
            raise self.tracer.error(f"only batches of vectors can be sliced, not {self.kind}s")
        length = self.type.shape[1]
        if length is None:
            raise self.tracer.error("slicing needs a static vector length; give the table "
                                    "a length, e.g. kge.Table(None, 128)")
        start, stop, step = key.indices(length)
        if step != 1 or stop <= start:
            raise self.tracer.error(f"slices must be contiguous and non-empty, got "
                                    f"[{key.start}:{key.stop}:{key.step}]")
        return self.tracer.emit("slice", self.handle, start, stop - start)

    def _no_python(self, what):
        raise self.tracer.error(
            f"{what} on a traced value is not supported: a score function is traced once "
            "for every edge of the batch at the same time, so Python control flow and "
            "conversions cannot depend on values; use kge.maximum/kge.minimum or arithmetic")

    def __bool__(self):
        self._no_python("control flow (if/while/and/or/not)")

    def __iter__(self):
        self._no_python("iteration")

    def __len__(self):
        self._no_python("len()")

    def __float__(self):
        self._no_python("float()")

    def __int__(self):
        self._no_python("int()")

    def __index__(self):
        self._no_python("use as an index")

    def __repr__(self):
        return f"<traced {self.type}>"


class _Param:
    """A traced parameter: a table or an index array."""

    def __init__(self, tracer, name, spec, handle):
        self.tracer, self.name, self.spec, self.handle = tracer, name, spec, handle

    def describe(self):
        return f"{'table' if isinstance(self.spec, Table) else 'index array'} '{self.name}'"

    def __getitem__(self, indices):
        if isinstance(self.spec, Indices):
            raise self.tracer.error(f"index array '{self.name}' cannot be indexed; index a "
                                    f"table with it: E[{self.name}]")
        if not (isinstance(indices, _Param) and isinstance(indices.spec, Indices)):
            raise self.tracer.error(f"table '{self.name}' must be indexed by an index array "
                                    f"parameter (kge.Indices), got {indices!r}")
        op = "gather_vec" if len(self.spec.shape) == 2 else "gather_mat"
        return self.tracer.emit(op, self.handle, indices.handle)

    def _arith(self, *_):
        raise self.tracer.error(f"{self.describe()} cannot be used in arithmetic; gather rows "
                                "first, e.g. E[h]")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _arith
    __truediv__ = __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = __abs__ = _arith

    def __bool__(self):
        raise self.tracer.error(f"control flow on {self.describe()} is not supported")

    def __repr__(self):
        return f"<{self.describe()}>"


def _traced(x, what):
    if isinstance(x, _Value):
        return x
    if isinstance(x, _Param):
        x._arith()
    raise TypeError(f"{what} expects a traced value inside a kge.function, got {x!r}")


# ----------------------------------------------------------------------------
# Operations
# ----------------------------------------------------------------------------

def _unary(name, doc):
    def op(x):
        x = _traced(x, f"kge.{name}")
        return x.tracer.emit(name, x.handle)
    op.__name__, op.__doc__ = name, doc
    return op


exp = _unary("exp", "Elementwise e^x.")
log = _unary("log", "Elementwise natural logarithm.")
sqrt = _unary("sqrt", "Elementwise square root.")
tanh = _unary("tanh", "Elementwise hyperbolic tangent.")
sigmoid = _unary("sigmoid", "Elementwise 1 / (1 + e^-x).")
sin = _unary("sin", "Elementwise sine.")
cos = _unary("cos", "Elementwise cosine.")


def abs(x):  # noqa: A001 - the front end's abs, like builtins.abs on values
    """Elementwise |x| (builtins.abs works on traced values as well)."""
    return builtins.abs(x)


def maximum(a, b):
    """Elementwise max(a, b)."""
    anchor = a if isinstance(a, _Value) else _traced(b, "kge.maximum")
    return anchor.tracer.arithmetic("max", a, b)


def minimum(a, b):
    """Elementwise min(a, b)."""
    anchor = a if isinstance(a, _Value) else _traced(b, "kge.minimum")
    return anchor.tracer.arithmetic("min", a, b)


def dot(a, b):
    """Inner product of each pair of vectors (vec_mul_vec)."""
    a, b = _traced(a, "kge.dot"), _traced(b, "kge.dot")
    return a.tracer.emit("vec_mul_vec", a.handle, b.handle)


def outer(a, b):
    """Outer product of each pair of vectors (vec_outer_vec)."""
    a, b = _traced(a, "kge.outer"), _traced(b, "kge.outer")
    return a.tracer.emit("vec_outer_vec", a.handle, b.handle)


def norm(x, p=2):
    """The p-norm (p = 1 or 2) of each vector."""
    x = _traced(x, "kge.norm")
    if p not in (1, 2):
        raise x.tracer.error(f"kge.norm supports p = 1 and p = 2, got p = {p!r}")
    return x.tracer.emit("norm", x.handle, p)


def _reduction(kind):
    def op(x):
        x = _traced(x, f"kge.{kind}")
        return x.tracer.emit("reduce", x.handle, kind)
    op.__name__ = kind
    op.__doc__ = f"The {kind} of the elements of each vector (bvec.reduce {kind})."
    return op


sum = _reduction("sum")  # noqa: A001
mean = _reduction("mean")
max = _reduction("max")  # noqa: A001
min = _reduction("min")  # noqa: A001


# ----------------------------------------------------------------------------
# Score functions
# ----------------------------------------------------------------------------

class _Compiled:
    """What ScoreFunction and GradientFunction share: their module's text
    and signature."""

    @property
    def ir(self):
        return str(self.module)

    @property
    def signature(self):
        from . import ir
        return ir.signature(self.module)


class ScoreFunction(_Compiled):
    """A traced score function: its bvec module (traced on first use), CPU
    execution and GPU bundles."""

    def __init__(self, fn, name=None, results=None):
        self.fn = fn
        self.name = name or fn.__name__
        self.result_names = list(results) if results else None
        self.params = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                raise TypeError(f"{self.name}: parameter '{param.name}' must be a plain "
                                "positional parameter")
            if param.annotation is param.empty:
                raise TypeError(f"{self.name}: parameter '{param.name}' needs an annotation "
                                "kge.Table(...) or kge.Indices(...)")
            self.params.append((param.name, _spec(param.annotation, param.name)))
        self._module = None
        self._cpu = None
        self._shared_cpu = {}
        functools.update_wrapper(self, fn)

    def trace(self, context=None):
        """Traces the function into a new module (in `context`, or a new one)."""
        from . import ir
        context = context or ir.Context()
        builder = ir.Builder(context)
        module = builder.create_module()
        tracer = _Tracer(context, builder)
        types = [(name, spec.type(context)) for name, spec in self.params]
        # The function's results are named once the body has run.
        names = self.result_names or ["score"]
        handle = builder.create_function(module, self.name, types, names)
        args = [_Param(tracer, name, spec, handle.argument(name)) for name, spec in self.params]
        out = self.fn(*args)
        if isinstance(out, dict):
            names, values = list(out), list(out.values())
        elif isinstance(out, (tuple, list)):
            values = list(out)
            names = self.result_names or [f"result{i}" for i in range(len(values))]
        else:
            values = [out]
            names = self.result_names or ["score"]
        if len(names) != len(values):
            raise TypeError(f"{self.name} returns {len(values)} values for the result names "
                            f"{names}")
        for value in values:
            if not isinstance(value, _Value) or value.tracer is not tracer:
                raise TypeError(f"{self.name} must return traced values (batches computed "
                                f"from its parameters), got {value!r}")
        if names != (self.result_names or ["score"]):
            # Recreate the function with the names the body chose.
            self.result_names = names
            return self.trace(context)
        try:
            builder.ret([v.handle for v in values])
        except MLIRError as error:
            raise TraceError(f"{self.name}: " + "; ".join(error.diagnostics)) from None
        return module

    @property
    def module(self):
        """The traced bvec module (traced once, then cached)."""
        if self._module is None:
            self._module = self.trace()
        return self._module

    def run_cpu(self, batch_size=None, shared_negatives=None, **arrays):
        """Runs on the CPU (MLIR ExecutionEngine) with NumPy arrays; returns
        the result array (a dict of them for several results). With
        `shared_negatives` (the name of an index array of N entries), scores
        every edge against each of them: a [B, N] array."""
        from .compiler import against_shared_negatives, compile_cpu
        if shared_negatives is not None:
            if shared_negatives not in self._shared_cpu:
                from . import ir
                module = against_shared_negatives(self.module, shared_negatives)
                params = ir.signature(module, self.name)["params"]
                (output,) = [p["name"] for p in params if p["role"] == "output"]
                edges = [p["name"] for p in params
                         if p["role"] == "indices" and p["name"] != shared_negatives]
                self._shared_cpu[shared_negatives] = (compile_cpu(module, self.name), output,
                                                      edges)
            run, output, edges = self._shared_cpu[shared_negatives]
            missing = [n for n in edges + [shared_negatives] if n not in arrays]
            if missing:
                raise TypeError(f"{self.name} needs the index arrays {', '.join(missing)}")
            import numpy as np
            scores = np.zeros((len(arrays[edges[0]]), len(arrays[shared_negatives])),
                              dtype=np.float32)
            run({**arrays, output: scores})
            return scores
        if self._cpu is None:
            self._cpu = compile_cpu(self.module, self.name)
        results = self._cpu(arrays, batch_size)
        return results if len(results) > 1 else next(iter(results.values()))

    def compile(self, negative=None, sizes=None, cubin=True, *, shared_negatives=None,
                cache=True, **layout):
        """The GPU kernel bundle (kge.Bundle) of this function; `negative`
        names the index array corrupted in negative-sampling mode (K per
        edge), `shared_negatives` the index array of N negatives every edge
        is scored against (a [B, N] output, computed by a tile task),
        `sizes` gives static sizes (e.g. {"D_Eemb": 512}), `layout` the
        options of bvec-fuse (tile, warps, vector_width, reorder_key,
        reorder_group, stage_repeats, matrix_math, carry_floats,
        blocks_per_sm, deterministic, reorder_min_batch, reorder_min_reuse,
        reorder_min_row).
        Compiled once, then read from the bundle cache (kge.cache;
        `cache=False` compiles every time)."""
        from .compiler import compile_bundle
        return compile_bundle(self.module, negative, sizes, cubin,
                              shared_negatives=shared_negatives, cache=cache, **layout)

    def gradient(self, wrt=None):
        """This function's gradient function (`bvec-differentiate`): its
        arguments and one per-edge seed `d_<result>` in, the row gradient
        `d_<table>_<indices>` of each (table, index array) out (`wrt`: the
        tables to differentiate, default all); run it on the CPU or compile
        it like this function. With this function's bundle,
        kge.autograd.ScoreOperator makes the pair a PyTorch operator."""
        return GradientFunction(self, wrt)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.name} is a traced score function: run it with "
                        f".run_cpu(**arrays) or compile it with .compile()")

    def __repr__(self):
        return f"<kge.function {self.name}({', '.join(n for n, _ in self.params)})>"


class GradientFunction(_Compiled):
    """The gradient function of a ScoreFunction (ScoreFunction.gradient)."""

    def __init__(self, score, wrt=None):
        self.score, self.wrt = score, list(wrt) if wrt else None
        self.name = score.name + "_grad"
        self._module = None
        self._cpu = None

    @property
    def module(self):
        """A module holding only the gradient function."""
        if self._module is None:
            from .compiler import gradient_module
            try:
                self._module = gradient_module(self.score.module, self.score.name, self.wrt)
            except MLIRError as error:
                raise TraceError(f"{self.name}: " + "; ".join(error.diagnostics)) from None
        return self._module

    def run_cpu(self, batch_size=None, **arrays):
        """The row gradients for NumPy arrays (the function's arguments and
        its seeds), as a dict by result name."""
        from .compiler import compile_cpu
        if self._cpu is None:
            self._cpu = compile_cpu(self.module, self.name)
        return self._cpu(arrays, batch_size)

    def compile(self, sizes=None, cubin=True, cache=True, **layout):
        """The GPU kernel bundle of the gradient function (sizes, layout and
        cache as for ScoreFunction.compile)."""
        from .compiler import compile_bundle
        return compile_bundle(self.module, None, sizes, cubin, cache=cache, **layout)

    def __repr__(self):
        return f"<kge.gradient of {self.score.name}>"


def function(fn=None, *, name=None, results=None):
    """Decorator: turns a Python score function into a ScoreFunction."""
    if fn is None:
        return lambda f: ScoreFunction(f, name, results)
    return ScoreFunction(fn, name, results)
