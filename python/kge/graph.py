"""The `graph` dialect from Python: heterogeneous graphs of the shapes
relational GNNs are measured on, the real WordNet graph, RGCN's
normalization and NumPy references of the layers, compilation of graph
functions for the CPU, and a decorator front end (`layer`) that traces a
layer written in Python into a graph function.

    from kge import graph
    g = graph.synthetic("aifb", seed=0)          # Pigeon's Table 4 shape
    norm = graph.rgcn_norm(g.dst, g.etype, g.num_nodes, g.num_edge_types)
    fn = graph.compile_cpu(open("examples/graph/rgcn.mlir").read(), "rgcn")
    out = fn({"x": x, "weight": w, "root": root, "bias": b, "src": g.src,
              "dst": g.dst, "edge_type": g.etype, "norm": norm})["out"]
"""

import dataclasses
import pathlib

import re

import numpy as np

from . import cache as _cache

from .errors import TraceError  # noqa: F401 - raised for layers the dialect cannot express

# Pigeon's Table 4 (DGL's and OGB's default preprocessing, inverse edges
# added): node types, edge types, nodes, edges.
SHAPES = {
    "aifb": (7, 104, 7_262, 48_810),
    "mutag": (5, 50, 27_160, 148_100),
    "bgs": (27, 122, 94_810, 672_900),
    "am": (7, 108, 1_885_000, 5_669_000),
    "mag": (4, 4, 1_940_000, 21_110_000),
    "wikikg2": (1, 535, 2_501_000, 16_110_000),
    "fb15k": (1, 474, 14_540, 620_200),
    "biokg": (5, 51, 93_770, 4_763_000),
}

# Power-law skews of the synthetic graphs: endpoints drawn with probability
# proportional to rank^-NODE_EXPONENT (a few hubs, a long tail of nodes of
# degree one or zero), edge and node types Zipf with TYPE_EXPONENT.
NODE_EXPONENT, TYPE_EXPONENT = 0.8, 1.1

WORDNET = pathlib.Path("/usr/share/wordnet")
# WordNet's parts of speech, the node types of its graph (satellite
# adjectives are adjectives).
PARTS_OF_SPEECH = ("n", "v", "a", "r")


@dataclasses.dataclass
class HeteroGraph:
    """A heterogeneous graph in COO form: edge e runs from src[e] to
    dst[e] with type etype[e]; node v has type ntype[v]."""
    src: np.ndarray
    dst: np.ndarray
    etype: np.ndarray
    ntype: np.ndarray
    num_edge_types: int
    num_node_types: int
    edge_type_names: tuple = ()

    @property
    def num_nodes(self):
        return len(self.ntype)

    @property
    def num_edges(self):
        return len(self.src)


def zipf_probabilities(n, exponent=1.1):
    """Probabilities proportional to rank^-exponent over n items."""
    p = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return p / p.sum()


def power_law_endpoints(rng, nodes, edges, exponent):
    """(src, dst) of `edges` edges whose endpoints are drawn with
    probability proportional to rank^-exponent over `nodes` nodes, ids
    shuffled (hubs are not the first rows)."""
    p = zipf_probabilities(nodes, exponent)
    ids = rng.permutation(nodes)
    return ids[rng.choice(nodes, edges, p=p)], ids[rng.choice(nodes, edges, p=p)]


def synthetic(name, seed=0, scale=1.0, index_dtype=np.int32):
    """A graph of the shape of Pigeon's dataset `name` (SHAPES), nodes and
    edges scaled by `scale`: node types of Zipf-distributed sizes, edge
    types Zipf-distributed, endpoints drawn from a power law over the nodes
    (ids shuffled, so hubs are not the first rows)."""
    node_types, edge_types, nodes, edges = SHAPES[name]
    nodes = max(node_types, int(round(nodes * scale)))
    edges = max(1, int(round(edges * scale)))
    rng = np.random.default_rng(seed)
    ntype = rng.choice(node_types, nodes, p=zipf_probabilities(node_types, TYPE_EXPONENT))
    src, dst = power_law_endpoints(rng, nodes, edges, NODE_EXPONENT)
    etype = rng.choice(edge_types, edges, p=zipf_probabilities(edge_types, TYPE_EXPONENT))
    return HeteroGraph(src.astype(index_dtype), dst.astype(index_dtype),
                       etype.astype(np.int32), ntype.astype(np.int32), edge_types,
                       node_types)


def relation_typed(g, seed=0):
    """`g` with each edge type joining one node type to one node type (as
    in real heterogeneous graphs: a relation's schema), for HGT's inputs
    per node type and per (source type, relation, destination type): each
    relation r gets a source type and a destination type drawn by the node
    types' sizes, and an edge's endpoints are moved into those types' nodes
    (node v of type t is the (v mod |t|)-th node of type t), keeping the
    endpoints' skew."""
    rng = np.random.default_rng(seed)
    sizes = np.bincount(g.ntype, minlength=g.num_node_types).astype(np.float64)
    types = rng.choice(g.num_node_types, (g.num_edge_types, 2), p=sizes / sizes.sum())
    members = [np.flatnonzero(g.ntype == t) for t in range(g.num_node_types)]

    def moved(ends, side):
        out = np.empty_like(ends)
        wanted = types[g.etype, side]
        for t, nodes in enumerate(members):
            mask = wanted == t
            out[mask] = nodes[ends[mask].astype(np.int64) % max(1, len(nodes))]
        return out

    return HeteroGraph(moved(g.src, 0), moved(g.dst, 1), g.etype, g.ntype, g.num_edge_types,
                       g.num_node_types, g.edge_type_names)


