"""KGE: a compiler for graph-learning kernels on GPUs.

Write a score function as Python over symbolic tables and index arrays, and
KGE traces it into its `bvec` dialect, runs it on the CPU (MLIR's
ExecutionEngine) or compiles it into a fused GPU kernel bundle::

    import kge
    from kge import Table, Indices

    @kge.function
    def transe(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
        return kge.norm(Eemb[h] + Remb[r] - Eemb[t], p=2)

    scores = transe.run_cpu(Eemb=E, Remb=R, h=h, r=r, t=t)   # NumPy
    bundle = transe.compile(sizes={"D_Eemb": 512})           # PTX + manifest
    program = bundle.load()                                  # on a GPU
    scores = program(Eemb=E_cuda, Remb=R_cuda, h=h_cuda, r=r_cuda, t=t_cuda)

Modules:
  kge.ir        the compiler's IR API (contexts, modules, types, builder,
                pass manager; like Triton's libtriton.ir)
  kge.frontend  the tracing front end (kge.function, Table, Indices, ops)
  kge.compiler  compilation to CPU functions and GPU bundles
  kge.runtime   running bundles on a GPU (works without the compiler)
  kge.tile      matmul-like tasks (GAMUT's queries) on the `tile` dialect
  kge.graph     relational GNN layers (the `graph` dialect): graphs, references,
                the decorator front end kge.graph.layer, backward functions
  kge.nn        PyTorch layers on KGE's kernels (RGCNConv, a drop-in for PyG's;
                needs torch and the runtime)
  kge.autotune  timing compiled variants on the GPU, choices kept on disk
                (works without the compiler)
  kge.autograd  a score function's forward and gradient bundles as a PyTorch
                operator (torch.autograd, torch.library); needs torch and the
                runtime
  kge.training  training KGE models on the GPU (negative sampling, losses,
                row-sparse Adagrad/Adam, filtered MRR, checkpoints); the
                `kge-train` command
"""

from .errors import CompilerUnavailableError, MLIRError, TraceError
from .frontend import (Indices, ScoreFunction, Table, abs, cos, dot, exp, function, log, max,
                       maximum, mean, min, minimum, norm, outer, sigmoid, sin, sqrt, sum, tanh)
from .compiler import Bundle

__all__ = [
    "Bundle", "CompilerUnavailableError", "Indices", "MLIRError", "ScoreFunction", "Table",
    "TraceError", "abs", "cos", "dot", "exp", "function", "log", "max", "maximum", "mean", "min",
    "minimum", "norm", "outer", "sigmoid", "sin", "sqrt", "sum", "tanh",
]

__version__ = "0.1.0"
