"""Compilation of bvec modules: to a CPU function (MLIR ExecutionEngine)
and to GPU kernel bundles (PTX + JSON manifest, docs/BundleFormat.md)."""

import json
import pathlib

_LAYOUT_OPTIONS = {"tile": "tile", "warps": "warps", "vector_width": "vector-width",
                   "reorder_key": "reorder-key", "reorder_group": "reorder-group",
                   "stage_repeats": "stage-repeats", "matrix_math": "matrix-math",
                   "carry_floats": "carry-floats", "blocks_per_sm": "blocks-per-sm",
                   "deterministic": "deterministic", "reorder_min_batch": "reorder-min-batch",
                   "reorder_min_reuse": "reorder-min-reuse",
                   "reorder_min_row": "reorder-min-row",
                   "fuse_matrix_products": "fuse-matrix-products"}


def _ir():
    from . import ir
    return ir


def _check_negatives(negative, shared_negatives):
    for name, value in (("negative", negative), ("shared_negatives", shared_negatives)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"{name} must name an index array, got {value!r}")
    if negative and shared_negatives:
        raise ValueError("negative (K corruptions per edge) and shared_negatives (N negatives "
                         "shared by every edge) are two modes: give one")


def gpu_pipeline(negative=None, sizes=None, *, shared_negatives=None, **layout):
    """The textual pass pipeline that lowers bvec functions to kernels:
    optional `bvec-specialize` (static `sizes`, e.g. {"D_Eemb": 512}) and
    `kge-lower-to-gpu` with negative-sampling mode and layout options
    (tile, warps, vector_width, reorder_key, reorder_group, stage_repeats,
    matrix_math, carry_floats, blocks_per_sm, deterministic: a bool,
    reorder_min_batch, reorder_min_reuse, reorder_min_row,
    fuse_matrix_products: a bool,
    keeping matrix products per edge in the fused kernel instead of tile's
    segment iterators). `shared_negatives` names the
    index array of N negatives that every edge is scored against (a
    [B, N] result, through a tile task: convert-bvec-to-tile)."""
    _check_negatives(negative, shared_negatives)
    passes = []
    if sizes:
        for symbol, value in sizes.items():
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"size {symbol} must be a positive integer, got {value!r}")
        passes.append("bvec-specialize{sizes=" + ",".join(f"{k}={v}" for k, v in sizes.items()) + "}")
    options = []
    if negative:
        options.append(f"negative={negative}")
    if shared_negatives:
        options.append(f"shared-negatives={shared_negatives}")
    for name, value in layout.items():
        if name not in _LAYOUT_OPTIONS:
            raise TypeError(f"unknown layout option '{name}' (expected one of "
                            f"{', '.join(sorted(_LAYOUT_OPTIONS))})")
        if isinstance(value, bool):
            value = int(value)
        if value is not None:
            options.append(f"{_LAYOUT_OPTIONS[name]}={value}")
    passes.append("kge-lower-to-gpu" + ("{" + " ".join(options) + "}" if options else ""))
    return ",".join(passes)


def lower_to_gpu(module, negative=None, sizes=None, *, shared_negatives=None, **layout):
    """A copy of `module` lowered to gpu/nvvm by KGE's GPU pipeline."""
    ir = _ir()
    lowered = module.clone()
    pm = ir.PassManager(module.context)
    pm.add(gpu_pipeline(negative, sizes, shared_negatives=shared_negatives, **layout))
    pm.run(lowered)
    return lowered


def compile_bundle(module, negative=None, sizes=None, cubin=True, *, shared_negatives=None,
                   cache=True, **layout):
    """The kernel bundle of the only bvec.func of `module`: compiled once,
    then read from the bundle cache (kge.cache; `cache=False` compiles
    every time)."""
    from . import cache as bundle_cache
    ir = _ir()
    pipeline = gpu_pipeline(negative, sizes, shared_negatives=shared_negatives, **layout)

    def build():
        lowered = lower_to_gpu(module, negative, sizes, shared_negatives=shared_negatives,
                               **layout)
        return Bundle(ir.to_bundle(lowered, cubin))

    payload = {"bvec": str(module), "pipeline": pipeline, "cubin": cubin}
    return bundle_cache.cached(payload, build, cache, cubin=cubin)