def wordnet(root=WORDNET, relations=None, index_dtype=np.int32):
    """WordNet 3.0 (Debian's wordnet-base) as a heterogeneous graph: every
    synset a node typed by its part of speech (PARTS_OF_SPEECH), every
    pointer between synsets an edge typed by its pointer symbol (all of
    them, or those of `relations`), duplicates removed."""
    ids = {}
    edges = []
    symbols = {}

    def node(pos, offset):
        pos = "a" if pos == "s" else pos
        return ids.setdefault((pos, offset), len(ids))

    for part in ("noun", "verb", "adj", "adv"):
        for line in (pathlib.Path(root) / f"data.{part}").open(encoding="latin-1"):
            if line.startswith("  "):
                continue  # the license header
            fields = line.split(" | ")[0].split()
            head = node(fields[2], fields[0])
            at = 4 + 2 * int(fields[3], 16)
            for p in range(int(fields[at])):
                symbol, target, target_pos, _ = fields[at + 1 + 4 * p: at + 5 + 4 * p]
                if relations is not None and symbol not in relations:
                    continue
                kind = symbols.setdefault(symbol, len(symbols))
                edges.append((head, kind, node(target_pos, target)))
    edges = np.unique(np.array(edges, dtype=np.int64), axis=0)
    ntype = np.empty(len(ids), dtype=np.int32)
    for (pos, _), v in ids.items():
        ntype[v] = PARTS_OF_SPEECH.index(pos)
    names = tuple(sorted(symbols, key=symbols.get))
    return HeteroGraph(edges[:, 0].astype(index_dtype), edges[:, 2].astype(index_dtype),
                       edges[:, 1].astype(np.int32), ntype, len(names),
                       len(PARTS_OF_SPEECH), names)


def corner_case_graph():
    """The smallest graph with a relational layer's corner cases: six nodes
    (4 and 5 isolated, 1 with a self-loop), four edges of types 0 and 2 of
    four (types 1 and 3 have no edges)."""
    return HeteroGraph(src=np.array([0, 1, 1, 3], np.int32), dst=np.array([1, 1, 2, 1], np.int32),
                       etype=np.array([0, 0, 2, 2], np.int32), ntype=np.zeros(6, np.int32),
                       num_edge_types=4, num_node_types=1)


def rgat_inputs(g, features, outputs, seed):
    """Random arguments of one RGAT layer (rgat_layer) on graph `g`:
    features, relation matrices scaled by 1 / sqrt(features), the attention
    vectors q and k ([outputs, 1]) composed into `query` = W_r q and `key`
    = W_r k, and the graph's arrays, as NumPy arrays by parameter (plus
    `q` and `k` themselves)."""
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal((g.num_edge_types, features, outputs)) /
              np.sqrt(features)).astype(np.float32)
    q = (rng.standard_normal((outputs, 1)) / np.sqrt(outputs)).astype(np.float32)
    k = (rng.standard_normal((outputs, 1)) / np.sqrt(outputs)).astype(np.float32)
    return {
        "x": rng.standard_normal((g.num_nodes, features)).astype(np.float32),
        "weight": weight,
        "query": np.einsum("tko,oh->tkh", weight, q).astype(np.float32),
        "key": np.einsum("tko,oh->tkh", weight, k).astype(np.float32),
        "src": g.src, "dst": g.dst, "edge_type": g.etype, "q": q, "k": k,
    }


def _rgat_forward(x, weight, query, key, src, dst, etype, slope):
    """rgat_reference's float64 values: (scores, attention, messages, out)."""
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    query, key = query.astype(np.float64)[:, :, 0], key.astype(np.float64)[:, :, 0]
    scores = (x[dst] * query[etype]).sum(1) + (x[src] * key[etype]).sum(1)
    attention = _softmax_by(np.where(scores > 0, scores, slope * scores), dst, len(x))
    messages = _typed_rows(x[src], weight, etype)
    out = np.zeros((len(x), weight.shape[2]))
    np.add.at(out, dst, attention[:, None] * messages)
    return scores, attention, messages, out


def rgat_reference(x, weight, query, key, src, dst, etype, slope=0.2):
    """One RGAT layer (PyG's RGATConv: one head, additive self-attention
    across relations, no bias) in float64, with `query` = W_r q and `key` =
    W_r k ([T, K, 1]): out[v] = sum_{e into v} alpha_e x_src W_r, alpha the
    softmax over v's incoming edges of leaky_relu(x_dst W_r q + x_src W_r k)."""
    return _rgat_forward(x, weight, query, key, src, dst, etype, slope)[3]


def rgat_gradients_reference(x, weight, query, key, src, dst, etype, grad_out, slope=0.2):
    """The gradients of rgat_reference's output with respect to x, weight,
    query and key given the output's gradient, in float64: a dict by
    grad_x, grad_weight, grad_query, grad_key."""
    scores, attention, messages, _ = _rgat_forward(x, weight, query, key, src, dst, etype,
                                                   slope)
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    q, k = query.astype(np.float64)[:, :, 0], key.astype(np.float64)[:, :, 0]
    grad_x, grad_weight, ds = _attended_messages_backward(
        attention, messages, x, weight, src, dst, etype, grad_out.astype(np.float64), len(x))
    # Through the leaky ReLU to the scores.
    ds = ds * np.where(scores > 0, 1.0, slope)
    np.add.at(grad_x, dst, ds[:, None] * q[etype])
    np.add.at(grad_x, src, ds[:, None] * k[etype])
    grad_query, grad_key = np.zeros_like(q), np.zeros_like(k)
    np.add.at(grad_query, etype, ds[:, None] * x[dst])
    np.add.at(grad_key, etype, ds[:, None] * x[src])
    return {"grad_x": grad_x, "grad_weight": grad_weight,
            "grad_query": grad_query[:, :, None], "grad_key": grad_key[:, :, None]}


def hgt_inputs(g, features, seed):
    """Random arguments of HGT's attention and messages
    (examples/graph/hgt.mlir) on graph `g`: the nodes' projections k, q, v
    ([nodes, features]) and the relations' matrices k_rel, v_rel scaled by 1
    / sqrt(features), and the graph's arrays, as NumPy arrays by
    parameter."""
    rng = np.random.default_rng(seed)
    rows = lambda: rng.standard_normal((g.num_nodes, features)).astype(np.float32)  # noqa: E731
    rel = lambda: (rng.standard_normal((g.num_edge_types, features, features)) /  # noqa: E731
                   np.sqrt(features)).astype(np.float32)
    return {"k": rows(), "q": rows(), "v": rows(), "k_rel": rel(), "v_rel": rel(),
            "src": g.src, "dst": g.dst, "edge_type": g.etype}


