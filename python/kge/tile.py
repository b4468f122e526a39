"""Matrix-multiplication-like tasks (the `tile` dialect) from Python.

Write a query in GAMUT's declarative syntax, run it on the CPU, get NumPy
arrays back::

    import kge.tile

    q = kge.tile.query('''
        where (i in [0, M], j in [0, N]) {
          accum = 0;
          reduce (k in [0, K]) { accum += P[i, k] * R[k, j]; }
          C[Pzip[i], Rzip[j]] += accum;
        }''')
    C = q.run_cpu(P=P, R=R, Pzip=pzip, Rzip=rzip, C=np.zeros((zips, zips), np.float32))

Each output operator returns what its statement describes:

- ``C[i, j] = e``: the dense matrix ``C`` (M x N, or N x M for ``C[j, i]``);
- ``C[K1[i], K2[j]] += e`` (aggregate): ``C`` itself, which the caller
  passes initialized (its shape is the number of groups);
- ``if (cond) C.put(e)`` (select): ``(rows, cols, values)`` of the selected
  pairs in row-major order;
- ``C.top(k, e)`` / ``C.bottom(k, e)``: ``(values, rows, cols)`` of the k
  best pairs, best first (fewer when fewer pairs qualify);
- ``C.distinct(e)``: the distinct values, sorted.
- ``S[i] += e`` (a row's values combined along j; ``S[i] = max(S[i], e)``
  or min), optionally followed by its finalization ``S[i] = f(S[i], i)``:
  the vector ``S`` (M);
- ``C[key[k], i, j] += accum`` (a matrix per key of the reduction's
  steps): ``C`` itself, passed initialized (keys x M x N).

The same queries from Python (kge.tile.function, traced into that syntax)::

    from kge.tile import i, j, k, reduce

    @kge.tile.function
    def amplify(S, W, thres):
        p = S[i, k] * W[k, j]
        return reduce(p + (p > thres[i]) * (p - thres[i]))

On a GPU, ``q.compile()`` gives a kernel bundle (compiled once, then read
from a persistent cache, see compile_query) whose program takes CUDA
tensors, the outputs included. ``q.autotune(**arrays)`` compiles the
query's variants (tile shapes; for tensor cores, clusters and the
instruction family), times them on these arrays once and remembers the
fastest for these shapes and this device (see autotune).

The grammar is in docs/RationaleTileIterator.md.
"""


import numpy as np

from . import cache as _cache

_NUMPY_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
                 "i64": np.int64}


def _ir():
    from . import ir
    return ir


def _numpy_dtype(name):
    if name == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return _NUMPY_DTYPES[name]


