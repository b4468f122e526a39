"""PyTorch layers that run KGE's kernels: drop-in replacements for PyG's.

    conv = kge.nn.RGCNConv(64, 64, num_relations)      # PyG's arguments
    conv.load_state_dict(pyg_conv.state_dict())         # PyG's parameters
    out = conv(x, edge_index, edge_type)                 # PyG's call
    out.sum().backward()                                 # KGE's backward

The layer's forward and backward are graph functions (the forward traced
by kge.graph.layer, the backward derived by graph-differentiate) compiled
into GPU bundles: where the compiler is installed, on first use (then read
from the bundle cache, kge.cache); on a machine with the runtime
alone, from bundles compiled elsewhere (`bundles=`, see load_bundles).
Forward and backward run through torch.autograd, so any torch optimizer
trains the layer.
"""

import pathlib
import typing

import torch

from . import graph
from .errors import CompilerUnavailableError

#: The traced layers whose bundles RGCNConv and RGATConv run.
rgcn = graph.rgcn_layer
rgat = graph.rgat_layer


def load_bundles(directory, name="rgcn", variant=None):
    """The (forward, backward) bundle texts of a layer compiled elsewhere:
    `<name>[.<variant>].kgebundle` and `<name>_grad[.<variant>].kgebundle`
    in `directory` (test/gpu/build_graph_bundles.py writes them)."""
    suffix = f".{variant}" if variant else ""
    directory = pathlib.Path(directory)
    paths = [directory / f"{name}{suffix}.kgebundle", directory / f"{name}_grad{suffix}.kgebundle"]
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no bundle {path}: compile the layer where the KGE "
                                    "compiler is installed (test/gpu/build_graph_bundles.py)")
    return tuple(path.read_text() for path in paths)


_programs = {}


def _program(text, device):
    """The runtime's program of a bundle on a CUDA device (one per bundle
    and device, shared by every layer)."""
    from . import runtime
    key = (text, device)
    if key not in _programs:
        _programs[key] = runtime.Program(text, device)
    return _programs[key]


class _Layer(typing.NamedTuple):
    """How a layer's two bundles meet torch.autograd: the bundles'
    parameters in the order the layer passes them (`names`), the forward
    results it returns (`outputs`: the first differentiated, the others
    not), and the parameters whose gradient is the column sum of the
    output's (`column_sums`: a bias added to every row)."""
    names: tuple
    outputs: tuple = ("out",)
    column_sums: tuple = ()


class _LayerFunction(torch.autograd.Function):
    """A layer's forward bundle and its backward bundle (graph-differentiate's
    function: the forward's parameters and grad_out in, grad_<parameter>
    out) as one autograd function, on torch's current stream (ordered with
    the work that made the inputs and that reads the results; capturable
    in CUDA graphs)."""

    @staticmethod
    def forward(ctx, layer, programs, *tensors):
        forward, backward = programs
        results = forward(**dict(zip(layer.names, tensors)), stream=_stream(tensors[0]))
        ctx.save_for_backward(*tensors)
        ctx.layer, ctx.backward_program = layer, backward
        others = [results[name] for name in layer.outputs[1:]]
        ctx.mark_non_differentiable(*others)
        return (results[layer.outputs[0]], *others) if others else results[layer.outputs[0]]

    @staticmethod
    def backward(ctx, grad_out, *_):
        layer, tensors = ctx.layer, ctx.saved_tensors
        grads = ctx.backward_program(**dict(zip(layer.names, tensors)),
                                     grad_out=grad_out.contiguous(), stream=_stream(grad_out))
        needed = ctx.needs_input_grad[2:]
        return (None, None, *(
            None if not need
            else grad_out.sum(0) if name in layer.column_sums
            else grads.get(f"grad_{name}")
            for name, need in zip(layer.names, needed)))


def _stream(tensor):
    return torch.cuda.current_stream(tensor.device).cuda_stream


_RGCN = _Layer(("x", "weight", "root", "bias", "src", "dst", "edge_type", "norm"),
               column_sums=("bias",))
_RGAT = _Layer(("x", "weight", "query", "key", "src", "dst", "edge_type"),
               outputs=("out", "attention"))
_RGAT_UNFUSED = _Layer(("x", "weight", "attention_weight", "query", "key", "src", "dst",
                        "edge_type"), outputs=("out", "attention"))
_HGT = _Layer(("k", "q", "v", "k_rel", "v_rel", "src", "dst", "edge_type"))
#: Compact materialization's graph data (graph-compact-materialize's derived
#: parameters), after the graph's arrays.
_PAIRS = ("pair_src", "pair_type", "edge_pair")
_MATERIALIZE = ("vanilla", "compact", "auto")