def source_type_pairs(src, etype, num_edge_types=None):
    """Compact materialization's pairs of a graph (graph-compact-materialize's
    graph data): the distinct (source node, edge type) pairs (pair_src,
    pair_type) and each edge's pair (edge_pair), as int32 arrays, the pairs
    in (source, type) order. `num_edge_types` defaults to the largest type
    plus one."""
    src, etype = np.asarray(src), np.asarray(etype)
    if num_edge_types is None:
        num_edge_types = int(etype.max()) + 1 if len(etype) else 1
    keys = src.astype(np.int64) * num_edge_types + etype.astype(np.int64)
    pairs, edge_pair = np.unique(keys, return_inverse=True)
    return {"pair_src": (pairs // num_edge_types).astype(np.int32),
            "pair_type": (pairs % num_edge_types).astype(np.int32),
            "edge_pair": edge_pair.astype(np.int32)}


def _typed_rows(rows, weights, types, transposed=False):
    """rows[e] @ weights[types[e]] (or its transpose) for every row, in
    float64, one product per type."""
    weights = weights.astype(np.float64)
    out = np.zeros((len(rows), weights.shape[1 if transposed else 2]))
    for t in np.unique(types):
        mask = types == t
        out[mask] = rows[mask] @ (weights[t].T if transposed else weights[t])
    return out


def _typed_outer(lhs, rhs, types, count):
    """sum over the rows of each type of lhs[e]^T rhs[e]: [count, K, N], in
    float64, one product per type."""
    out = np.zeros((count, lhs.shape[1], rhs.shape[1]))
    for t in np.unique(types):
        mask = types == t
        out[t] = lhs[mask].T @ rhs[mask]
    return out


def _attended_messages_backward(attention, messages, rows, weight, src, dst, etype, dy,
                                nodes):
    """The backward of out[v] = sum_{e into v} attention_e messages_e with
    messages_e = rows[src_e] W[etype_e] and the attention an edge softmax
    over the destinations (`nodes` of them), in float64: the gradients of
    rows and W, and each edge's gradient of the softmax's input."""
    dm = attention[:, None] * dy[dst]
    grad_rows = np.zeros_like(rows)
    np.add.at(grad_rows, src, _typed_rows(dm, weight, etype, transposed=True))
    grad_weight = _typed_outer(rows[src], dm, etype, len(weight))
    dalpha = (dy[dst] * messages).sum(1)
    dot = np.zeros(nodes)
    np.add.at(dot, dst, attention * dalpha)
    return grad_rows, grad_weight, attention * (dalpha - dot[dst])


def _softmax_by(scores, index, count):
    """Each score's softmax over the scores of its index, in float64."""
    largest = np.full(count, -np.inf)
    np.maximum.at(largest, index, scores)
    exp = np.exp(scores - largest[index])
    total = np.zeros(count)
    np.add.at(total, index, exp)
    return exp / total[index]


def _hgt_forward(k, q, v, k_rel, v_rel, src, dst, etype):
    k, q, v, k_rel, v_rel = (a.astype(np.float64) for a in (k, q, v, k_rel, v_rel))
    keys = _typed_rows(k[src], k_rel, etype)
    attention = _softmax_by((keys * q[dst]).sum(1), dst, len(q))
    values = _typed_rows(v[src], v_rel, etype)
    out = np.zeros((len(q), v_rel.shape[2]))
    np.add.at(out, dst, attention[:, None] * values)
    return keys, attention, values, out


def hgt_reference(k, q, v, k_rel, v_rel, src, dst, etype):
    """HGT's attention and messages (one head) in float64: out[v] = sum_{e
    into v} alpha_e v_src V_r, alpha the softmax over v's incoming edges of
    <k_src K_r, q_v> (K_r = k_rel[r], with p_r / sqrt(D) folded in)."""
    return _hgt_forward(k, q, v, k_rel, v_rel, src, dst, etype)[3]


def hgt_gradients_reference(k, q, v, k_rel, v_rel, src, dst, etype, grad_out):
    """The gradients of hgt_reference's output with respect to k, q, v,
    k_rel and v_rel given the output's gradient, in float64: a dict by
    grad_<parameter>."""
    keys, attention, values, _ = _hgt_forward(k, q, v, k_rel, v_rel, src, dst, etype)
    k, q, v, k_rel, v_rel = (a.astype(np.float64) for a in (k, q, v, k_rel, v_rel))
    grad_v, grad_v_rel, ds = _attended_messages_backward(
        attention, values, v, v_rel, src, dst, etype, grad_out.astype(np.float64), len(q))
    grad_q = np.zeros_like(q)
    np.add.at(grad_q, dst, ds[:, None] * keys)
    grad_k = np.zeros_like(k)
    np.add.at(grad_k, src, ds[:, None] * _typed_rows(q[dst], k_rel, etype, transposed=True))
    grad_k_rel = _typed_outer(k[src] * ds[:, None], q[dst], etype, len(k_rel))
    return {"grad_k": grad_k, "grad_q": grad_q, "grad_v": grad_v, "grad_k_rel": grad_k_rel,
            "grad_v_rel": grad_v_rel}


def rgcn_norm(dst, etype, num_nodes, num_edge_types):
    """RGCN's normalization per edge, 1 / |N_v^r| for the edge's destination
    v and type r (PyG's RGCNConv with aggr='mean': the mean over a node's
    incoming edges of each type)."""
    group = dst.astype(np.int64) * num_edge_types + etype.astype(np.int64)
    counts = np.bincount(group, minlength=num_nodes * num_edge_types)
    return (1.0 / counts[group]).astype(np.float32)


def rgcn_inputs(g, features, outputs, seed):
    """Random arguments of one RGCN layer (examples/graph/rgcn.mlir) on
    graph `g`: features, weights scaled by 1 / sqrt(features), bias, the
    graph's arrays and its normalization, as NumPy arrays by parameter."""
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((g.num_nodes, features)).astype(np.float32),
        "weight": (rng.standard_normal((g.num_edge_types, features, outputs)) /
                   np.sqrt(features)).astype(np.float32),
        "root": (rng.standard_normal((features, outputs)) / np.sqrt(features)).astype(np.float32),
        "bias": rng.standard_normal(outputs).astype(np.float32),
        "src": g.src, "dst": g.dst, "edge_type": g.etype,
        "norm": rgcn_norm(g.dst, g.etype, g.num_nodes, g.num_edge_types),
    }


