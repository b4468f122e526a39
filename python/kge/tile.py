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

On a GPU, ``q.compile()`` gives a kernel bundle (compiled once, then read
from a persistent cache, see compile_query) whose program takes CUDA
tensors, the outputs included.

The grammar is in docs/RationaleTileIterator.md.
"""

import hashlib
import json
import os
import pathlib

import numpy as np

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

    def compile(self, cubin=True, cache=True, **tile_shape):
        """The query's kernel bundle for the GPU (compile_query)."""
        return compile_query(self, cubin=cubin, cache=cache, **tile_shape)

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
                                    f"'{dim}' (the number of groups) is not given by the inputs")
            outputs[p["name"]] = np.zeros(shape, _numpy_dtype(p["dtype"]))
        return outputs

    def run_cpu(self, capacity=None, **arrays):
        """Runs the query on the CPU (MLIR's ExecutionEngine) over NumPy
        arrays. An aggregate output is passed initialized and updated in
        place; the others are allocated. `capacity` bounds a select or
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


def cache_dir():
    """Where compiled bundles are kept: $KGE_CACHE_DIR, else
    ~/.cache/kge/bundles."""
    root = os.environ.get("KGE_CACHE_DIR")
    return pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "kge" / "bundles"


def _compiler_identity():
    """What identifies the compiler that builds bundles: the package version
    and the compiler extension's file (size and modification time), so
    that a rebuilt compiler never reuses an older bundle."""
    from . import __version__, _compiler
    stat = pathlib.Path(_compiler.__file__).stat()
    return f"{__version__}:{stat.st_size}:{stat.st_mtime_ns}"


def _cache_key(query, options, cubin):
    text = json.dumps({"query": query.text, "name": query.name, "dtypes": query.dtypes,
                       "options": options, "cubin": cubin, "target": "sm_90",
                       "compiler": _compiler_identity()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _compile(query, options, cubin):
    from . import compiler
    ir = _ir()
    lowered = query.module.clone()
    pm = ir.PassManager(query.context)
    tile = ",".join(f"{_TILE_OPTIONS[k]}={v}" for k, v in sorted(options.items()))
    pm.add("convert-tile-to-gpu" + ("{" + tile.replace(",", " ") + "}" if tile else "") +
           ",kge-lower-to-gpu")
    pm.run(lowered)
    return compiler.Bundle(ir.to_bundle(lowered, cubin))


def compile_query(query, cubin=True, cache=True, **tile_shape):
    """The kernel bundle of `query` (a Query) for sm_90: compiled once, then
    read from the cache (cache_dir(); a hash of the query, its dtypes, the
    tile shape, the target and the compiler names the file). `tile_shape`:
    block_m, block_n, block_k, thread_m, thread_n."""
    for name, value in tile_shape.items():
        if name not in _TILE_OPTIONS:
            raise TypeError(f"unknown tile option '{name}' (expected one of "
                            f"{', '.join(sorted(_TILE_OPTIONS))})")
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    from . import compiler
    path = cache_dir() / f"{_cache_key(query, tile_shape, cubin)}.kgebundle" if cache else None
    if path is not None and path.exists():
        return compiler.Bundle(path.read_text())
    bundle = _compile(query, tile_shape, cubin)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under another name, then renamed: a reader never
        # sees half a bundle.
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(bundle.text)
        partial.replace(path)
    return bundle


def query(text, name="query", dtypes=None):
    """Parses `text`, a query in GAMUT's declarative syntax, into a Query.
    `dtypes` maps array names to element types ("f32", "f64", "f16",
    "bf16", "i32", "i64"); by default the output's keys and the arrays only
    the join condition reads are i32, the others f32."""
    return Query(text, name=name, dtypes=dtypes)
