//===- TileIteratorOps.td - tile operations ----------------*- tablegen -*-===//
//
// `tile.task`, a matrix-multiplication-like task (GAMUT), the terminator of
// its regions, and its schedule: the kernels of the GPU lowering as tile
// iterators (`tile.kernel`, `tile.load`, `tile.mma`, `tile.compute`,
// `tile.store`).
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
include "Dialect/TileIterator/IR/TileIteratorTypes.td"

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
      I32EnumAttrCase<"reduce", 5>,
      I32EnumAttrCase<"per_key", 6>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

def TileIterator_LoadKind : I32EnumAttr<"LoadKind",
    "which elements a load iterator reads", [
      I32EnumAttrCase<"dense", 0>,
      I32EnumAttrCase<"gathered", 1>,
      I32EnumAttrCase<"per_key", 2>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

def TileIterator_LoadPath : I32EnumAttr<"LoadPath",
    "how a load iterator brings a block's tile to the threads", [
      I32EnumAttrCase<"registers", 0>,
      I32EnumAttrCase<"shared", 1>,
      I32EnumAttrCase<"async", 2>,
      I32EnumAttrCase<"tma", 3>,
      I32EnumAttrCase<"threads", 4>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

def TileIterator_Precision : I32EnumAttr<"Precision",
    "the operand precision of tensor-core products (f32 accumulation)", [
      I32EnumAttrCase<"f16", 0>,
      I32EnumAttrCase<"bf16", 1>,
      I32EnumAttrCase<"tf32", 2>,
      I32EnumAttrCase<"tf32x3", 3>,
    ]> {
  let cppNamespace = "::mlir::tile";
}

def TileIterator_StoreKind : I32EnumAttr<"StoreKind",
    "the store iterator of an output operator", [
      I32EnumAttrCase<"dense", 0>,
      I32EnumAttrCase<"update", 1>,
      I32EnumAttrCase<"staged", 2>,
      I32EnumAttrCase<"scatter", 3>,
      I32EnumAttrCase<"compact", 4>,
      I32EnumAttrCase<"top_k", 5>,
      I32EnumAttrCase<"distinct", 6>,
      I32EnumAttrCase<"reduce", 7>,
      I32EnumAttrCase<"per_key", 8>,
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
    by an index array, a matrix chosen per row by a key). A task with
    `output per_key` may also gather along `k` (the gather's length is the
    extent of `k`): `X[src[k], i]`, an edge's source row read at reduction
    step `k`. An input with a
    gathered dimension may be indexed by both spatial axes, e.g.
    `W[r[i], k, j]` (`(i, k, j)`, dimension 0 gathered by `r`): row `i`
    multiplies the matrix of its key (an input indexed by `i`, `j` and
    `k` is a *matrix per key*; at most one per task). An input indexed by
    both spatial axes but not by `k` (one of them gathered) is a *pair
    operand*: a spatial-only input read at every pair, e.g. `R[r[i], j]`,
    a row of a table chosen per row and read along `j` (an epilogue's
    bias, the vector a projected row is compared with). Other tasks never
    gather the reduction axis.
    Gather values must lie in `[0, size of the dimension)`; the CPU and GPU
    runtimes check them before running (the GPU's checked mode).
    An input may carry trailing dimensions of size 1 past those its map
    selects, read at 0: a per-row scalar `[M, 1]` indexed `(i)`, a matrix
    per key of one column `[T, K, 1]` read as rows `(r[i], k)`. Such a task
    runs on CUDA cores.

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
    - `finalize`: only with `output reduce`: a row's reduced value and
      `i`; yields what is stored for the row (e.g. the square root of a
      sum of squares). Without it the reduced value is stored.
    - `predicate`: the output value, the accumulator, `i`, `j` and the
      spatial-only scalars; yields an `i1`. Required by `select`, optional for `distinct` and
      `top_k` (pairs it rejects are not candidates).
    - `schedule` (written by `tile-schedule`, or by hand): the `tile.kernel`s
      that compute the task on the GPU, in the order the launch plan
      considers them (see `tile.kernel`). It does not change what the task
      computes; the CPU lowering ignores it.

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
      With row keys alone (`keys(%rowKeys)`), the group's column is `j`:
      `C[rowKeys[i], j]` (a scatter of whole rows, as a graph's messages
      summed into their destination nodes).
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
    - `reduce`: one memref `S` of rank 1 (or `[M, 1]`, column 0) indexed
      by `i`: `S[i] =
      finalize(v(i, 0) + v(i, 1) + ... + v(i, N - 1))`, the output values of
      row `i` combined along `j` by the `aggregate` combiner (`add` by
      default, `max` or `min`; its identity for an empty row or one whose
      pairs `when` all rejects). The values of a row combine in a fixed
      order (the result is deterministic). This is a row's norm,
      distance or inner product after a matrix product: TransR's and
      RESCAL's scores, an attention logit `a . (W[r] x)`.
    - `per_key`: `keys(%kKeys)` (an integer memref indexed by `k`) and one
      memref `C` of rank 3, a matrix per key: `C[key, i, j] =
      combine(C[key, i, j], reduction of inner(i, j, k) over the k with
      kKeys[k] = key)` with the accumulator's combination (`add`, `max` or
      `min`). The reduction is split into groups by a key of its steps: a
      segment matrix multiplication with segments along `k`, as the
      gradient of a typed linear layer, `dW[r] = sum over the edges e of
      type r of x[src[e]]^T g[dst[e]]`. `C` is read: initialize it. No
      `project` or `when`.

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

    Example: TransR's score, `|| (E[h] - E[t]) W[r] + R[r] ||_2` per edge:
    the projection of the difference of two gathered rows by the matrix of
    the edge's relation, the relation's row added at every `j` (a pair
    operand), squares summed along `j` and the root taken per row:

    ```mlir
    tile.task ins(%E, %E, %W, %R : memref<?x?xf32>, memref<?x?xf32>,
                  memref<?x?x?xf32>, memref<?x?xf32>)
        outs(%S : memref<?xf32>)
        gathers(%h, %t, %r, %r : memref<?xi32>, memref<?xi32>,
                memref<?xi32>, memref<?xi32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
              affine_map<(i, j, k) -> (i, k, j)>, affine_map<(i, j, k) -> (i, j)>]
        accumulate add output reduce
        {gathered = [[0, 0], [1, 0], [2, 0], [3, 0]]}
        inner {
        ^bb0(%eh: f32, %et: f32, %w: f32, %rel: f32):
          %d = arith.subf %eh, %et : f32
          %v = arith.mulf %d, %w : f32
          tile.yield %v : f32
        }
        project {
        ^bb0(%acc: f32, %i: index, %j: index, %rel: f32):
          %x = arith.addf %acc, %rel : f32
          %sq = arith.mulf %x, %x : f32
          tile.yield %sq : f32
        }
        finalize {
        ^bb0(%sum: f32, %i: index):
          %norm = math.sqrt %sum : f32
          tile.yield %norm : f32
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

    Example: the weight gradient of a typed linear layer over a graph's
    edges, `dW[etype[e]] += norm[e] x[src[e]]^T g[dst[e]]` (the rows of `x`
    and `g` gathered along `k`, the edges):

    ```mlir
    tile.task ins(%x, %g, %norm : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
        keys(%etype : memref<?xi32>) outs(%dW : memref<?x?x?xf32>)
        gathers(%src, %dst : memref<?xi32>, memref<?xi32>)
        maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>,
              affine_map<(i, j, k) -> (k)>]
        accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
        inner {
        ^bb0(%a: f32, %b: f32, %w: f32):
          %p = arith.mulf %a, %b : f32
          %v = arith.mulf %p, %w : f32
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
    AnyRegion:$predicate,
    AnyRegion:$schedule,
    AnyRegion:$finalize
  );
  // The syntax of the declarative format
  //   ins(...) (keys(...))? outs(...) (gathers(...))? maps [...]
  //   accumulate K output O
  //   attr-dict (when R)? inner R (combine R)? (project R)? (finalize R)?
  //   (predicate R)? (schedule R)?   -- the schedule's tile.yield not printed
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
    /// The combiner of an aggregate or reduce output (`add` unless
    /// given).
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
    /// The input indexed by both spatial axes and the reduction axis (a
    /// matrix per row's or column's key, one spatial axis gathered), if
    /// any.
    std::optional<unsigned> getPerKeyInput();
    /// The kernels of the schedule, in order (none when unscheduled).
    SmallVector<KernelOp> getKernels();
  private:
    /// Checks the schedule region against the task (from verifyRegions).
    LogicalResult verifySchedule();
  public:
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
    The schedule region ends with a `tile.yield` without a value, which is
    not printed.

    Example:

    ```mlir
    tile.yield %v : f32
    ```
  }];
  let arguments = (ins Optional<AnyType>:$value);
  let assemblyFormat = "($value^ `:` type($value))? attr-dict";
}