def _check_materialize(name, materialize):
    if materialize not in _MATERIALIZE:
        raise ValueError(f"kge.nn.{name}: materialize is 'vanilla', 'compact' or 'auto', "
                         f"got {materialize!r}")


def _bundle_sets(name, bundles, materialize):
    """The given bundles by schedule: a (forward, backward) pair is the
    schedule `materialize`'s; a dict holds 'vanilla' and/or 'compact'."""
    if bundles is None:
        return {}
    if isinstance(bundles, dict):
        unknown = set(bundles) - {"vanilla", "compact"}
        if unknown:
            raise ValueError(f"kge.nn.{name}: bundles are keyed by 'vanilla' and "
                             f"'compact', got {', '.join(map(repr, sorted(unknown)))}")
        return dict(bundles)
    if materialize == "auto":
        raise ValueError(f"kge.nn.{name}: materialize='auto' picks the schedule per "
                         "graph: pass bundles={'vanilla': ..., 'compact': ...}")
    return {materialize: tuple(bundles)}


def _missing_bundles(name, schedule):
    return ValueError(f"kge.nn.{name}: no bundles of the '{schedule}' schedule were given "
                      "(bundles={'vanilla': ..., 'compact': ...})")


def _scheduled(layer, materialize):
    """`layer`'s names with compact materialization's graph data after
    them (materialize='compact')."""
    return layer._replace(names=layer.names + _PAIRS) if materialize == "compact" else layer