def rgcn_reference(x, weight, root, bias, src, dst, etype):
    """One RGCN layer (PyG's RGCNConv, aggr='mean', root weight, bias) in
    float64: out[v] = sum_r mean_{u in N_v^r} x_u W_r + x_v W_0 + b."""
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    out = x @ root.astype(np.float64) + bias.astype(np.float64)
    norm = rgcn_norm(dst, etype, len(x), len(weight)).astype(np.float64)
    messages = _typed_rows(x[src], weight, etype) * norm[:, None]
    np.add.at(out, dst, messages)
    return out


def rgcn_gradients_reference(x, weight, root, src, dst, etype, grad_out):
    """The gradients of rgcn_reference's output with respect to x, weight
    and root, given the output's gradient `grad_out`, in float64: a dict by
    grad_x, grad_weight, grad_root (the backward function's results)."""
    x, weight, root = (a.astype(np.float64) for a in (x, weight, root))
    dy = grad_out.astype(np.float64)
    norm = rgcn_norm(dst, etype, len(x), len(weight)).astype(np.float64)
    # Each edge's message gradient: its destination's, scaled.
    dm = dy[dst] * norm[:, None]
    grad_x = dy @ root.T
    np.add.at(grad_x, src, _typed_rows(dm, weight, etype, transposed=True))
    grad_weight = _typed_outer(x[src], dm, etype, len(weight))
    return {"grad_x": grad_x, "grad_weight": grad_weight, "grad_root": x.T @ dy}


def _lowered(text, pipeline):
    """The module `text`, parsed in a new context and run through the pass
    pipeline `pipeline`."""
    from .compiler import lower_text
    return lower_text(text, pipeline)


def differentiate(text, keep_forward=True):
    """The module `text` with the backward function `@<f>_grad` of each of
    its graph functions (graph-differentiate): `@f`'s parameters and
    `grad_<result>` in, `grad_<parameter>` out for the inputs and weights of
    its layers. Without `keep_forward`, the forward functions are dropped
    (a bundle holds one function)."""
    return str(_lowered(text, "graph-differentiate" +
                        ("" if keep_forward else "{keep-forward=0}")))


def compact(text, marked_only=False):
    """The module `text` with compact materialization (Pigeon Section 3.3,
    graph-compact-materialize): the typed linear layers of an edge's source
    computed once per (source node, edge type) pair, or per node for
    by(src_ntype); with `marked_only`, only the layers traced with
    materialize="compact" (kge.materialize). The functions gain the pairs'
    graph data as parameters (see `derived_parameters`)."""
    return str(_lowered(text, "graph-compact-materialize" +
                        ("{marked-only=1}" if marked_only else "")))


#: The edge counts from which compact materialization is the faster
#: schedule of each model on the H100 (bench/NOTES.md, Pigeon's Table 5
#: measured again: RGAT's compact schedule wins from bgs' 0.67M edges and
#: loses on mutag's 0.15M; HGT's wins from am's 5.7M and loses on bgs'
#: 0.67M).
COMPACT_FROM_EDGES = {"rgat": 500_000, "hgt": 1_000_000}


def preferred_materialization(model, num_edges):
    """'compact' or 'vanilla': the faster schedule of `model` ('rgat',
    'hgt') on a graph of `num_edges` edges (COMPACT_FROM_EDGES)."""
    if model not in COMPACT_FROM_EDGES:
        raise ValueError(f"no measured schedule for '{model}' (one of "
                         f"{', '.join(sorted(COMPACT_FROM_EDGES))})")
    return "compact" if num_edges >= COMPACT_FROM_EDGES[model] else "vanilla"


def fuse_linear(text):
    """The module `text` with linear-operator fusion (Pigeon Section 3.2,
    graph-fuse-linear): a typed linear layer whose rows are multiplied
    again by a matrix becomes one layer by the composed matrices, a new
    parameter derived from the two (see `derived_parameters`)."""
    return str(_lowered(text, "graph-fuse-linear"))


_DERIVED = re.compile(r'kge\.derived = \{([^}]*)\}, kge\.param = "([^"]*)"')
_FIELD = re.compile(r'(\w+) = "([^"]*)"')


def compose(lhs, rhs):
    """graph-fuse-linear's composed matrices: lhs[t] @ rhs (a matrix
    shared by the types) or lhs[t] @ rhs[t], in float32."""
    return np.matmul(lhs.astype(np.float32), rhs.astype(np.float32))


def _compose_backward(grad, lhs, rhs):
    """The gradients of compose's lhs and rhs given the result's."""
    lhs, rhs = lhs.astype(np.float64), rhs.astype(np.float64)
    grad_lhs = grad @ np.swapaxes(rhs, -1, -2)
    grad_rhs = (np.einsum("tkd,tkn->dn", lhs, grad) if rhs.ndim == 2
                else np.swapaxes(lhs, -1, -2) @ grad)
    return grad_lhs, grad_rhs


#: The functions that derive parameters from others, by the name kge.derived
#: gives them: (the fields naming their arguments, the function, whether it
#: gives several parts (a dict) of which kge.derived's `part` is one).
_DERIVATIONS = {"source_type_pairs": (("src", "etype"), source_type_pairs, True),
                "compose": (("lhs", "rhs"), compose, False)}