//===----------------------------------------------------------------------===//
// The schedule: tile.kernel and its iterators
//===----------------------------------------------------------------------===//

def TileIterator_KernelOp : TileIterator_Op<"kernel", [
    HasParent<"TaskOp">, SingleBlock, NoTerminator
  ]> {
  let summary = "one GPU kernel of a task's schedule: its tiling and iterators";
  let description = [{
    A kernel that computes the whole task: a grid of thread blocks, each
    computing `block-m x block-n` pairs `(i, j)` (`block [m, n, k]`)
    while stepping along the reduction `block-k` at a time. On CUDA cores
    each thread owns `thread-m x thread-n` pairs (`thread [m, n]`); on
    tensor cores (`tile.mma`) each warp owns `8 thread-m x 4 thread-n`
    pairs as
    16 x 8 products, and the load iterators keep `stages` tiles in flight.
    `cluster_m` (warpgroup MMA only) groups blocks along M into a cluster
    that shares the B tile by TMA multicast.

    The body lists, in order: one `tile.load` per input of the task, the
    compute step (`tile.mma` or `tile.compute`) over the loaded tiles, and
    one `tile.store` of its accumulators. A block whose kernel has a load
    of kind `per_key` (an input with a matrix per row's key) runs over a
    *segment*: `block-m` rows of one key, the rows sorted by the key.
    A kernel whose store is `per_key` (a task with `output per_key`) runs
    over *segments of the reduction*: each block takes one tile of at most
    512 steps of `k` of one key (the steps sorted by the key) and one
    `block-m x block-n` tile of that key's matrix; on tensor cores
    (mma.sync, not warpgroup MMA) its operands must be stored along `i`
    or `j`, since each step's row is read through the sorted order.

    A segment kernel marked `long_runs` takes the tiles of `block-m` rows
    cut from the runs of at least that many rows of one key (each key's
    matrix then read once per `block-m` rows instead of once per tile of
    the other segment kernel); it runs together with the next segment
    kernel of its kind, which takes the rest of every run.

    A kernel marked `split_k` (CUDA cores, a dense output with `update`
    and accumulate add, max or min) splits the reduction: block `(x, y,
    z)` takes steps `[64 block-k x, 64 block-k (x + 1))` of `k` and
    combines its partial results into the output by atomics. It serves
    reductions much longer than the output is wide (`x^T y` over a graph's
    nodes), whose other kernels have too few blocks to fill the GPU.

    A schedule lists its kernels from the most preferred; the launch plan
    runs, among the kernels of one kind (tensor cores or not), the first
    whose grid gives every multiprocessor a block and whose reduction is
    at least `min_k` long (the last one otherwise); tensor-core kernels run
    when every operand's rows are whole 16-byte chunks, the CUDA-core one
    otherwise. `suffix` is appended to the function's name to name the
    kernel.

    Example: GEMM on tensor cores at FP32 accuracy, then the CUDA-core
    kernel for operands whose rows are not 16-byte aligned:

    ```mlir
    tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
      %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
      %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
      %acc = tile.mma %a, %b tf32x3
          : !tile.tile<128x16xf32>, !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
      tile.store %acc staged : !tile.tile<128x128xf32>
    }
    tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
      %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
      %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
      %acc = tile.compute %a, %b
          : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
      tile.store %acc dense : !tile.tile<64x64xf32>
    }
    ```
  }];
  let arguments = (ins
    StrAttr:$suffix,
    DenseI64ArrayAttr:$block_shape,
    DenseI64ArrayAttr:$thread_shape,
    OptionalAttr<I64Attr>:$stages,
    OptionalAttr<I64Attr>:$cluster_m,
    OptionalAttr<I64Attr>:$min_k,
    UnitAttr:$long_runs,
    UnitAttr:$split_k
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $suffix `block` $block_shape `thread` $thread_shape (`stages` $stages^)?
    (`cluster_m` $cluster_m^)? (`min_k` $min_k^)? (`long_runs` $long_runs^)?
    (`split_k` $split_k^)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getBlockM() { return getBlockShape()[0]; }
    int64_t getBlockN() { return getBlockShape()[1]; }
    int64_t getBlockK() { return getBlockShape()[2]; }
    int64_t getThreadM() { return getThreadShape()[0]; }
    int64_t getThreadN() { return getThreadShape()[1]; }
    /// The compute step: a tile.mma or a tile.compute (null if missing).
    Operation *getComputeStep();
    /// The load of input `n` (null if missing).
    LoadOp getLoadOf(unsigned n);
    /// Whether the kernel runs over segments (a load of kind per_key).
    bool runsSegments();
    /// Whether the kernel runs over segments of the reduction (a store of
    /// kind per_key).
    bool runsReductionSegments();
  }];
}