class Query:
    """A query compiled into a tile function (``.module``, ``.signature``)."""

    def __init__(self, text, name="query", dtypes=None, filename="<query>"):
        ir = _ir()
        self.text = text
        self.name = name
        self.dtypes = dict(dtypes or {})
        self.context = ir.Context()
        self.module = ir.parse_gamut(self.context, text, name=name, dtypes=dict(dtypes or {}),
                                     filename=filename)
        self.signature = ir.signature(self.module, name)
        params = self.signature["params"]
        self._outputs = [p for p in params if p["role"] == "output"]
        self._inputs = [p for p in params if p["role"] != "output"]
        names = [p["name"] for p in self._outputs]
        if len(names) == 1:
            self.kind = "dense_or_aggregate"
            self.target = names[0]
        else:
            self.target = names[0].rsplit("_", 1)[0]
            suffixes = tuple(n[len(self.target) + 1:] for n in names)
            self.kind = {("rows", "cols", "values", "count"): "select",
                         ("values", "rows", "cols"): "top_k",
                         ("values", "count"): "distinct"}[suffixes]
        self._cpu = None

    def __str__(self):
        return str(self.module)

    def compile(self, cubin=True, cache=True, matrix_math=None, warpgroup=True, cluster_m=2,
                **tile_shape):
        """The query's kernel bundle for the GPU (compile_query)."""
        return compile_query(self, cubin=cubin, cache=cache, matrix_math=matrix_math,
                             warpgroup=warpgroup, cluster_m=cluster_m, **tile_shape)

    def schedule(self, matrix_math=None, warpgroup=True, cluster_m=2, **tile_shape):
        """The query's GPU kernels as tile iterators (the IR that
        `kge-opt --tile-schedule` prints): each ``tile.kernel`` with its
        tiling, its loads, its compute step and its store, for the options
        of compile_query."""
        options = _schedule_options(matrix_math, warpgroup, cluster_m, tile_shape)
        scheduled = self.module.clone()
        pm = _ir().PassManager(self.context)
        pm.add("tile-schedule" + _pass_options(options))
        pm.run(scheduled)
        return str(scheduled)

    def autotune(self, matrix_math=None, **arrays):
        """The fastest of the query's variants on these arrays (autotune)."""
        return autotune(self, arrays, matrix_math=matrix_math)

    @property
    def inputs(self):
        """Names of the arrays the query reads."""
        return [p["name"] for p in self._inputs]

    def _bind(self, arrays):
        """The sizes of the signature's symbols given the input arrays."""
        symbols = {}
        for p in self._inputs + self._outputs:
            array = arrays.get(p["name"])
            if array is None:
                continue
            shape = np.shape(array)
            if len(shape) != len(p["shape"]):
                raise ValueError(f"'{p['name']}' expects rank {len(p['shape'])}, got shape "
                                 f"{tuple(shape)}")
            for dim, size in zip(p["shape"], shape):
                if isinstance(dim, str):
                    symbols.setdefault(dim, size)
        return symbols

    def _allocate(self, symbols, capacity):
        outputs = {}
        for p in self._outputs:
            shape = []
            for dim in p["shape"]:
                if isinstance(dim, int):
                    shape.append(dim)
                elif dim in symbols:
                    shape.append(symbols[dim])
                elif self.kind in ("select", "distinct"):
                    shape.append(capacity)
                else:
                    raise TypeError(f"pass the output '{p['name']}' initialized: its size "
                                    f"'{dim}' (the number of groups or keys) is not given by "
                                    f"the inputs")
            outputs[p["name"]] = np.zeros(shape, _numpy_dtype(p["dtype"]))
        return outputs

    def run_cpu(self, capacity=None, **arrays):
        """Runs the query on the CPU (MLIR's ExecutionEngine) over NumPy
        arrays. An aggregate or per-key output is passed initialized and
        updated in place; the others are allocated. `capacity` bounds a select or
        distinct output (default: enough for every pair; a smaller one
        that overflows is retried with the exact count)."""
        if self._cpu is None:
            from . import compiler
            self._cpu = compiler.compile_cpu(self.module, self.name)
        output_names = {p["name"] for p in self._outputs}
        given = {k: v for k, v in arrays.items() if k in output_names}
        inputs = {k: np.ascontiguousarray(v) for k, v in arrays.items() if k not in output_names}
        symbols = self._bind({**inputs, **given})
        if capacity is None:
            capacity = symbols.get("M", 0) * symbols.get("N", 0)
        while True:
            outputs = self._allocate(symbols, capacity)
            outputs.update(given)
            self._cpu({**inputs, **outputs})
            t = self.target
            if self.kind == "select":
                count = int(outputs[t + "_count"][0])
                if count > capacity:
                    capacity = count
                    continue
                order = np.lexsort((outputs[t + "_cols"][:count], outputs[t + "_rows"][:count]))
                return tuple(outputs[t + s][:count][order] for s in ("_rows", "_cols", "_values"))
            if self.kind == "distinct":
                count = int(outputs[t + "_count"][0])
                if count > capacity:
                    capacity = count
                    continue
                return np.sort(outputs[t + "_values"][:count])
            if self.kind == "top_k":
                filled = int(np.count_nonzero(outputs[t + "_rows"] >= 0))
                return tuple(outputs[t + s][:filled] for s in ("_values", "_rows", "_cols"))
            return outputs[t]


_TILE_OPTIONS = {"block_m": "block-m", "block_n": "block-n", "block_k": "block-k",
                 "thread_m": "thread-m", "thread_n": "thread-n"}