def derived_parameters(text):
    """The parameters of the functions in `text` derived from other
    parameters (kge.derived: graph data added by graph-compact-materialize,
    composed weights added by graph-fuse-linear), in the order they are
    declared (each after what it derives from): {name: (function, part,
    (argument names))}."""
    derived = {}
    for fields, name in _DERIVED.findall(text):
        fields = dict(_FIELD.findall(fields))
        function = fields.get("function")
        if function not in _DERIVATIONS:
            raise ValueError(f"parameter '{name}' is derived by '{function}', which "
                             "kge.graph does not know")
        arguments = tuple(fields.get(f, "") for f in _DERIVATIONS[function][0])
        derived[name] = (function, fields.get("part"), arguments)
    return derived


def graph_data(text, arrays):
    """The derived parameters of `text` (derived_parameters) missing from
    `arrays`, computed from the arrays they derive from (graph data once
    per graph: keep it with the graph; composed weights whenever the
    weights change)."""
    out, computed = {}, {}
    for name, (function, part, sources) in derived_parameters(text).items():
        if name in arrays:
            continue
        given = {**arrays, **out}
        missing = [s for s in sources if s not in given]
        if missing:
            raise KeyError(f"parameter '{name}' is derived from "
                           f"{', '.join(sources)}; missing {', '.join(missing)}")
        _, derive, parts = _DERIVATIONS[function]
        key = (function, sources)
        if key not in computed:
            computed[key] = derive(*(given[s] for s in sources))
        out[name] = computed[key][part] if parts else computed[key]
    return out


def chain_gradients(text, arrays, grads):
    """`grads` (a backward function's results) with the gradients of the
    derived weights of `text` (graph-fuse-linear's compositions) taken back
    to the weights they derive from, latest first: `grad_<W>` and
    `grad_<q>` gain theirs, `grad_<C>` goes."""
    grads = dict(grads)
    derived = derived_parameters(text)
    arrays = {**arrays, **graph_data(text, arrays)}
    for name, (function, _, (lhs, rhs)) in reversed(list(derived.items())):
        grad = grads.pop(f"grad_{name}", None)
        if function != "compose" or grad is None:
            continue
        for side, delta in zip((lhs, rhs), _compose_backward(grad, arrays[lhs], arrays[rhs])):
            key = f"grad_{side}"
            grads[key] = (grads[key] + delta).astype(np.float32) if key in grads \
                else delta.astype(np.float32)
    return grads


def compile_cpu(text, function=""):
    """The graph function `function` of the module `text`, lowered to tile
    tasks (convert-graph-to-tile) and compiled for the host CPU: call it with
    a dict of NumPy arrays named by the parameters' kge.param, get a dict of
    its results."""
    from . import compiler
    return compiler.compile_cpu(_lowered(text, "convert-graph-to-tile"), function)


# ---------------------------------------------------------------------------
# The decorator front end: a layer written in Python over a graph and its
# node and edge data, traced into a graph function.
# ---------------------------------------------------------------------------

class _Param:
    """An annotation of a traced layer's parameter."""
    rank = 2

    def __init__(self, dtype="f32"):
        if dtype not in ("f32", "f16", "bf16"):
            raise TraceError(f"element type '{dtype}' is not f32, f16 or bf16")
        self.dtype = dtype

    def tensor(self):
        return "tensor<" + "?x" * self.rank + self.dtype + ">"


class NodeData(_Param):
    """Per-node rows (features): [nodes, F]."""


class EdgeData(_Param):
    """Per-edge rows: [edges, F]."""


class Weights(_Param):
    """One matrix: [K, N]; with `columns=1`, one column ([K, 1]: an
    attention's vector, whose products are per-row scalars)."""
    #: What the weights are, in messages.
    what = "weights"

    def __init__(self, dtype="f32", columns=None):
        super().__init__(dtype)
        if columns not in (None, 1):
            raise TraceError(f"columns={columns!r}: {self.what} have any number of columns "
                             "(None) or one (1)")
        self.columns = columns

    def tensor(self):
        return ("tensor<" + "?x" * (self.rank - 1) + ("1" if self.columns else "?") +
                f"x{self.dtype}>")


class TypedWeights(Weights):
    """One matrix per type: [types, K, N]; with `columns=1`, one column per
    type ([types, K, 1]: an attention's projection, whose rows are per-edge
    scalars)."""
    rank = 3
    what = "typed weights"


class Bias(_Param):
    """One row: [N], f32."""
    rank = 1

    def __init__(self):
        super().__init__("f32")


class EdgeWeights(_Param):
    """One scalar per edge (a normalization such as RGCN's): [edges], f32."""
    rank = 1

    def __init__(self):
        super().__init__("f32")


class Graph:
    """A heterogeneous graph parameter: its edges' sources, destinations and
    types (parameters src, dst, edge_type: i32 or i64) and, with
    node_types, its nodes' types (node_type)."""

    def __init__(self, index_dtype="i32", node_types=False):
        if index_dtype not in ("i32", "i64"):
            raise TraceError(f"index type '{index_dtype}' is not i32 or i64")
        self.index_dtype = index_dtype
        self.node_types = node_types


class _Value:
    """A traced tensor: its SSA name, type and kind (nodes, edges,
    weights...)."""

    def __init__(self, tracer, name, type, kind):
        self.tracer, self.name, self.type, self.kind = tracer, name, type, kind

    def __add__(self, other):
        if isinstance(other, int) and other == 0:  # sum()'s start
            return self
        if not isinstance(other, _Value) or other.type != self.type or other.kind != self.kind:
            raise TraceError("only per-node results of the same shape add up "
                             f"(got {self.kind} {self.type} + {getattr(other, 'kind', other)})")
        return self.tracer.emit("arith.addf", f"{self.name}, {other.name} : {self.type}",
                                self.type, self.kind)

    __radd__ = __add__

    def __getattr__(self, name):
        raise TraceError(f"'{name}' is not an operation of the graph dialect's layers")