class TileIterator_IteratorOp<string mnemonic, list<Trait> traits = []>
    : TileIterator_Op<mnemonic, !listconcat(traits, [HasParent<"KernelOp">])>;

def TileIterator_LoadOp : TileIterator_IteratorOp<"load", [Pure]> {
  let summary = "a load iterator: a block's tile of one input";
  let description = [{
    Brings the block's tile of input `input` of the task to its threads, a
    reduction step at a time for inputs indexed by `k`.

    `kind` says which elements: `dense` (the input at the block's
    coordinates), `gathered` (a dimension read through the task's index
    array for it: rows of a table picked by a batch), `per_key` (the matrix
    of the block's key, for an input indexed by both spatial axes). With
    `sorted`, the block's rows are positions in the rows sorted by the
    key (segments): row `perm[p]` at position `p`; in a kernel of
    segments of the reduction, its steps of `k` likewise.

    With `transposed` (warpgroup MMA at tf32, whose operands must be
    k-major in shared memory: an operand stored with `k` as its outer
    dimension), the launch plan first writes a transposed copy of the input
    (k innermost) to a scratch buffer and the iterator loads that copy; the
    result's dimensions still follow the input's map.

    `via` says the path: `registers` (inputs not indexed by `k`: each
    thread reads its pairs' elements from global memory), `shared` (CUDA
    cores: the block's threads stage the tile in shared memory, each then
    reads its runs as vectors), `async` (mma.sync: cp.async copies of
    16-byte chunks into swizzled pipeline stages, read by ldmatrix), `tma`
    (warpgroup MMA: a producer warp's TMA copies under mbarriers),
    `threads` (warpgroup MMA: a producer warpgroup's threads read 16-byte
    chunks along `k` — rows gathered through index arrays — compute the
    product form's factors and write them into the swizzled stages that
    `wgmma` reads, under mbarriers; every operand stored k-contiguous).

    The result's dimensions follow the input's indexing map (a `per_key`
    input's key dimension dropped), each the block's extent along its axis.

    Example:

    ```mlir
    %e = tile.load input 0 gathered sorted via async : !tile.tile<16x16xf32>
    %w = tile.load input 1 per_key via async : !tile.tile<16x128xf32>
    %b = tile.load input 1 dense transposed via tma : !tile.tile<32x256xf32>
    %t = tile.load input 2 gathered via threads : !tile.tile<256x32xf32>
    ```
  }];
  let arguments = (ins
    I64Attr:$input,
    TileIterator_LoadKind:$kind,
    UnitAttr:$sorted,
    UnitAttr:$transposed,
    TileIterator_LoadPath:$via
  );
  let results = (outs TileIterator_TileType:$result);
  let assemblyFormat = [{
    `input` $input $kind (`sorted` $sorted^)? (`transposed` $transposed^)?
    `via` $via attr-dict `:` qualified(type($result))
  }];
}

def TileIterator_MmaOp : TileIterator_IteratorOp<"mma", [Pure, AttrSizedOperandSegments]> {
  let summary = "the compute step on tensor cores";
  let description = [{
    Multiplies the block's tiles of the task's row operands (`lhs`: its
    inputs indexed by `(i, k)`, in the order of the task's inputs) by those
    of its column operands (`rhs`: indexed by `(k, j)`, in the layout of
    their maps, or a matrix per row's key) on tensor cores at `precision`
    (`f16`, `bf16`: 16-bit operands; `tf32`: f32 operands rounded to TF32;
    `tf32x3`: f32 operands split into two TF32 parts, three products a
    step summed from zero and added to the running sum in FP32,
    FP32-accurate),
    accumulating in f32 along the whole reduction. With `warpgroup`,
    warpgroups of the block issue `wgmma` (sm_90a) on operands in shared
    memory; otherwise warps issue `mma.sync` (sm_80).

    The task's inner computation must be a product form: a sum of terms
    `a(rows) * b(columns)`, each factor an expression of one side's
    operands alone, accumulated by `add` in f32 (plain GEMM: one term, one
    operand a side). Each term is one product per tensor-core step; the
    warps compute its factors from their fragments of the loaded tiles
    before the product (DistMult's `(h * r) . t`: `lhs` holds the tiles of
    `h` and `r`; ComplEx's four products of real and imaginary parts make
    two terms, one per part of the tail). Warpgroup MMA whose operands are
    loaded `via tma` takes plain products only; loaded `via threads`, the
    producer threads compute each term's factors into a stage of their
    own (a term a stage, at most three terms), so that `wgmma` multiplies
    them as loaded.

    Example:

    ```mlir
    %acc = tile.mma %a x %b bf16 warpgroup
        : !tile.tile<128x64xbf16> x !tile.tile<256x64xbf16> -> !tile.tile<128x256xf32>
    %hrt = tile.mma %h, %r x %t tf32
        : !tile.tile<128x16xf32>, !tile.tile<128x16xf32> x !tile.tile<128x16xf32>
          -> !tile.tile<128x128xf32>
    %hrt2 = tile.mma %h2, %r2 x %t2 tf32 warpgroup
        : !tile.tile<128x32xf32>, !tile.tile<128x32xf32> x !tile.tile<256x32xf32>
          -> !tile.tile<128x256xf32>
    ```
  }];
  let arguments = (ins
    Variadic<TileIterator_TileType>:$lhs,
    Variadic<TileIterator_TileType>:$rhs,
    TileIterator_Precision:$precision,
    UnitAttr:$warpgroup
  );
  let results = (outs TileIterator_TileType:$result);
  let assemblyFormat = [{
    $lhs `x` $rhs $precision (`warpgroup` $warpgroup^)? attr-dict `:`
    qualified(type($lhs)) `x` qualified(type($rhs)) `->` qualified(type($result))
  }];
}

def TileIterator_ComputeOp : TileIterator_IteratorOp<"compute", [Pure]> {
  let summary = "the compute step on CUDA cores: the inner computation";
  let description = [{
    Runs the task's `inner` computation on every pair of the block and
    reduction step and combines it into the accumulators with the task's
    accumulator (skipping the pairs the join rejects), on CUDA cores, from
    the loaded tiles of all inputs in the order of the task's inputs.

    Example:

    ```mlir
    %acc = tile.compute %s, %w, %t
        : !tile.tile<64x16xf32>, !tile.tile<16x64xf32>, !tile.tile<64xf32>
          -> !tile.tile<64x64xf32>
    ```
  }];
  let arguments = (ins Variadic<TileIterator_TileType>:$operands);
  let results = (outs TileIterator_TileType:$result);
  let assemblyFormat = [{
    $operands attr-dict `:` qualified(type($operands)) `->` qualified(type($result))
  }];
}

def TileIterator_StoreOp : TileIterator_IteratorOp<"store"> {
  let summary = "a store iterator: the output operator on the accumulators";
  let description = [{
    Applies the task's projection to the block's accumulators (with the
    tiles of its spatial-only inputs, `with`, in the order of those inputs)
    and hands the values to the output operator's store iterator:

    - `dense`: each thread stores its pairs; `update` combines them into
      the output first;
    - `staged` (tensor cores, f32 values at every pair of an `(i, j)`
      output): the block's values pass through the freed pipeline stages in
      shared memory and leave as 16-byte row vectors;
    - `scatter` (aggregate): atomics into the groups of the task's keys;
    - `compact` (select): the block counts its selected pairs, reserves
      their slots with one global atomic and writes them;
    - `top_k`: the block sorts its candidates in shared memory and merges
      its best into one of several shards of k best, each under its own
      lock; a merge kernel then takes the k best of all shards;
    - `distinct`: values inserted into a hash set in global memory, each
      new one written once.
    - `reduce`: each thread combines the values of its pairs per row, the
      block combines its threads' partial values of a row in a fixed order
      and writes one partial value per row and column tile to scratch
      memory; a second kernel combines a row's partial values in column
      order and applies `finalize`.
    - `per_key`: atomics into the block's tile of its key's matrix (one
      per pair and block: the block's steps of `k` are combined first).

    Example:

    ```mlir
    tile.store %acc dense with %t : !tile.tile<64x64xf32>, !tile.tile<64xf32>
    ```
  }];
  let arguments = (ins
    TileIterator_TileType:$acc,
    Variadic<TileIterator_TileType>:$spatial,
    TileIterator_StoreKind:$kind
  );
  let assemblyFormat = [{
    $acc $kind (`with` $spatial^)? attr-dict `:` qualified(type($acc))
    (`,` qualified(type($spatial))^)?
  }];
}

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATOROPS_TD