def _source_type_pairs(src, types, num_types):
    """kge.graph.source_type_pairs on the GPU: the distinct (source, type)
    pairs in (source, type) order and each edge's pair, int32."""
    pairs, edge_pair = torch.unique(src.long() * num_types + types.long(),
                                    return_inverse=True)
    i32 = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
    return i32(pairs // num_types), i32(pairs % num_types), i32(edge_pair)


class _RelationalConv(torch.nn.Module):
    """What KGE's relational layers share: their bundles (compiled from a
    traced layer on first use, or given), the graph's int32 arrays kept per
    graph, and the checks of their inputs."""

    #: The traced layer (kge.graph.Layer) whose bundles the layer runs.
    layer = None

    #: The model's name in kge.graph.COMPACT_FROM_EDGES (materialize='auto').
    _model = None

    def __init__(self, num_relations, bundles, matrix_math, materialize="vanilla"):
        super().__init__()
        name = type(self).__name__
        _check_materialize(name, materialize)
        if materialize == "auto" and self._model is None:
            raise ValueError(f"kge.nn.{name} has one schedule: materialize='auto' is for "
                             "the attention layers")
        self.num_relations = num_relations
        self.materialize = materialize
        self._given = bundles is not None
        self._bundles = _bundle_sets(name, bundles, materialize)
        self._matrix_math = matrix_math
        self._graph = None  # the graph's arrays, kept per graph (_structure)

    def _schedule(self, num_edges):
        """The schedule run on a graph of `num_edges` edges."""
        if self.materialize != "auto":
            return self.materialize
        return graph.preferred_materialization(self._model, num_edges)

    def _texts(self, schedule="vanilla"):
        name = type(self).__name__
        if schedule not in self._bundles:
            if self._given:
                raise _missing_bundles(name, schedule)
            try:
                layer = self._compiled_layer(schedule)
                self._bundles[schedule] = (
                    layer.compile(matrix_math=self._matrix_math),
                    layer.compile(matrix_math=self._matrix_math, backward=True))
            except CompilerUnavailableError as error:
                raise CompilerUnavailableError(
                    f"kge.nn.{name} compiles its kernels on first use, and the KGE "
                    "compiler is not installed here: pass bundles= (kge.nn.load_bundles) "
                    f"compiled where it is ({error})") from error
        return tuple(b.text if hasattr(b, "text") else b for b in self._bundles[schedule])

    def _programs(self, x, schedule="vanilla"):
        device = x.device.index if x.device.index is not None else torch.cuda.current_device()
        return tuple(_program(text, device) for text in self._texts(schedule))

    def _check(self, x, edge_index, edge_type, in_channels):
        name = type(self).__name__
        if not x.is_cuda:
            raise ValueError(f"kge.nn.{name} runs on CUDA tensors")
        if x.dim() != 2 or x.shape[1] != in_channels:
            raise ValueError(f"x must be [N, {in_channels}], got {list(x.shape)}")
        if x.dtype != torch.float32:
            raise TypeError(f"kge.nn.{name} computes in float32, got x of {x.dtype}")
        if edge_index.device != x.device or edge_type.device != x.device:
            raise ValueError(f"edge_index ({edge_index.device}) and edge_type "
                             f"({edge_type.device}) must be on x's device ({x.device})")

    def _edge_arrays(self, edge_index, edge_type):
        """Per-edge arrays of the layer computed once per graph: compact
        materialization's pairs (with materialize='compact')."""
        if self._schedule(edge_index.shape[1]) == "compact":
            return _source_type_pairs(edge_index[0], edge_type, self.num_relations)
        return ()

    def _compiled_layer(self, schedule):
        """The traced layer the bundles are compiled from, scheduled."""
        return self.layer.compacted() if schedule == "compact" else self.layer

    def _structure(self, edge_index, edge_type, num_nodes):
        """The graph's int32 arrays (and _edge_arrays), computed once per
        graph: kept while the same tensors (the same objects, unchanged
        since: their version counters) are passed with the same node count.
        The indices are checked then, so that a bad one is an IndexError
        here, never an access outside the kernels' arrays. (Edits through
        `.data` bypass the version counters: pass new tensors after
        those.)"""
        cached = self._graph
        if (cached is not None and cached["edge_index"] is edge_index
                and cached["edge_type"] is edge_type
                and cached["versions"] == (edge_index._version, edge_type._version)
                and cached["num_nodes"] == num_nodes):
            return cached["arrays"]
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must be [2, E], got {list(edge_index.shape)}")
        if edge_type.shape != (edge_index.shape[1],):
            raise ValueError(f"edge_type must hold one type per edge "
                             f"({edge_index.shape[1]}), got {list(edge_type.shape)}")
        if edge_index.dtype.is_floating_point or edge_type.dtype.is_floating_point:
            raise TypeError(f"edge_index and edge_type hold integers, got "
                            f"{edge_index.dtype} and {edge_type.dtype}")
        if edge_index.shape[1]:
            for name, values, bound in (("edge_index", edge_index, num_nodes),
                                        ("edge_type", edge_type, self.num_relations)):
                low, high = int(values.min()), int(values.max())
                if low < 0 or high >= bound:
                    raise IndexError(f"{name} holds {low if low < 0 else high}, outside "
                                     f"[0, {bound})")
        src = edge_index[0].to(torch.int32).contiguous()
        dst = edge_index[1].to(torch.int32).contiguous()
        types = edge_type.to(torch.int32).contiguous()
        # (The tensors themselves are kept: a new tensor never takes the
        # address, and so the key, of a freed one.)
        self._graph = {"edge_index": edge_index, "edge_type": edge_type,
                       "versions": (edge_index._version, edge_type._version),
                       "num_nodes": num_nodes,
                       "arrays": (src, dst, types) + self._edge_arrays(edge_index, edge_type)}
        return self._graph["arrays"]


def _composed(weight, basis_coefficients, num_blocks, num_relations, in_channels,
              out_channels):
    """The relations' matrices [R, in, out] of a relational layer: `weight`
    itself, composed from bases (`basis_coefficients` [R, B] times `weight`
    [B, in, out]) or from diagonal blocks (`weight` [R, blocks, in / blocks,
    out / blocks]), differentiably."""
    if basis_coefficients is not None:
        return (basis_coefficients @ weight.reshape(weight.shape[0], -1)).reshape(
            num_relations, in_channels, out_channels)
    if num_blocks is not None:
        # Block b maps inputs [b i, (b + 1) i) to outputs [b o, (b + 1) o).
        r, nb, i, o = weight.shape
        eye = torch.eye(nb, dtype=weight.dtype, device=weight.device)
        return torch.einsum("rbio,bc->rbico", weight, eye).reshape(r, nb * i, nb * o)
    return weight


class RGCNConv(_RelationalConv):
    """PyG's RGCNConv (Schlichtkrull et al.) on KGE's kernels:

        out[v] = sum_r sum_{u in N_v^r} norm x_u W_r + x_v W_0 + b

    with `norm` = 1 / |N_v^r| (aggr="mean", PyG's default) or 1
    (aggr="add"). Parameters as PyG names and shapes them, so that a PyG
    layer's state_dict loads: `weight` [R, in, out], or with `num_bases`
    the bases `weight` [B, in, out] and their coefficients `comp` [R, B]
    (W_r = sum_b comp[r, b] weight[b]), or with `num_blocks` the diagonal
    blocks `weight` [R, blocks, in / blocks, out / blocks]; `root` [in,
    out] (root_weight) and `bias` [out]. The decompositions are composed
    into the relations' matrices with torch (whose autograd takes their
    gradients back to the parameters) before KGE's kernels run.

    `bundles`: (forward, backward) bundle texts or kge.Bundle objects (see
    load_bundles) where the compiler is not installed; `matrix_math` the
    compiler's choice for the products (None: 3xTF32 for the typed layers).
    """

    def __init__(self, in_channels, out_channels, num_relations, num_bases=None,
                 num_blocks=None, aggr="mean", root_weight=True, bias=True, bundles=None,
                 matrix_math=None):
        super().__init__(num_relations, bundles, matrix_math)
        if num_bases is not None and num_blocks is not None:
            raise ValueError("give num_bases or num_blocks, not both")
        if num_blocks is not None and (in_channels % num_blocks or out_channels % num_blocks):
            raise ValueError(f"num_blocks ({num_blocks}) must divide in_channels "
                             f"({in_channels}) and out_channels ({out_channels})")
        if aggr not in ("mean", "add", "sum"):
            raise ValueError(f"aggr must be 'mean' or 'add', got {aggr!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.aggr = aggr
        self.num_bases, self.num_blocks = num_bases, num_blocks
        if num_bases is not None:
            self.weight = torch.nn.Parameter(torch.empty(num_bases, in_channels, out_channels))
            self.comp = torch.nn.Parameter(torch.empty(num_relations, num_bases))
        elif num_blocks is not None:
            self.weight = torch.nn.Parameter(torch.empty(
                num_relations, num_blocks, in_channels // num_blocks,
                out_channels // num_blocks))
            self.comp = None
        else:
            self.weight = torch.nn.Parameter(torch.empty(num_relations, in_channels,
                                                         out_channels))
            self.comp = None
        self.root = (torch.nn.Parameter(torch.empty(in_channels, out_channels))
                     if root_weight else None)
        self.bias = torch.nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.weight)
        if self.comp is not None:
            torch.nn.init.xavier_uniform_(self.comp)
        if self.root is not None:
            torch.nn.init.xavier_uniform_(self.root)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    layer = graph.rgcn_layer

    def _edge_arrays(self, edge_index, edge_type):
        if self.aggr == "mean":
            # 1 / |N_v^r|: the edges of each (destination, type) pair counted
            # (memory per edge, not per node and type).
            group = edge_index[1].long() * self.num_relations + edge_type.long()
            _, inverse, counts = torch.unique(group, return_inverse=True, return_counts=True)
            return ((1.0 / counts[inverse].float()).contiguous(),)
        return (torch.ones(edge_index.shape[1], device=edge_index.device),)

    def forward(self, x, edge_index, edge_type):
        self._check(x, edge_index, edge_type, self.in_channels)
        src, dst, types, norm = self._structure(edge_index, edge_type, x.shape[0])
        root = self.root if self.root is not None else x.new_zeros(self.in_channels,
                                                                   self.out_channels)
        bias = self.bias if self.bias is not None else x.new_zeros(self.out_channels)
        return _LayerFunction.apply(_RGCN, self._programs(x), x.contiguous(),
                                    self.relation_weights(), root, bias, src, dst, types, norm)

    def relation_weights(self):
        """The relations' matrices [R, in, out]: `weight` itself, or composed
        from the bases or the diagonal blocks (differentiably)."""
        return _composed(self.weight, self.comp if self.num_bases is not None else None,
                         self.num_blocks, self.num_relations, self.in_channels,
                         self.out_channels)

    def extra_repr(self):
        extra = "".join(f", {name}={getattr(self, name)}" for name in ("num_bases", "num_blocks")
                        if getattr(self, name) is not None)
        return (f"{self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations}{extra}, aggr={self.aggr!r}")


class RGATConv(_RelationalConv):
    """PyG's RGATConv (Busbridge et al.) on KGE's kernels, in its default
    configuration (one head, additive self-attention across relations):

        s_e = leaky_relu(x_dst W_r q + x_src W_r k),  e = (src -> dst) of type r
        alpha_e = softmax of s over the incoming edges of dst
        out[v] = sum_{e into v} alpha_e x_src W_r + b

    Parameters as PyG names and shapes them, so that a PyG layer's
    state_dict loads: `weight` [R, in, heads * out] (or with `num_bases`
    the bases `basis` [B, in, heads * out] and their coefficients `att` [R,
    B]; with `num_blocks` the diagonal blocks `weight` [R, blocks, in /
    blocks, heads * out / blocks]), `q` and `k` [heads * out, heads],
    `bias` [heads * out] (concat) or [out], and PyG's unused cardinality
    parameters (`w`, `l1`, `b1`, `l2`, `b2`). The attention's projections
    are composed with the relations' matrices with torch (W_r q and W_r k:
    Pigeon's linear-operator fusion, whose gradients torch takes back to
    the parameters) before KGE's kernels run: the scores are one column per
    edge and head, and no per-edge row of W_r x is stored for them. Each
    head runs the one-head bundles on its columns of W_r (its scores,
    softmax and messages); the heads' outputs are concatenated (`concat`)
    or averaged. `fuse_linear=False` runs the layer as PyG writes it
    (kge.graph.rgat_unfused: each edge's W_r x, then its product with q
    and k; the baseline of linear-operator fusion's effect).
    `materialize='compact'` runs the layer compacted by
    graph-compact-materialize (each message W_r x_src computed once per
    (source node, relation) pair, the pairs found once per graph);
    'vanilla' (the default) computes it in the aggregate's task per edge;
    'auto' picks per graph by its edge count
    (kge.graph.preferred_materialization: compact from 0.5M edges), with
    bundles={'vanilla': ..., 'compact': ...} when they are given.

    The other configurations (`dim` > 1, within-relation or
    multiplicative attention, `mod`, edge features, attention dropout while
    training) raise ValueError. `return_attention_weights=True` returns
    `(out, (edge_index, alpha))` as PyG's does (alpha [E, heads]).
    """

    _model = "rgat"

    def __init__(self, in_channels, out_channels, num_relations, num_bases=None,
                 num_blocks=None, mod=None, attention_mechanism="across-relation",
                 attention_mode="additive-self-attention", heads=1, dim=1, concat=True,
                 negative_slope=0.2, dropout=0.0, edge_dim=None, bias=True, bundles=None,
                 matrix_math=None, materialize="vanilla", fuse_linear=True):
        super().__init__(num_relations, bundles, matrix_math, materialize)
        if heads < 1:
            raise ValueError(f"heads must be positive, got {heads}")
        unsupported = {"dim": (dim, 1), "mod": (mod, None),
                       "attention_mechanism": (attention_mechanism, "across-relation"),
                       "attention_mode": (attention_mode, "additive-self-attention"),
                       "edge_dim": (edge_dim, None)}
        for name, (value, supported) in unsupported.items():
            if value != supported:
                raise ValueError(f"kge.nn.RGATConv computes {name}={supported!r} "
                                 f"(one head, additive attention across relations), "
                                 f"got {value!r}")
        if num_bases is not None and num_blocks is not None:
            raise ValueError("give num_bases or num_blocks, not both")
        if num_blocks is not None and in_channels % num_blocks:
            raise ValueError(f"num_blocks ({num_blocks}) must divide in_channels "
                             f"({in_channels})")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_bases, self.num_blocks = num_bases, num_blocks
        self.heads, self.dim, self.concat = heads, dim, concat
        self.negative_slope, self.dropout = float(negative_slope), float(dropout)
        self.fuse_linear = bool(fuse_linear)
        self.layer = (graph.rgat if self.fuse_linear else graph.rgat_unfused)(
            self.negative_slope)
        Parameter = torch.nn.Parameter
        width = heads * out_channels
        self.q = Parameter(torch.empty(width, heads))
        self.k = Parameter(torch.empty(width, heads))
        self.bias = (Parameter(torch.empty(width if concat else out_channels)) if bias
                     else None)
        if num_bases is not None:
            self.att = Parameter(torch.empty(num_relations, num_bases))
            self.basis = Parameter(torch.empty(num_bases, in_channels, width))
        elif num_blocks is not None:
            if width % num_blocks:
                raise ValueError(f"num_blocks ({num_blocks}) must divide heads * out_channels "
                                 f"({width})")
            self.weight = Parameter(torch.empty(num_relations, num_blocks,
                                                in_channels // num_blocks,
                                                width // num_blocks))
        else:
            self.weight = Parameter(torch.empty(num_relations, in_channels, width))
        # PyG's parameters of its cardinality-preserving variants (mod),
        # kept so that its state_dict loads; unused.
        self.w = Parameter(torch.ones(out_channels))
        self.l1 = Parameter(torch.empty(1, out_channels))
        self.b1 = Parameter(torch.empty(1, out_channels))
        self.l2 = Parameter(torch.empty(out_channels, out_channels))
        self.b2 = Parameter(torch.empty(1, out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        for name in ("weight", "basis", "att", "q", "k"):
            if hasattr(self, name):
                torch.nn.init.xavier_uniform_(getattr(self, name))
        for p in (self.l1, self.b1, self.l2, self.b2):
            torch.nn.init.zeros_(p)
        torch.nn.init.ones_(self.w)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def relation_weights(self):
        """The relations' matrices [R, in, heads * out] (composed from the
        bases or the diagonal blocks, differentiably)."""
        width = self.heads * self.out_channels
        if self.num_bases is not None:
            return _composed(self.basis, self.att, None, self.num_relations,
                             self.in_channels, width)
        return _composed(self.weight, None, self.num_blocks, self.num_relations,
                         self.in_channels, width)

    def forward(self, x, edge_index, edge_type, return_attention_weights=None):
        if self.training and self.dropout > 0:
            raise ValueError("kge.nn.RGATConv does not drop attention coefficients "
                             f"(dropout={self.dropout} while training)")
        self._check(x, edge_index, edge_type, self.in_channels)
        structure = self._structure(edge_index, edge_type, x.shape[0])
        schedule = self._schedule(edge_index.shape[1])
        weight = self.relation_weights()
        programs, x = self._programs(x, schedule), x.contiguous()
        if self.fuse_linear:
            # Linear-operator fusion: the scores' projections per relation
            # and head ([R, in, heads]).
            query, key = weight @ self.q, weight @ self.k
        else:
            # As PyG computes them: each edge's rows of W_r x (all heads'
            # columns), then their products with q and k.
            attention_weight = weight.contiguous()
        outs, alphas = [], []
        for h in range(self.heads):
            columns = slice(h * self.out_channels, (h + 1) * self.out_channels)
            messages = weight[:, :, columns].contiguous()
            if self.fuse_linear:
                scores = (query[:, :, h:h + 1].contiguous(), key[:, :, h:h + 1].contiguous())
                layer = _RGAT
            else:
                scores = (attention_weight, self.q[:, h:h + 1].contiguous(),
                          self.k[:, h:h + 1].contiguous())
                layer = _RGAT_UNFUSED
            out, alpha = _LayerFunction.apply(
                _scheduled(layer, schedule), programs, x, messages, *scores,
                *structure)
            outs.append(out)
            alphas.append(alpha)
        out = (outs[0] if self.heads == 1 else torch.cat(outs, 1) if self.concat
               else torch.stack(outs).mean(0))
        alpha = torch.cat(alphas, 1)
        if self.bias is not None:
            out = out + self.bias
        if isinstance(return_attention_weights, bool):
            return out, (edge_index, alpha)
        return out

    def extra_repr(self):
        extra = "".join(f", {name}={getattr(self, name)}" for name in ("num_bases", "num_blocks")
                        if getattr(self, name) is not None)
        return (f"{self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations}{extra}, heads={self.heads}")


class _DictLinear(torch.nn.Module):
    """PyG's HeteroDictLinear's parameters (a torch Linear per node type,
    `lins.<type>.weight` [out, in] and `.bias`)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lins = torch.nn.ModuleDict({t: torch.nn.Linear(c, out_channels)
                                         for t, c in in_channels.items()})

    def forward(self, x_dict):
        return {t: self.lins[t](x) for t, x in x_dict.items() if t in self.lins}


class _TypedMatrices(torch.nn.Module):
    """PyG's HeteroLinear's parameter without bias (`weight` [types, in,
    out])."""

    def __init__(self, types, in_channels, out_channels):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(types, in_channels, out_channels))
        torch.nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)


class HGTConv(torch.nn.Module):
    """PyG's HGTConv (Hu et al.) with one head on KGE's kernels:

        k, q, v = the node type's linear layer of x (kqv_lin)
        s_e = <k_src K_r, q_dst> p_r / sqrt(D),  e = (src, dst) of type r
        alpha_e = softmax of s over the incoming edges of dst
        h_v = sum_{e into v} alpha_e v_src V_r
        out_v = skip-gated out_lin[type](gelu(h_v)) (sigmoid(skip[type]) of
                it plus the rest of x_v, where the sizes agree)

    PyG's arguments (`in_channels` (an int or one per node type),
    `out_channels`, `metadata` = (node types, edge types)) and call
    (`forward(x_dict, edge_index_dict)` -> a dict of the destination node
    types' outputs), and PyG's parameters (`kqv_lin`, `out_lin`, `k_rel`,
    `v_rel`, `skip`, `p_rel`), so that a PyG layer's state_dict loads. The
    edge-level part (scores, softmax, messages: the memory's and time's
    bulk) runs KGE's bundles (kge.graph.hgt_layer, by default compacted by
    graph-compact-materialize: K_r and V_r applied once per (source node,
    edge type) pair, the pairs computed once per graph; with
    `materialize='vanilla'` once per edge, in the tasks that read them;
    'auto' picks per graph: compact from 1M edges, bundles={'vanilla':
    ..., 'compact': ...} when they are given)
    through torch.autograd, with p_r / sqrt(D) folded into K_r
    (linear-operator fusion), once per head on the head's
    D = out / heads columns; the per-node-type linear layers, GELU and the
    gated skip run in torch.
    """

    def __init__(self, in_channels, out_channels, metadata, heads=1, bundles=None,
                 matrix_math=None, materialize="compact"):
        super().__init__()
        _check_materialize("HGTConv", materialize)
        self.materialize = materialize
        if heads < 1 or out_channels % heads:
            raise ValueError(f"out_channels ({out_channels}) must be divisible by the number "
                             f"of heads (got {heads})")
        node_types, edge_types = metadata
        if not isinstance(in_channels, dict):
            in_channels = {t: in_channels for t in node_types}
        self.in_channels, self.out_channels, self.heads = in_channels, out_channels, heads
        self.node_types, self.edge_types = list(node_types), [tuple(e) for e in edge_types]
        self.edge_types_map = {e: i for i, e in enumerate(self.edge_types)}
        self.dst_node_types = {e[-1] for e in self.edge_types}
        self.kqv_lin = _DictLinear(in_channels, out_channels * 3)
        self.out_lin = _DictLinear({t: out_channels for t in self.node_types}, out_channels)
        dim = out_channels // heads
        # One matrix per head and edge type: head h's of type r is h T + r.
        self.k_rel = _TypedMatrices(heads * len(self.edge_types), dim, dim)
        self.v_rel = _TypedMatrices(heads * len(self.edge_types), dim, dim)
        self.skip = torch.nn.ParameterDict({t: torch.nn.Parameter(torch.ones(1))
                                            for t in self.node_types})
        self.p_rel = torch.nn.ParameterDict({"__".join(e): torch.nn.Parameter(
            torch.ones(1, heads)) for e in self.edge_types})
        self._given = bundles is not None
        self._bundles = _bundle_sets("HGTConv", bundles, materialize)
        self._matrix_math = matrix_math
        self._graph = None

    def _schedule(self, num_edges):
        """The schedule run on a graph of `num_edges` edges."""
        if self.materialize != "auto":
            return self.materialize
        return graph.preferred_materialization("hgt", num_edges)

    def _programs(self, device, schedule):
        if schedule not in self._bundles:
            if self._given:
                raise _missing_bundles("HGTConv", schedule)
            try:
                layer = graph.hgt_compact_layer if schedule == "compact" else graph.hgt_layer
                self._bundles[schedule] = (
                    layer.compile(matrix_math=self._matrix_math),
                    layer.compile(matrix_math=self._matrix_math, backward=True))
            except CompilerUnavailableError as error:
                raise CompilerUnavailableError(
                    "kge.nn.HGTConv compiles its kernels on first use, and the KGE "
                    "compiler is not installed here: pass bundles= (kge.nn.load_bundles) "
                    f"compiled where it is ({error})") from error
        index = device.index if device.index is not None else torch.cuda.current_device()
        return tuple(_program(b.text if hasattr(b, "text") else b, index)
                     for b in self._bundles[schedule])

    def _structure(self, edge_index_dict, offsets, sizes):
        """The graph's int32 arrays over all nodes (the node types' rows in
        x_dict's order) with its edges' types, kept per graph (the same
        tensors, unchanged); the indices checked against their node types'
        sizes first."""
        key = [(e, t, t._version) for e, t in edge_index_dict.items()]
        cached = self._graph
        if (cached is not None and len(cached["key"]) == len(key)
                and all(a[0] == b[0] and a[1] is b[1] and a[2] == b[2]
                        for a, b in zip(cached["key"], key))
                and cached["offsets"] == offsets):
            return cached["arrays"]
        srcs, dsts, types, bounds, names = [], [], [], [], []
        for edge_type, edge_index in edge_index_dict.items():
            edge_type = tuple(edge_type)
            if edge_type not in self.edge_types_map:
                raise ValueError(f"edge type {edge_type} is not in the layer's metadata")
            source, _, target = edge_type
            for node_type in (source, target):
                if node_type not in offsets:
                    raise ValueError(f"edge type {edge_type} needs features of node type "
                                     f"'{node_type}' in x_dict")
            if edge_index.dim() != 2 or edge_index.shape[0] != 2:
                raise ValueError(f"edge_index of {edge_type} must be [2, E], got "
                                 f"{list(edge_index.shape)}")
            if edge_index.dtype.is_floating_point:
                raise TypeError(f"edge_index of {edge_type} holds integers, got "
                                f"{edge_index.dtype}")
            srcs.append(edge_index[0] + offsets[source])
            dsts.append(edge_index[1] + offsets[target])
            types.append(torch.full_like(edge_index[0], self.edge_types_map[edge_type]))
            bounds.append((sizes[source], sizes[target], edge_index.shape[1]))
            names.append(edge_type)
        if srcs:
            # Every index against its node type's count at once.
            local = torch.cat([e.long() for e in edge_index_dict.values()], 1)
            counts = torch.tensor([c for _, _, c in bounds], device=local.device)
            bound = torch.stack([torch.repeat_interleave(
                torch.tensor([b[side] for b in bounds], device=local.device), counts)
                for side in (0, 1)])
            bad = (local < 0) | (local >= bound)
            if bool(bad.any()):  # (one synchronization per graph)
                row, at = (int(i) for i in bad.nonzero()[0])
                ends = torch.tensor([e.shape[1] for e in edge_index_dict.values()]).cumsum(0)
                which = int((ends <= at).sum())
                edge_type = names[which]
                raise IndexError(
                    f"edge_index of {edge_type} holds {int(local[row, at])} in row {row}, "
                    f"outside [0, {int(bound[row, at])}) ('{edge_type[2 * row]}' nodes)")
        device = next(iter(edge_index_dict.values())).device
        src = torch.cat(srcs).long() if srcs else torch.zeros(0, dtype=torch.long,
                                                                device=device)
        dst = torch.cat(dsts) if dsts else src
        types = torch.cat(types) if types else src
        i32 = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
        arrays = (i32(src), i32(dst), i32(types))
        if self._schedule(len(src)) == "compact":
            # Compact materialization's graph data: the distinct (source
            # node, edge type) pairs, each edge's pair.
            arrays += _source_type_pairs(src, types, len(self.edge_types))
        self._graph = {"key": key, "offsets": offsets, "arrays": arrays}
        return arrays

    def forward(self, x_dict, edge_index_dict):
        F = self.out_channels
        for node_type, x in x_dict.items():
            if node_type not in self.in_channels:
                raise ValueError(f"node type '{node_type}' is not in the layer's metadata")
            if not x.is_cuda:
                raise ValueError("kge.nn.HGTConv runs on CUDA tensors")
            if x.dim() != 2 or x.shape[1] != self.in_channels[node_type]:
                raise ValueError(f"x_dict['{node_type}'] must be [N, "
                                 f"{self.in_channels[node_type]}], got {list(x.shape)}")
            if x.dtype != torch.float32:
                raise TypeError(f"kge.nn.HGTConv computes in float32, got x_dict"
                                f"['{node_type}'] of {x.dtype}")
        kqv = self.kqv_lin(x_dict)
        offsets, sizes, total = {}, {}, 0
        for node_type, x in x_dict.items():
            offsets[node_type], sizes[node_type] = total, x.shape[0]
            total += x.shape[0]
        k, q, v = (torch.cat([kqv[t][:, i * F:(i + 1) * F] for t in x_dict]).contiguous()
                   for i in range(3))
        structure = self._structure(edge_index_dict, offsets, sizes)
        schedule = self._schedule(structure[0].shape[0])
        # p_r / sqrt(D) folded into K_r (linear-operator fusion), per head.
        H, D, T = self.heads, F // self.heads, len(self.edge_types)
        p = torch.cat([self.p_rel["__".join(e)].reshape(1, H) for e in self.edge_types])
        programs, heads = self._programs(q.device, schedule), []
        for head in range(H):
            columns = slice(head * D, (head + 1) * D)
            types_of_head = slice(head * T, (head + 1) * T)
            k_rel = (self.k_rel.weight[types_of_head] *
                     (p[:, head] / D ** 0.5)[:, None, None]).contiguous()
            heads.append(_LayerFunction.apply(
                _scheduled(_HGT, schedule), programs, k[:, columns].contiguous(),
                q[:, columns].contiguous(), v[:, columns].contiguous(), k_rel,
                self.v_rel.weight[types_of_head].contiguous(), *structure))
        h = heads[0] if H == 1 else torch.cat(heads, 1)
        out_dict = {}
        for node_type, x in x_dict.items():
            if node_type not in self.dst_node_types:
                continue
            rows = h[offsets[node_type]:offsets[node_type] + x.shape[0]]
            out = self.out_lin.lins[node_type](torch.nn.functional.gelu(rows))
            if out.shape[-1] == x.shape[-1]:
                alpha = self.skip[node_type].sigmoid()
                out = alpha * out + (1 - alpha) * x
            out_dict[node_type] = out
        return out_dict

    def extra_repr(self):
        return f"-1, {self.out_channels}, heads={self.heads}"


__all__ = ["HGTConv", "RGATConv", "RGCNConv", "load_bundles", "rgat", "rgcn"]
