"""The compiler's IR API (the kge._compiler extension): contexts, modules,
locations, the bvec types, attributes, values, functions, a builder with one
method per bvec operation, the pass manager and the targets.

    from kge import ir
    ctx = ir.Context()
    b = ir.Builder(ctx)
    module = b.create_module()
    table, index = ir.Type.table(ctx, [None, None]), ir.Type.indices(ctx)
    f = b.create_function(module, "distmult",
                          [("E", table), ("R", table), ("h", index), ("r", index), ("t", index)])
    E, R, h, r, t = f.arguments
    b.ret([b.vec_mul_vec(b.mul(b.gather_vec(E, h), b.gather_vec(R, r)), b.gather_vec(E, t))])
    ir.PassManager(ctx).add("kge-lower-to-gpu")

Graph functions (the `graph` dialect) are built by a GraphBuilder, one
method per graph operation:

    g = ir.GraphBuilder(ctx)
    module = g.create_module()
    rows, types = ir.Type.tensor(ctx, [None, None]), ir.Type.tensor(ctx, [None], "i32")
    f = g.create_function(module, "rgcn", [
        ("x", rows), ("weight", ir.Type.tensor(ctx, [None, None, None])), ("root", rows),
        ("src", types), ("dst", types), ("edge_type", types),
        ("norm", ir.Type.tensor(ctx, [None]))])
    x, w, root, src, dst, etype, norm = f.arguments
    graph = g.coo(src, dst, etype, nodes_of=x)
    messages = g.typed_linear(graph, x, w, rows="src", by="etype")
    g.ret([g.add(g.aggregate(graph, messages, weights=norm, to="dst"), g.linear(x, root))])
"""

from .errors import CompilerUnavailableError

try:
    from ._compiler import (Attribute, Builder, Context, CpuFunction, Function, GraphBuilder,
                            GraphFunction, Location, MLIRError, Module, PassManager, Type, Value,
                            parse_gamut, signature, to_bundle, to_ptx)
except ImportError as error:  # pragma: no cover - exercised on machines without MLIR
    raise CompilerUnavailableError(
        "the KGE compiler extension (kge._compiler) is not available: build KGE with "
        "scripts/setup.sh or `pip install .`; running bundles needs only kge.runtime "
        f"({error})") from error

__all__ = ["Attribute", "Builder", "Context", "CpuFunction", "Function", "GraphBuilder",
           "GraphFunction", "Location", "MLIRError", "Module", "PassManager", "Type", "Value",
           "parse_gamut", "signature", "to_bundle", "to_ptx"]