def against_shared_negatives(module, shared_negatives):
    """A copy of `module` whose bvec functions score every edge against
    each entry of the index array `shared_negatives` (convert-bvec-to-tile):
    tile functions whose output (the function's result name) is [B, N]."""
    _check_negatives(None, shared_negatives)
    ir = _ir()
    converted = module.clone()
    pm = ir.PassManager(module.context)
    pm.add("convert-bvec-to-tile{shared-negatives=" + shared_negatives + "}")
    pm.run(converted)
    return converted


def matrix_products_through_tile(module):
    """A copy of `module` whose bvec functions that reduce one matrix
    product per edge (TransR, RESCAL) are tile functions
    (convert-bvec-to-tile{matrices}, as kge-lower-to-gpu lowers them by
    default): each edge's vector times its relation's matrix through the
    segment iterators, the reduction a reduce output. Other functions stay
    as they are."""
    ir = _ir()
    converted = module.clone()
    pm = ir.PassManager(module.context)
    pm.add("convert-bvec-to-tile{matrices}")
    pm.run(converted)
    return converted


def differentiate(module, functions=None, wrt=None, factor_matrices=False):
    """A copy of `module` with the gradient function `<f>_grad` of each bvec
    function `f` (all, or those named in `functions`) added by the
    `bvec-differentiate` pass: `<f>_grad` takes f's arguments and one
    per-edge seed `d_<result>` per result, and returns the row-sparse
    gradient `d_<table>_<indices>` of every (table, index array) pair that
    f gathers through (the tables in `wrt`, or all tables of floats): row b
    is the gradient of the row table[indices[b]], to be summed into that
    row by the caller. With `factor_matrices`, a table of matrices'
    gradient is the factors of its outer products instead,
    `d_<table>_<indices>_u<n>` and `_v<n>` (kge.autograd.OUTER_SUM sums
    them per matrix)."""
    for name, names in (("functions", functions), ("wrt", wrt)):
        if names is None:
            continue
        if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
            raise TypeError(f"{name} must be a list of names, got {names!r}")
    options = []
    if functions:
        options.append("functions=" + ",".join(functions))
    if wrt:
        options.append("wrt=" + ",".join(wrt))
    if factor_matrices:
        options.append("factor-matrices")
    ir = _ir()
    converted = module.clone()
    pm = ir.PassManager(module.context)
    pm.add("bvec-differentiate" + ("{" + " ".join(options) + "}" if options else ""))
    pm.run(converted)
    return converted


def gradient_module(module, function, wrt=None, factor_matrices=False):
    """A module holding only the gradient function `<function>_grad` of the
    bvec function `function` of `module` (differentiate), ready for
    compile_bundle or compile_cpu."""
    ir = _ir()
    differentiated = differentiate(module, [function], wrt, factor_matrices)
    name = function + "_grad"
    for f in differentiated.functions:
        if f.name == name:
            return ir.Module.parse(module.context, str(f))
    raise ValueError(f"no gradient function {name} was derived")  # pragma: no cover


def lower_text(text, pipeline):
    """The module `text`, parsed in a new context and run through the
    textual pass pipeline `pipeline`."""
    ir = _ir()
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add(pipeline)
    pm.run(module)
    return module


def compile_cpu(module, function=""):
    """The bvec.func `function` of `module` compiled for the host CPU: call
    it with a dict of NumPy arrays, get a dict of NumPy results."""
    return _ir().CpuFunction.compile(module, function)


class Bundle:
    """A kernel bundle: JSON text with PTX (and cubin) of one fused kernel,
    its parameters and its launch plan. Needs no compiler to load."""

    def __init__(self, text):
        self.text = text
        self.manifest = json.loads(text)

    @classmethod
    def read(cls, path):
        return cls(pathlib.Path(path).read_text())

    def save(self, path):
        pathlib.Path(path).write_text(self.text)
        return path

    @property
    def name(self):
        return self.manifest["function"]["name"]

    @property
    def params(self):
        return self.manifest["function"]["params"]

    @property
    def ptx(self):
        return "\n".join(m["ptx"] for m in self.manifest["modules"])

    def validate(self):
        """Checks the bundle with the runtime's validator; returns its
        signature (needs only the kge_runtime module)."""
        from . import runtime
        return runtime.validate_bundle(self.text)

    def load(self, device=None):
        """A kge_runtime.Program running this bundle on CUDA device `device`
        (default: PyTorch's current one, else 0)."""
        if device is None:
            from .autograd import current_device
            device = current_device()
        from . import runtime
        return runtime.Program(self.text, device)

    def __repr__(self):
        mode = self.manifest["mode"]["kind"]
        return f"<kge.Bundle {self.name} ({mode}, {len(self.text)} bytes)>"