def _pass_options(options):
    """The options of tile-schedule / convert-tile-to-gpu, as a pass
    pipeline's braces (empty for none)."""
    names = {**_TILE_OPTIONS, "matrix_math": "matrix-math", "warpgroup": "warpgroup",
             "cluster_m": "cluster-m"}
    tile = " ".join(f"{names[k]}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in sorted(options.items()))
    return "{" + tile + "}" if tile else ""


def _compile(query, options, cubin):
    from . import compiler
    ir = _ir()
    lowered = query.module.clone()
    pm = ir.PassManager(query.context)
    pm.add("convert-tile-to-gpu" + _pass_options(options) + ",kge-lower-to-gpu")
    pm.run(lowered)
    return compiler.Bundle(ir.to_bundle(lowered, cubin))


_MATRIX_MATH = ("fma", "tf32", "tf32x3")


def _schedule_options(matrix_math, warpgroup, cluster_m, tile_shape):
    """Checks compile_query's options; those that differ from the defaults."""
    if matrix_math is not None and matrix_math not in _MATRIX_MATH:
        raise ValueError(f"matrix_math must be one of {', '.join(_MATRIX_MATH)} or None, "
                         f"got {matrix_math!r}")
    if not isinstance(warpgroup, bool):
        raise TypeError(f"warpgroup must be a bool, got {warpgroup!r}")
    if cluster_m not in (1, 2, 4) or isinstance(cluster_m, bool):
        raise ValueError(f"cluster_m must be 1, 2 or 4, got {cluster_m!r}")
    for name, value in tile_shape.items():
        if name not in _TILE_OPTIONS:
            raise TypeError(f"unknown tile option '{name}' (expected one of "
                            f"{', '.join(sorted(_TILE_OPTIONS))})")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    options = dict(tile_shape)
    if matrix_math is not None:
        options["matrix_math"] = matrix_math
    if not warpgroup:
        options["warpgroup"] = False
    if cluster_m != 2:
        options["cluster_m"] = cluster_m
    return options


def compile_query(query, cubin=True, cache=True, matrix_math=None, warpgroup=True, cluster_m=2,
                  **tile_shape):
    """The kernel bundle of `query` (a Query) for sm_90 (sm_90a with a
    warpgroup-MMA kernel): compiled once, then
    read from the cache (kge.cache; a hash of the query, its dtypes, the
    options, the target and the compiler names the file).

    Products of f16 and bf16 operands run on tensor cores (warpgroup MMA,
    sm_90a, when `warpgroup`, else mma.sync); `matrix_math` "tf32" or
    "tf32x3" puts products of f32 operands there too, "fma" keeps every
    product on CUDA cores. `cluster_m` (1, 2 or 4): blocks of the
    warpgroup kernel per cluster along M, sharing B's tiles by TMA
    multicast. `tile_shape` (block_m, block_n, block_k,
    thread_m, thread_n) fixes one CUDA-core kernel instead of GAMUT's
    heuristic."""
    options = _schedule_options(matrix_math, warpgroup, cluster_m, tile_shape)
    payload = {"query": query.text, "name": query.name, "dtypes": query.dtypes,
               "options": options, "cubin": cubin}
    return _cache.cached(payload, lambda: _compile(query, options, cubin), cache, cubin=cubin)


# Tile shapes the autotuner tries on CUDA cores (block m, n, k, thread m,
# n): GAMUT's two, deeper and flatter blocks, and small ones that give
# small problems more blocks than multiprocessors.
_TUNING_SHAPES = ((128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 64, 8, 8, 4),
                  (64, 128, 8, 4, 8), (64, 64, 16, 4, 4), (64, 64, 8, 4, 4),
                  (64, 64, 16, 8, 8), (64, 32, 16, 4, 2), (32, 64, 16, 2, 4),
                  (32, 32, 8, 2, 2))
# Top-k sorts a block's pairs in shared memory: at most this many.
_TOP_K_BLOCK_PAIRS = 4096


def _variant_name(options):
    if not options or options == {"matrix_math": options.get("matrix_math")}:
        return "auto"
    if "block_m" in options:
        return "b{block_m}x{block_n}x{block_k}.t{thread_m}x{thread_n}".format(**options)
    parts = []
    if options.get("warpgroup") is False:
        parts.append("mma_sync")
    if "cluster_m" in options:
        parts.append(f"cluster{options['cluster_m']}")
    return ".".join(parts)


def tuning_variants(query, matrix_math=None):
    """The compile options the autotuner tries for `query`, by variant name
    (the heuristic's, "auto", first). Products that reach tensor cores
    (16-bit operands, or f32 ones with `matrix_math` "tf32"/"tf32x3") try
    clusters of 1, 2 and 4 blocks and mma.sync instead of warpgroup MMA;
    other queries try CUDA-core tile shapes (top-k: blocks of at most 4096
    pairs)."""
    if matrix_math is not None and matrix_math not in _MATRIX_MATH:
        raise ValueError(f"matrix_math must be one of {', '.join(_MATRIX_MATH)} or None, "
                         f"got {matrix_math!r}")
    base = {"matrix_math": matrix_math} if matrix_math else {}
    half = any(d in ("f16", "bf16") for d in query.dtypes.values())
    if matrix_math in ("tf32", "tf32x3") or (half and matrix_math != "fma"):
        options = [base, {**base, "cluster_m": 1}, {**base, "cluster_m": 4},
                   {**base, "warpgroup": False}]
    else:
        options = [base]
        for bm, bn, bk, tm, tn in _TUNING_SHAPES:
            if query.kind == "top_k" and bm * bn > _TOP_K_BLOCK_PAIRS:
                continue
            options.append({**base, "block_m": bm, "block_n": bn, "block_k": bk,
                            "thread_m": tm, "thread_n": tn})
    return {_variant_name(o): o for o in options}


class Tuning:
    """What autotune() chose: `bundle` (the fastest variant's), `options`
    (its compile options, for compile_query), `choice` (a
    kge.autotune.Choice: every variant's time, the failures, whether it
    came from the cache)."""

    def __init__(self, bundle, options, choice):
        self.bundle, self.options, self.choice = bundle, options, choice

    @property
    def variant(self):
        return self.choice.best

    def __repr__(self):
        source = "cached" if self.choice.cached else "timed"
        return f"Tuning({self.variant!r}, {source}, {len(self.choice.times)} variants)"


def autotune(query, arrays, matrix_math=None, variants=None, timer=None, cache=True,
             load=None, device=0):
    """Compiles the variants of `query` (tuning_variants, or `variants`:
    name -> compile options), runs each on `arrays` (CUDA tensors by name,
    the outputs included; they are not written: outputs are copied for
    the timing) and returns a Tuning with the fastest one's bundle.

    Variants that compile to the same bundle run once. The choice is kept
    in kge.cache.cache_dir()/autotune, keyed by the query, its dtypes, the variants,
    the arrays' shapes and dtypes, the device's name and the compiler: a
    later call with the same key loads the chosen bundle without timing
    (`cache=False`: always time, store nothing). `timer(fn) -> seconds per
    call` (default: CUDA events); `load(bundle) -> callable` (default:
    bundle.load(device))."""
    from . import autotune as tuner
    if variants is None:
        variants = tuning_variants(query, matrix_math)
    if not variants:
        raise tuner.AutotuneError("no variants to tune")
    arrays = dict(arrays)
    expected = {p["name"] for p in query.signature["params"]}
    unknown = sorted(set(arrays) - expected)
    if unknown:
        raise tuner.AutotuneError(f"arrays {unknown} are not parameters of '{query.name}' "
                                  f"(expected {sorted(expected)})")
    missing = sorted(expected - set(arrays))
    if missing:
        raise tuner.AutotuneError(f"tuning '{query.name}' needs every parameter, the outputs "
                                  f"included: missing {missing}")
    key = tuner.TuningCache.key(kind="tile", query=query.text, name=query.name,
                                dtypes=query.dtypes, variants=variants,
                                shapes=tuner.shape_key(arrays), device=tuner.device_name(),
                                compiler=_cache.compiler_identity())
    store = tuner.TuningCache(_cache.cache_dir() / "autotune") if cache else None
    bundles, same_as = {}, {}
    seen = {}
    for name, options in variants.items():
        options = dict(options)
        bundle = compile_query(query, cache=cache, **options)
        if bundle.text in seen:
            same_as[name] = seen[bundle.text]
            continue
        seen[bundle.text] = name
        bundles[name] = bundle
    choice = store.get(key, bundles) if store else None
    if choice is None:
        load = load or (lambda bundle: bundle.load(device))
        programs = {name: load(bundle) for name, bundle in bundles.items()}
        outputs = [p["name"] for p in query._outputs]
        choice = tuner.select(programs, arrays, outputs=outputs, timer=timer)
        for name, original in same_as.items():
            if original in choice.times:
                choice.times[name] = choice.times[original]
        if store:
            store.put(key, choice)
    return Tuning(bundles[choice.best], dict(variants[choice.best]), choice)


def query(text, name="query", dtypes=None):
    """Parses `text`, a query in GAMUT's declarative syntax, into a Query.
    `dtypes` maps array names to element types ("f32", "f64", "f16",
    "bf16", "i32", "i64"); by default the output's keys and the arrays only
    the join condition reads are i32, the others f32."""
    return Query(text, name=name, dtypes=dtypes)


#
# The decorator front end: Python over symbolic arrays, written out in
# GAMUT's syntax and parsed by the same parser.
#

def _unique(values):
    """`values` without repetitions (by identity), in order."""
    seen = {}
    for v in values:
        seen.setdefault(id(v), v)
    return tuple(seen.values())


class Expr:
    """A scalar expression of a traced query; `reductions` are the
    reduce() results it uses."""

    def __init__(self, text, *parts):
        self.text = text
        self.reductions = _unique(r for p in parts for r in p.reductions)

    @staticmethod
    def of(value):
        if isinstance(value, Expr):
            return value
        if isinstance(value, bool):
            return Expr("1" if value else "0")
        if isinstance(value, (int, float)):
            if value != value:
                raise TraceError("NaN constants cannot be written in a query")
            if value in (float("inf"), float("-inf")):
                return Expr("inf" if value > 0 else "(-inf)")
            return Expr(repr(float(value)))
        raise TraceError(f"a query computes on arrays and numbers, got {type(value).__name__}")

    def _binary(self, op, other, swap=False):
        a, b = (Expr.of(other), self) if swap else (self, Expr.of(other))
        return Expr(f"({a.text} {op} {b.text})", a, b)

    def __add__(self, o): return self._binary("+", o)
    def __radd__(self, o): return self._binary("+", o, True)
    def __sub__(self, o): return self._binary("-", o)
    def __rsub__(self, o): return self._binary("-", o, True)
    def __mul__(self, o): return self._binary("*", o)
    def __rmul__(self, o): return self._binary("*", o, True)
    def __truediv__(self, o): return self._binary("/", o)
    def __rtruediv__(self, o): return self._binary("/", o, True)
    def __gt__(self, o): return self._binary(">", o)
    def __ge__(self, o): return self._binary(">=", o)
    def __lt__(self, o): return self._binary("<", o)
    def __le__(self, o): return self._binary("<=", o)
    def __eq__(self, o): return self._binary("==", o)  # noqa: E704 - an expression
    def __ne__(self, o): return self._binary("!=", o)
    def __and__(self, o): return self._binary("&&", o)
    def __or__(self, o): return self._binary("||", o)
    def __neg__(self): return Expr(f"(-{self.text})", self)
    def __invert__(self): return Expr(f"(!{self.text})", self)
    __hash__ = None

    def __bool__(self):
        raise TraceError("a traced value has no truth value: use where(c, a, b), & and | "
                         "instead of if, and, or")


class TraceError(Exception):
    """The function cannot be traced into a matmul-like query."""


class Axis:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


#: The axes of every query: two spatial, one reduction.
i, j, k = Axis("i"), Axis("j"), Axis("k")


class _Gathered(Expr):
    """An index array at a spatial axis (h[i]): a value, or a subscript of
    another array that is read through it (E[h[i], k])."""

    def __init__(self, array, axis):
        super().__init__(f"{array}[{axis.name}]")
        self.axis = axis


class Array:
    """A symbolic input array: index it with the axes (A[i, k], w[k]), or
    gather a spatial subscript through an index array (E[h[i], k],
    W[r[i], k, j]: one matrix per row's key; x[src[k], i] along the
    reduction only for a per_key output)."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, axes):
        axes = axes if isinstance(axes, tuple) else (axes,)
        for a in axes:
            if not isinstance(a, (Axis, _Gathered)):
                raise TraceError(f"index {self.name} with the axes i, j, k or index arrays "
                                 f"of a spatial axis (h[i])")
        if len(axes) == 1 and isinstance(axes[0], Axis):
            return _Gathered(self.name, axes[0])
        return Expr(f"{self.name}[{', '.join(a.name if isinstance(a, Axis) else a.text for a in axes)}]")


def _call(name, *args):
    args = [Expr.of(a) for a in args]
    return Expr(f"{name}({', '.join(a.text for a in args)})", *args)


def exp(x): return _call("exp", x)
def log(x): return _call("log", x)
def sqrt(x): return _call("sqrt", x)
def tanh(x): return _call("tanh", x)
def sigmoid(x): return _call("sigmoid", x)
def absolute(x): return _call("abs", x)
def power(x, y): return _call("pow", x, y)
def maximum(x, y): return _call("max", x, y)
def minimum(x, y): return _call("min", x, y)


def where(condition, a, b):
    c, a, b = Expr.of(condition), Expr.of(a), Expr.of(b)
    return Expr(f"({c.text} ? {a.text} : {b.text})", c, a, b)


class Reduction(Expr):
    """The accumulator of reduce(): usable in the output's value."""

    def __init__(self, value, combine, init):
        super().__init__("accum")
        self.reductions = (self,)
        self.value, self.combine, self.init = Expr.of(value), combine, init
        if self.value.reductions:
            raise TraceError("a reduction cannot use another reduction's result")


def reduce(value, combine="add", init=None):
    """Reduces `value` (an expression of the inputs at i, j, k) over k.
    `combine`: "add", "mul", "max", "min" or an associative Python function
    of two values; `init`: the initial value (the identity by default)."""
    if combine not in ("add", "mul", "max", "min") and not callable(combine):
        raise TraceError(f"unknown combination {combine!r}")
    if init is None:
        init = {"add": 0, "mul": 1, "max": float("-inf"), "min": float("inf")}.get(combine)
        if init is None:
            raise TraceError("a custom combination needs its identity as init=")
    return Reduction(value, combine, init)


class _Output:
    def __init__(self, kind, value, **fields):
        self.kind, self.value, self.fields = kind, value, fields


def dense(value, transpose=False):
    """Output C[i, j] = value (C[j, i] with transpose)."""
    return _Output("dense", value, transpose=transpose)


def aggregate(value, rows, cols, combine="add"):
    """Output C[rows[i], cols[j]] combined with value (add, max or min)."""
    return _Output("aggregate", value, rows=rows, cols=cols, combine=combine)


def select(value, where):
    """The pairs where `where` holds, with their values."""
    return _Output("select", value, where=where)


def top_k(value, count, smallest=False, where=None):
    """The `count` best pairs (largest, or smallest)."""
    return _Output("top", value, count=count, smallest=smallest, where=where)


def distinct(value, where=None):
    """The distinct values."""
    return _Output("distinct", value, where=where)


def reduce_rows(value, combine="add", finalize=None):
    """Output S[i]: the values of row i combined along j ("add", "max" or
    "min"), then `finalize` (a function of the row's combined value, e.g.
    kge.tile.sqrt) when given: a row's norm, distance or inner product."""
    if combine not in ("add", "max", "min"):
        raise TraceError(f"a row's values combine with add, max or min, got {combine!r}")
    if finalize is not None and not callable(finalize):
        raise TraceError("finalize must be a function of the row's value")
    return _Output("reduce", value, combine=combine, finalize=finalize)


def per_key(value, key):
    """Output C[key[k], i, j]: one matrix per key of the reduction's steps,
    each summing (with reduce's combination) the steps whose key it is: a
    segment matrix multiplication, a typed linear layer's weight gradient.
    `value` is the reduce(...) result itself; `key` an array at k
    (etype[k]). C is passed initialized, one matrix per key."""
    if not isinstance(value, Reduction):
        raise TraceError("a matrix per key adds each key's reduction as it is: pass "
                         "reduce(...) itself, not an expression of it")
    if not isinstance(key, _Gathered) or key.axis is not k:
        raise TraceError("the key of a matrix per key is an array at k, as in etype[k]")
    if value.combine not in ("add", "max", "min"):
        raise TraceError("a matrix per key combines with add, max or min")
    return _Output("per_key", value, key=key)


def _write(fn, join):
    """The query text of a traced function."""
    import inspect
    names = list(inspect.signature(fn).parameters)
    result = fn(*[Array(n) for n in names])
    output = result if isinstance(result, _Output) else dense(result)
    value = Expr.of(output.value)
    used = _unique(value.reductions + (
        Expr.of(output.fields["where"]).reductions if output.fields.get("where") is not None
        else ()))
    if not used:
        raise TraceError(f"'{fn.__name__}' reduces nothing: return an expression of reduce(...)")
    if len(used) > 1:
        raise TraceError(f"'{fn.__name__}' has {len(used)} reductions; a matmul-like task has one")
    (reduction,) = used
    target = "C"
    while target in names:
        target += "_"
    declare, update = "", None
    combine = reduction.combine
    if combine == "add":
        update = f"accum += {reduction.value.text};"
    elif combine == "mul":
        update = f"accum *= {reduction.value.text};"
    elif combine in ("max", "min"):
        update = f"accum = {combine}(accum, {reduction.value.text});"
    else:
        body = Expr.of(combine(Expr("a"), Expr("b")))
        declare = f"associative combine(a, b) = {body.text};\n"
        update = f"accum = combine(accum, {reduction.value.text});"
    kind, f = output.kind, output.fields
    guard = f"if ({Expr.of(f['where']).text}) " if f.get("where") is not None else ""
    if kind == "dense":
        statement = f"{target}[{'j, i' if f['transpose'] else 'i, j'}] = {value.text};"
    elif kind == "aggregate":
        group = f"{target}[{Expr.of(f['rows']).text}, {Expr.of(f['cols']).text}]"
        statement = (f"{group} += {value.text};" if f["combine"] == "add" else
                     f"{group} = {f['combine']}({group}, {value.text});")
    elif kind == "select":
        statement = f"{guard}{target}.put({value.text});"
    elif kind == "top":
        method = "bottom" if f["smallest"] else "top"
        statement = f"{guard}{target}.{method}({int(f['count'])}, {value.text});"
    elif kind == "reduce":
        row = f"{target}[i]"
        statement = (f"{row} += {value.text};" if f["combine"] == "add" else
                     f"{row} = {f['combine']}({row}, {value.text});")
        if f["finalize"] is not None:
            final = Expr.of(f["finalize"](Expr(row)))
            if final.reductions:
                raise TraceError("the finalization computes on the row's value, not on "
                                 "reduce(...)")
            statement += f"\n  {row} = {final.text};"
    elif kind == "per_key":
        matrix = f"{target}[{f['key'].text}, i, j]"
        statement = (f"{matrix} += accum;" if reduction.combine == "add" else
                     f"{matrix} = {reduction.combine}({matrix}, accum);")
    else:
        statement = f"{guard}{target}.distinct({value.text});"
    init = Expr.of(reduction.init).text
    when = f" when ({Expr.of(join).text})" if join is not None else ""
    return (f"{declare}where (i in [0, M], j in [0, N]){when} {{\n"
            f"  accum = {init};\n  reduce (k in [0, K]) {{\n    {update}\n  }}\n"
            f"  {statement}\n}}\n"), target


def function(fn=None, *, when=None, dtypes=None):
    """Decorator: traces a Python function of symbolic arrays into a Query.

        from kge.tile import i, j, k
        @kge.tile.function
        def amplify(S, W, thres):
            p = S[i, k] * W[k, j]
            return reduce(p + (p > thres[i]) * (p - thres[i]))

    The parameters are the input arrays; the function returns the output:
    an expression of reduce(...) (a dense output) or dense(), aggregate(),
    select(), top_k(), distinct(), reduce_rows(), per_key(). `when`: a function of the same arrays
    giving the join condition. The output array is named C (C_ when a
    parameter is called C)."""
    def wrap(f):
        join = None
        if when is not None:
            import inspect
            join = when(*[Array(n) for n in inspect.signature(f).parameters])
        text, _ = _write(f, join)
        name = f.__name__ if f.__name__.isidentifier() else "query"
        q = Query(text, name=name, dtypes=dtypes)
        q.__doc__ = f.__doc__
        return q
    return wrap(fn) if fn is not None else wrap