class _TracedGraph:
    def __init__(self, tracer, name):
        self.tracer, self.name = tracer, name

    def typed_linear(self, input, weights, rows="src", by="etype", name=None,
                     materialize=None):
        """Rows of `input` times the matrix of their type (graph.typed_linear).
        `name` names the rows where they are stored (kge.name);
        `materialize` ("compact" or "vanilla") is the schedule
        graph-compact-materialize follows for them (kge.materialize)."""
        if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
            raise TraceError(f"name '{name}' is not an identifier")
        if materialize not in (None, "compact", "vanilla"):
            raise TraceError(f"materialize='{materialize}' is not compact or vanilla")
        attrs = ", ".join([f'kge.name = "{name}"'] * (name is not None) +
                          [f'kge.materialize = "{materialize}"'] * (materialize is not None))
        if rows not in ("src", "dst", "edges", "nodes"):
            raise TraceError(f"rows='{rows}' is not one of src, dst, edges, nodes")
        if by not in ("etype", "ntype", "src_ntype", "dst_ntype"):
            raise TraceError(f"by='{by}' is not one of etype, ntype, src_ntype, dst_ntype")
        expected = "edges" if rows == "edges" else "nodes"
        if input.kind != expected:
            raise TraceError(f"rows='{rows}' reads {expected} rows, got {input.kind} rows")
        if weights.kind != "typed_weights":
            raise TraceError("typed_linear takes TypedWeights")
        # One column per type: per-row scalars.
        result = "tensor<?x1xf32>" if weights.type.endswith("x1xf32>") or \
            weights.type.endswith("x1xf16>") or weights.type.endswith("x1xbf16>") \
            else "tensor<?x?xf32>"
        kind = "nodes" if rows == "nodes" else "edges"
        return self.tracer.emit(
            "graph.typed_linear",
            f"{self.name}, {input.name}, {weights.name} rows({rows}) by({by})"
            + (f" {{{attrs}}}" if attrs else "")
            + f" : {input.type}, {weights.type} -> {result}", result, kind)

    def aggregate(self, input, weights=None, to="dst"):
        """Per-edge rows (times `weights`) summed into the nodes at the `to`
        end of the edges (graph.aggregate)."""
        if to not in ("dst", "src"):
            raise TraceError(f"to='{to}' is not dst or src")
        if input.kind != "edges":
            raise TraceError(f"aggregate sums per-edge rows, got {input.kind} rows")
        if weights is not None and weights.kind == "edges" and weights.type == _SCALARS:
            weighted = f" weights({weights.name} : {weights.type})"  # computed (attention)
        else:
            weighted = _clause("weights", weights, "edge_weights",
                               "aggregate's weights are EdgeWeights or per-edge scalars "
                               "(an edge softmax)")
        result = "tensor<?x?xf32>"
        return self.tracer.emit(
            "graph.aggregate",
            f"{self.name}, {input.name}{weighted} to({to}) reduce(sum) : {input.type} -> {result}",
            result, "nodes")


    def edge_softmax(self, scores, to="dst"):
        """Per-edge scalars normalized over the edges of each node at the
        `to` end (graph.edge_softmax): attention."""
        if to not in ("dst", "src"):
            raise TraceError(f"to='{to}' is not dst or src")
        if not isinstance(scores, _Value) or scores.kind != "edges" or scores.type != _SCALARS:
            raise TraceError("edge_softmax takes per-edge scalars (a typed linear layer of "
                             "TypedWeights(columns=1), sums and leaky ReLUs of them)")
        return self.tracer.emit("graph.edge_softmax",
                                f"{self.name}, {scores.name} to({to}) : {_SCALARS}",
                                _SCALARS, "edges")


    def inner_product(self, lhs, rhs, rows=("edges", "dst")):
        """Each edge's inner product of a row of `lhs` and a row of `rhs`
        (graph.inner_product): per-edge scalars. `rows`: which rows of each
        (src, dst: a node's at the edge's end; edges: the edge's own)."""
        for value, side in ((lhs, rows[0]), (rhs, rows[1])):
            if side not in ("src", "dst", "edges"):
                raise TraceError(f"rows '{side}' is not one of src, dst, edges")
            expected = "edges" if side == "edges" else "nodes"
            if not isinstance(value, _Value) or value.kind != expected:
                raise TraceError(f"rows '{side}' reads {expected} rows, got "
                                 f"{getattr(value, 'kind', value)}")
        return self.tracer.emit(
            "graph.inner_product",
            f"{self.name}, {lhs.name}, {rhs.name} rows({rows[0]}, {rows[1]}) : "
            f"{lhs.type}, {rhs.type} -> {_SCALARS}", _SCALARS, "edges")


#: The type of per-row scalars (scores, attention): [rows, 1].
_SCALARS = "tensor<?x1xf32>"


def leaky_relu(input, negative_slope=0.2):
    """`input > 0 ? input : negative_slope * input` (graph.leaky_relu)."""
    if not isinstance(input, _Value) or input.type != _SCALARS:
        raise TraceError("leaky_relu takes per-row scalars (one attention head)")
    return input.tracer.emit("graph.leaky_relu",
                             f"{input.name} slope({float(negative_slope)!r}) : {_SCALARS}",
                             _SCALARS, input.kind)


def _clause(keyword, value, kind, message):
    """The optional operand clause ` keyword(%value : type)` of `value` (of
    `kind`; none: empty)."""
    if value is None:
        return ""
    if value.kind != kind:
        raise TraceError(message)
    return f" {keyword}({value.name} : {value.type})"


def linear(input, weights, bias=None):
    """`input` times `weights` (+ `bias`): graph.linear."""
    if not isinstance(input, _Value) or input.kind not in ("nodes", "edges"):
        raise TraceError("linear takes per-node or per-edge rows")
    if weights.kind != "weights":
        raise TraceError("linear takes Weights")
    with_bias = _clause("bias", bias, "bias", "linear's bias is a Bias")
    result = _SCALARS if re.fullmatch(r"tensor<\?x1x\w+>", weights.type) else "tensor<?x?xf32>"
    return input.tracer.emit(
        "graph.linear", f"{input.name}, {weights.name}{with_bias} : {input.type}, "
        f"{weights.type} -> {result}", result, input.kind)


