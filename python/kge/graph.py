"""The `graph` dialect from Python: heterogeneous graphs of the shapes
relational GNNs are measured on, the real WordNet graph, RGCN's
normalization and NumPy references of the layers, and compilation of graph
functions for the CPU.

    from kge import graph
    g = graph.synthetic("aifb", seed=0)          # Pigeon's Table 4 shape
    norm = graph.rgcn_norm(g.dst, g.etype, g.num_nodes, g.num_edge_types)
    fn = graph.compile_cpu(open("examples/graph/rgcn.mlir").read(), "rgcn")
    out = fn({"x": x, "weight": w, "root": root, "bias": b, "src": g.src,
              "dst": g.dst, "edge_type": g.etype, "norm": norm})["out"]
"""

import dataclasses
import pathlib

import numpy as np

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


def zipf(n, exponent):
    p = np.arange(1, n + 1, dtype=np.float64) ** -exponent
    return p / p.sum()


def synthetic(name, seed=0, scale=1.0, index_dtype=np.int32):
    """A graph of the shape of Pigeon's dataset `name` (SHAPES), nodes and
    edges scaled by `scale`: node types of Zipf-distributed sizes, edge
    types Zipf-distributed, endpoints drawn from a power law over the nodes
    (ids shuffled, so hubs are not the first rows)."""
    node_types, edge_types, nodes, edges = SHAPES[name]
    nodes = max(node_types, int(round(nodes * scale)))
    edges = max(1, int(round(edges * scale)))
    rng = np.random.default_rng(seed)
    ntype = rng.choice(node_types, nodes, p=zipf(node_types, TYPE_EXPONENT))
    p = zipf(nodes, NODE_EXPONENT)
    ids = rng.permutation(nodes)
    src = ids[rng.choice(nodes, edges, p=p)]
    dst = ids[rng.choice(nodes, edges, p=p)]
    etype = rng.choice(edge_types, edges, p=zipf(edge_types, TYPE_EXPONENT))
    return HeteroGraph(src.astype(index_dtype), dst.astype(index_dtype),
                       etype.astype(np.int32), ntype.astype(np.int32), edge_types,
                       node_types)


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


def rgcn_norm(dst, etype, num_nodes, num_edge_types):
    """RGCN's normalization per edge, 1 / |N_v^r| for the edge's destination
    v and type r (PyG's RGCNConv with aggr='mean': the mean over a node's
    incoming edges of each type)."""
    group = dst.astype(np.int64) * num_edge_types + etype.astype(np.int64)
    counts = np.bincount(group, minlength=num_nodes * num_edge_types)
    return (1.0 / counts[group]).astype(np.float32)


def rgcn_reference(x, weight, root, bias, src, dst, etype):
    """One RGCN layer (PyG's RGCNConv, aggr='mean', root weight, bias) in
    float64: out[v] = sum_r mean_{u in N_v^r} x_u W_r + x_v W_0 + b."""
    x, weight = x.astype(np.float64), weight.astype(np.float64)
    out = x @ root.astype(np.float64) + bias.astype(np.float64)
    norm = rgcn_norm(dst, etype, len(x), len(weight)).astype(np.float64)
    messages = np.einsum("ek,eko->eo", x[src], weight[etype]) * norm[:, None]
    np.add.at(out, dst, messages)
    return out


def compile_cpu(text, function=""):
    """The graph function `function` of the module `text`, lowered to tile
    tasks (convert-graph-to-tile) and compiled for the host CPU: call it with
    a dict of NumPy arrays named by the parameters' kge.param, get a dict of
    its results."""
    from . import compiler, ir
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add("convert-graph-to-tile")
    pm.run(module)
    return compiler.compile_cpu(module, function)
