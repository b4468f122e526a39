//===- TileIteratorOps.td - tile operations ----------------*- tablegen -*-===//
//
// `tile.task`, a matrix-multiplication-like task (GAMUT), and the
// terminator of its regions.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATOROPS_TD
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATOROPS_TD

include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "Dialect/TileIterator/IR/TileIteratorDialect.td"

class TileIterator_Op<string mnemonic, list<Trait> traits = []>
    : Op<TileIterator_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def TileIterator_Combiner : I32EnumAttr<"Combiner",
    "how values are combined: along the reduction axis or into a group", [
      I32EnumAttrCase<"add", 0>,
      I32EnumAttrCase<"mul", 1>,
      I32EnumAttrCase<"max", 2>,
      I32EnumAttrCase<"min", 3>,
      I32EnumAttrCase<"custom", 4>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

def TileIterator_OutputKind : I32EnumAttr<"OutputKind",
    "the output operator of a matmul-like task", [
      I32EnumAttrCase<"dense", 0>,
      I32EnumAttrCase<"aggregate", 1>,
      I32EnumAttrCase<"select", 2>,
      I32EnumAttrCase<"top_k", 3>,
      I32EnumAttrCase<"distinct", 4>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

//===----------------------------------------------------------------------===//
// tile.task
//===----------------------------------------------------------------------===//

def TileIterator_TaskOp : TileIterator_Op<"task", [
    AttrSizedOperandSegments, IsolatedFromAbove,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>
  ]> {
  let summary = "a matrix-multiplication-like task (GAMUT)";
  let description = [{
    Computes, for every pair `(i, j)` of the spatial axes,

    ```
    if when(i, j):                                   // join (optional)
      acc = identity
      for k: acc = combine(acc, inner(inputs at (i, j, k)))
      v = project(acc, i, j)                         // optional
      output v at (i, j)                             // the output operator
    ```

    **Inputs** (`ins`) are memrefs of rank 1 or 2 (3 with a gathered
    dimension, below) whose `indexing_maps`
    (one per input, over `(i, j, k)`) give GAMUT's operand kinds: one
    spatial and the reduction axis (`(i, k)`, `(k, j)`, `(k, i)`, ...),
    only the reduction axis (`(k)`), or only one spatial axis (`(i)`,
    `(j)`). Every axis must index some input (or, for `i` and `j`, the dense
    output), which is how its extent is known.

    **Gathered dimensions** (`gathers(...)` with the attribute `gathered`,
    one `[input, dimension]` pair per gather): a gather is an index array
    (rank 1, i32 or i64) whose length is the extent of the spatial axis
    (`i` or `j`) that the input's indexing map selects at that dimension;
    the input is read there at `gather[i]` (or `gather[j]`) instead of at
    the axis itself, so the dimension is a table of any size (rows gathered
    by an index array, a matrix chosen per row by a key). An input with a
    gathered dimension may be indexed by both spatial axes, e.g.
    `W[r[i], k, j]` (`(i, k, j)`, dimension 0 gathered by `r`): row `i`
    multiplies the matrix of its key. The reduction axis is never gathered.
    Gather values must lie in `[0, size of the dimension)`; the CPU and GPU
    runtimes check them before running (the GPU's checked mode).

    **Regions** (each ends with `tile.yield`):
    - `inner` (required): one scalar argument per input (its element type);
      yields the value that is accumulated, of the *accumulator type*.
    - `combine`: only with `accumulate custom`: two accumulator values in,
      their combination out. The task must also carry `identity` (the
      combination's neutral element) and `associative` (the author's
      declaration that the combination is associative and commutative,
      which tiling the reduction relies on).
    - `when` (join): arguments `i`, `j` (index) and one scalar per
      *spatial-only* input (inputs not indexed by `k`, in order); yields an
      `i1`. Pairs it rejects are skipped before any reduction: they produce
      no output (a dense output keeps its previous contents there).
    - `project`: the accumulator, `i`, `j` and the spatial-only scalars;
      yields the output value (any type). Without it the output value is
      the accumulator.
    - `predicate`: the output value, the accumulator, `i`, `j` and the
      spatial-only scalars; yields an `i1`. Required by `select`, optional for `distinct` and
      `top_k` (pairs it rejects are not candidates).

    **Accumulators** (`accumulate`): `add`, `mul`, `max`, `min` (their
    identities are 0, 1, -inf / the smallest integer, +inf / the largest
    integer) or `custom`.

    **Output operators** (`output`) and their `outs`:
    - `dense`: one memref `C` with `C[i, j] = v`; `output_map` (default
      `(i, j, k) -> (i, j)`) may transpose it to `(j, i)`. With `update`,
      `C[i, j] = combine(C[i, j], v)` with the accumulator's combination
      (`linalg.matmul`'s `C += A B`); `v` then has the accumulator type.
    - `aggregate`: `keys(%rowKeys, %colKeys)` (integer memrefs indexed by
      `i` and `j`) and one memref `C` of groups: `C[rowKeys[i],
      colKeys[j]] = aggregate(C[...], v)` with the `aggregate` combiner
      (`add` by default, `max` or `min`). `C` is read: initialize it.
    - `select`: `rows`, `cols` (integer memrefs of one capacity), `values`
      and `count` (`memref<1xi64>`): the pairs whose `predicate` holds, in
      an unspecified order; `count` receives their total number, which may
      exceed the capacity (then only `capacity` of them are stored).
    - `top_k`: `values`, `rows`, `cols` of static length `k` (attribute):
      the `k` largest output values (`smallest` for the smallest), best
      first, ties broken by smaller `(i, j)`; NaN values are not
      candidates. Slots beyond the number of candidates hold row and
      column -1.
    - `distinct`: `values` and `count`: each distinct output value once, in
      an unspecified order; `count` receives their number, which exceeds
      the capacity when they do not fit.

    Example: GAMUT's query 1 (a threshold inside the inner computation):

    ```mlir
    tile.task ins(%S, %W, %thres : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
        outs(%N : memref<?x?xf32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>,
              affine_map<(i, j, k) -> (i)>]
        accumulate add output dense
        inner {
        ^bb0(%s: f32, %w: f32, %t: f32):
          %p = arith.mulf %s, %w : f32
          %above = arith.cmpf ogt, %p, %t : f32
          %d = arith.subf %p, %t : f32
          %zero = arith.constant 0.0 : f32
          %extra = arith.select %above, %d, %zero : f32
          %v = arith.addf %p, %extra : f32
          tile.yield %v : f32
        }
    ```

    Example: each edge's head row times its relation's matrix (TransR's
    projection), rows gathered from the entity table by `h` and matrices
    chosen by `r`:

    ```mlir
    tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>)
        outs(%Y : memref<?x?xf32>)
        gathers(%h, %r : memref<?xi32>, memref<?xi32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>]
        accumulate add output dense {gathered = [[0, 0], [1, 0]]}
        inner {
        ^bb0(%e: f32, %w: f32):
          %v = arith.mulf %e, %w : f32
          tile.yield %v : f32
        }
    ```

    Example: GAMUT's query 2 (people's preference aggregated by zip code):

    ```mlir
    tile.task ins(%P, %R : memref<?x?xf32>, memref<?x?xf32>)
        keys(%Pzip, %Rzip : memref<?xi32>, memref<?xi32>)
        outs(%C : memref<?x?xf32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
        accumulate add output aggregate
        inner {
        ^bb0(%p: f32, %r: f32):
          %v = arith.mulf %p, %r : f32
          tile.yield %v : f32
        }
    ```
  }];
  let arguments = (ins
    Variadic<AnyMemRef>:$inputs,
    Variadic<AnyMemRef>:$keys,
    Variadic<AnyMemRef>:$outputs,
    Variadic<AnyMemRef>:$gathers,
    AffineMapArrayAttr:$indexing_maps,
    TileIterator_Combiner:$accumulate,
    TileIterator_OutputKind:$output,
    OptionalAttr<TypedAttrInterface>:$identity,
    UnitAttr:$associative,
    OptionalAttr<TileIterator_Combiner>:$aggregate,
    OptionalAttr<I64Attr>:$k,
    UnitAttr:$smallest,
    OptionalAttr<AffineMapAttr>:$output_map,
    UnitAttr:$update,
    OptionalAttr<ArrayAttr>:$gathered
  );
  let regions = (region
    AnyRegion:$when,
    SizedRegion<1>:$inner,
    AnyRegion:$combine,
    AnyRegion:$project,
    AnyRegion:$predicate
  );
  // The syntax of the declarative format
  //   ins(...) (keys(...))? outs(...) (gathers(...))? maps [...]
  //   accumulate K output O
  //   attr-dict (when R)? inner R (combine R)? (project R)? (predicate R)?
  // written by hand (TileIteratorAsm.cpp) so that parsed regions are owned
  // by the OperationState.
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The three axes of every task, in the order of the indexing maps.
    enum Axis : unsigned { I = 0, J = 1, K = 2 };

    /// Whether input `index` is indexed by `axis`.
    bool inputUses(unsigned index, Axis axis);
    /// The inputs not indexed by the reduction axis, in order (their
    /// scalars are the trailing arguments of `when`, `project` and
    /// `predicate`).
    SmallVector<unsigned> spatialOnlyInputs();
    /// The type of the accumulator (what `inner` yields).
    Type getAccumulatorType();
    /// The type of the output value (what `project` yields, or the
    /// accumulator).
    Type getValueType();
    /// The map of the dense output (default `(i, j, k) -> (i, j)`).
    AffineMap getDenseOutputMap();
    /// The combiner of an aggregate output (`add` unless given).
    Combiner getAggregateCombiner();
    /// Where the extent of `axis` is read: (operand, dimension) of an input,
    /// a gather or the dense output.
    std::pair<Value, unsigned> getExtentSource(Axis axis);
    /// The gather that indexes dimension `dim` of input `input`, or null.
    Value getGather(unsigned input, unsigned dim);
    /// Whether dimension `dim` of input `input` is read through a gather.
    bool isGathered(unsigned input, unsigned dim) {
      return static_cast<bool>(getGather(input, dim));
    }
  }];
}

//===----------------------------------------------------------------------===//
// tile.yield
//===----------------------------------------------------------------------===//

def TileIterator_YieldOp : TileIterator_Op<"yield", [
    Pure, Terminator, HasParent<"TaskOp">
  ]> {
  let summary = "ends a region of a task with its value";
  let description = [{
    The terminator of the regions of `tile.task`: yields the region's one
    value (the inner value, a combination, a projection or a predicate).

    Example:

    ```mlir
    tile.yield %v : f32
    ```
  }];
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATOROPS_TD