class _Tracer:
    def __init__(self):
        self.lines = []
        self.count = 0

    def emit(self, op, body, type, kind):
        name = f"%__v{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = {op} {body}")
        return _Value(self, name, type, kind)


_KINDS = {NodeData: "nodes", EdgeData: "edges", Weights: "weights",
          TypedWeights: "typed_weights", Bias: "bias", EdgeWeights: "edge_weights"}


class Layer:
    """A traced layer: its graph function (`text`), runnable on the CPU
    (`run_cpu`) and compiled into a GPU bundle (`compile`)."""

    @classmethod
    def from_text(cls, text, name):
        """A layer of the graph function `name` written as IR (`text`):
        for layers the decorator cannot trace (several graphs)."""
        layer = cls.__new__(cls)
        layer.name, layer.text = name, text
        layer._cpu = layer._backward_cpu = layer._backward_text = None
        return layer

    def __init__(self, fn):
        import inspect
        self.name = fn.__name__
        tracer = _Tracer()
        params, args, first_node_data = [], [], None
        graphs = []
        parameters = inspect.signature(fn, eval_str=True).parameters.values()
        reserved = {"out"}  # the result's name
        for p in parameters:
            annotation = p.annotation
            if isinstance(annotation, type):
                annotation = annotation()
            if isinstance(annotation, Graph):
                index = f"tensor<?x{annotation.index_dtype}>"
                params += [("src", index), ("dst", index), ("edge_type", "tensor<?xi32>")]
                if annotation.node_types:
                    params.append(("node_type", index))
                reserved.update(name for name, _ in params)
                graphs.append((p.name, annotation))
                args.append(p.name)
                continue
            kind = _KINDS.get(type(annotation))
            if kind is None:
                raise TraceError(f"parameter '{p.name}' needs an annotation: Graph, NodeData, "
                                 "EdgeData, Weights, TypedWeights, Bias or EdgeWeights")
            params.append((p.name, annotation.tensor()))
            value = _Value(tracer, "%" + p.name, annotation.tensor(), kind)
            args.append(value)
            if kind == "nodes" and first_node_data is None:
                first_node_data = value
        if len(graphs) != 1:
            raise TraceError(f"a layer takes one Graph parameter, got {len(graphs)}")
        for name in args:
            if isinstance(name, _Value) and name.name[1:] in reserved:
                raise TraceError(f"parameter '{name.name[1:]}' takes a name the layer's "
                                 f"interface uses ({', '.join(sorted(reserved))})")
        if first_node_data is None:
            raise TraceError("a layer takes per-node data (NodeData): the graph's node count")
        (graph_name, g), = graphs
        index = f"tensor<?x{g.index_dtype}>"
        header = [
            "  %__c0 = arith.constant 0 : index",
            f"  %__nodes = tensor.dim {first_node_data.name}, %__c0 : {first_node_data.type}",
            "  %__graph = graph.coo %src, %dst, %edge_type nodes(%__nodes)"
            + (f" ntypes(%node_type : {index})" if g.node_types else "")
            + f" : {index}, {index}, tensor<?xi32>"]
        traced_graph = _TracedGraph(tracer, "%__graph")
        result = fn(*[traced_graph if a == graph_name else a for a in args])
        if not isinstance(result, _Value) or result.kind != "nodes":
            raise TraceError("a layer returns per-node rows")
        signature = ", ".join(f"%{n}: {t} {{kge.param = \"{n}\"}}" for n, t in params)
        self.text = (f"func.func @{self.name}({signature})\n"
                     f"    -> ({result.type} {{kge.param = \"out\"}}) {{\n"
                     + "\n".join(header + tracer.lines)
                     + f"\n  return {result.name} : {result.type}\n}}\n")
        self._cpu = self._backward_cpu = self._backward_text = None

    def __str__(self):
        return self.text

    @property
    def backward_text(self):
        """The backward function `@<name>_grad` alone (graph-differentiate):
        the layer's parameters and `grad_out` in, the gradients of its
        inputs and weights out (`grad_<parameter>`)."""
        if self._backward_text is None:
            self._backward_text = differentiate(self.text, keep_forward=False)
        return self._backward_text

    def compacted(self, marked_only=False):
        """This layer with compact materialization (kge.graph.compact): the
        same model, scheduled to compute the typed linear layers of the
        edges' sources once per (source node, edge type) pair. Its graph
        data (`graph_data`) is derived from the graph's arrays."""
        return Layer.from_text(compact(self.text, marked_only), self.name)

    def fused(self):
        """This layer with linear-operator fusion (kge.graph.fuse_linear):
        chains of linear layers as one typed linear layer by composed
        matrices, derived from the weights (`graph_data` composes them;
        `run_backward_cpu` takes their gradients back)."""
        return Layer.from_text(fuse_linear(self.text), self.name)

    def graph_data(self, **arrays):
        """The graph data the layer derives from the graph's arrays and
        that `arrays` lacks (the pairs of compact materialization): compute
        it once per graph and pass it with the graph."""
        return graph_data(self.text, arrays)

    def run_cpu(self, **arrays):
        """Runs the layer on the CPU over NumPy arrays; returns its output.
        Derived graph data that is not given is computed (graph_data)."""
        if self._cpu is None:
            self._cpu = compile_cpu(self.text, self.name)
        return self._cpu({**arrays, **self.graph_data(**arrays)})["out"]

    def run_backward_cpu(self, **arrays):
        """The gradients of the layer's inputs and weights on the CPU, given
        its arguments and `grad_out`: a dict by `grad_<parameter>`."""
        if self._backward_cpu is None:
            self._backward_cpu = compile_cpu(self.backward_text, self.name + "_grad")
        arrays = {**arrays, **self.graph_data(**arrays)}
        return chain_gradients(self.text, arrays, self._backward_cpu(arrays))

    def compile(self, cubin=True, matrix_math=None, backward=False, cache=True):
        """The layer's GPU bundle (kge.compiler.Bundle), or with `backward`
        its backward function's; compiled once, then read from the bundle
        cache (kge.cache)."""
        from . import compiler, ir
        text = self.backward_text if backward else self.text

        def build():
            lowering = "kge-lower-to-gpu" + (f"{{matrix-math={matrix_math}}}"
                                             if matrix_math else "")
            module = _lowered(text, f"convert-graph-to-tile,{lowering}")
            return compiler.Bundle(ir.to_bundle(module, cubin))

        payload = {"graph": text, "matrix_math": matrix_math, "cubin": cubin}
        return _cache.cached(payload, build, cache, cubin=cubin)


def layer(fn):
    """Traces `fn` (annotated parameters: one Graph, NodeData, EdgeData,
    Weights, TypedWeights, Bias, EdgeWeights) into a graph function::

        @kge.graph.layer
        def rgcn(g: Graph, x: NodeData, weight: TypedWeights, root: Weights,
                 bias: Bias, norm: EdgeWeights):
            messages = g.typed_linear(x, weight, rows="src", by="etype")
            return g.aggregate(messages, weights=norm, to="dst") + linear(x, root, bias)
    """
    return Layer(fn)


@layer
def rgcn_layer(g: Graph, x: NodeData, weight: TypedWeights, root: Weights, bias: Bias,
               norm: EdgeWeights):
    """One RGCN layer (examples/graph/rgcn.mlir) through the decorator front
    end: the layer kge.nn.RGCNConv compiles, forward and backward."""
    messages = g.typed_linear(x, weight, rows="src", by="etype")
    return g.aggregate(messages, weights=norm, to="dst") + linear(x, root, bias)


_RGAT_LAYERS = {}


def rgat(negative_slope=0.2):
    """One RGAT layer (examples/graph/rgat.mlir; PyG's RGATConv with one
    head, additive self-attention across relations) through the decorator
    front end, with the attention's leaky ReLU of `negative_slope`: the
    layer kge.nn.RGATConv compiles (one per slope). `query` and `key` are
    the attention's projections composed with the relations' matrices (W_r
    q, W_r k: Pigeon's linear-operator fusion), so that the scores are
    typed linear layers of one column."""
    slope = float(negative_slope)
    if slope not in _RGAT_LAYERS:
        def rgat_layer(g: Graph, x: NodeData, weight: TypedWeights,
                       query: TypedWeights(columns=1), key: TypedWeights(columns=1)):
            scores = g.typed_linear(x, query, rows="dst") + g.typed_linear(x, key, rows="src")
            attention = g.edge_softmax(leaky_relu(scores, slope), to="dst")
            messages = g.typed_linear(x, weight, rows="src", by="etype")
            return g.aggregate(messages, weights=attention, to="dst")
        _RGAT_LAYERS[slope] = layer(rgat_layer)
    return _RGAT_LAYERS[slope]


#: rgat() with PyG's default slope, 0.2.
rgat_layer = rgat(0.2)

_RGAT_UNFUSED = {}


def rgat_unfused(negative_slope=0.2):
    """One RGAT layer (one head) as PyG's RGATConv writes it: each edge's
    rows W_r x_dst and W_r x_src (`attention_weight`'s columns: all heads'),
    then their products with the attention's vectors `query` and `key`
    ([D, 1]). graph-fuse-linear turns it into rgat()'s form (one column per
    edge by W_r q and W_r k: `.fused()`); unfused, it is the baseline of
    linear-operator fusion's effect."""
    slope = float(negative_slope)
    if slope not in _RGAT_UNFUSED:
        def rgat_unfused_layer(g: Graph, x: NodeData, weight: TypedWeights,
                               attention_weight: TypedWeights, query: Weights(columns=1),
                               key: Weights(columns=1)):
            scores = (linear(g.typed_linear(x, attention_weight, rows="dst"), query) +
                      linear(g.typed_linear(x, attention_weight, rows="src"), key))
            attention = g.edge_softmax(leaky_relu(scores, slope), to="dst")
            messages = g.typed_linear(x, weight, rows="src", by="etype")
            return g.aggregate(messages, weights=attention, to="dst")
        _RGAT_UNFUSED[slope] = layer(rgat_unfused_layer)
    return _RGAT_UNFUSED[slope]


@layer
def hgt_layer(g: Graph, k: NodeData, q: NodeData, v: NodeData, k_rel: TypedWeights,
              v_rel: TypedWeights):
    """HGT's attention and messages with one head (examples/graph/hgt.mlir)
    through the decorator front end: the edge-level part kge.nn.HGTConv
    compiles, between its per-node-type projections (k, q, v) and output
    layer. `k_rel` holds each relation's K_r with p_r / sqrt(D) folded in."""
    scores = g.inner_product(g.typed_linear(k, k_rel, rows="src", by="etype", name="keys"),
                             q, rows=("edges", "dst"))
    attention = g.edge_softmax(scores, to="dst")
    values = g.typed_linear(v, v_rel, rows="src", by="etype", name="values")
    return g.aggregate(values, weights=attention, to="dst")


# hgt_compact_layer: HGT's attention and messages (hgt_layer) with compact materialization
# (Pigeon Section 3.3, graph-compact-materialize): k_src K_r and v_src V_r
# depend on the edge's source and type alone, so they are computed once per
# (source node, edge type) pair (`keys` and `values`, one row per pair),
# and each edge reads its pair's rows through a bipartite graph from the
# pairs to the destinations. The pairs are graph data derived from src and
# edge_type (source_type_pairs: pair_src, pair_type, edge_pair), computed
# once per graph. The layer kge.nn.HGTConv runs.
# (Compiled on first use: kge.graph imports without the compiler.)
def __getattr__(name):
    if name == "hgt_compact_layer":
        layer = globals()[name] = hgt_layer.compacted()
        return layer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
