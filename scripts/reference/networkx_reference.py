#!/usr/bin/env python3
"""Reference values for outcore's tests, computed with networkx (pip install networkx).

Writes crates/outcore/tests/data/reference/bc-<graph>.json: for a few small graphs, the
vertices and edges (original ids), and networkx's betweenness_centrality (endpoints=False)
  * exact, normalized and not normalized;
  * from a fixed list of sources, normalized and not, computed exactly as networkx does for
    k sampled sources (same accumulation and `_rescale(..., sampled_nodes=sources)`), so that
    outcore can pass the same sources instead of relying on networkx's random sampling;
and the exact diameter of each (largest finite shortest-path distance, along edge direction).

Run from the repository root:  python3 scripts/reference/networkx_reference.py
"""
import json
import os
import sys

import networkx as nx
from networkx.algorithms.centrality.betweenness import (
    _accumulate_basic,
    _rescale,
    _single_source_shortest_path_basic,
)

OUT = os.path.join("crates", "outcore", "tests", "data", "reference")


def relabel(g, step=3, offset=100):
    """Non-contiguous original ids, so the tests exercise the id map."""
    return nx.relabel_nodes(g, {v: offset + step * i for i, v in enumerate(sorted(g.nodes()))})


def graphs():
    yield "karate", relabel(nx.karate_club_graph())
    g = nx.gnp_random_graph(40, 0.08, seed=7, directed=True)
    yield "gnp-directed", relabel(g, step=5, offset=7)
    yield "grid-6x5", relabel(nx.convert_node_labels_to_integers(nx.grid_2d_graph(6, 5)))
    g = nx.Graph()
    g.add_nodes_from(range(10))
    g.add_edges_from([(0, 1), (1, 2), (2, 3), (3, 4), (5, 6), (6, 7), (7, 5), (7, 8)])  # 9 isolated
    yield "components", relabel(g, step=11, offset=1)
    yield "tree", relabel(nx.random_labeled_tree(25, seed=5) if hasattr(nx, "random_labeled_tree") else nx.random_tree(25, seed=5))
    g = nx.DiGraph()
    g.add_edges_from([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 0), (4, 5), (5, 6), (6, 4), (2, 6)])
    yield "small-directed", relabel(g, step=2, offset=0)


def fixed_sources_bc(g, sources, normalized):
    bc = dict.fromkeys(g, 0.0)
    for s in sources:
        S, P, sigma, _ = _single_source_shortest_path_basic(g, s)
        bc, _ = _accumulate_basic(bc, S, P, sigma, s)
    return _rescale(bc, len(g), normalized=normalized, directed=g.is_directed(), endpoints=False, sampled_nodes=sources)


def exact_diameter(g):
    best = 0
    for _, dist in nx.all_pairs_shortest_path_length(g):
        best = max(best, max(dist.values()))
    return best


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, g in graphs():
        vertices = sorted(g.nodes())
        sources = vertices[1::max(1, len(vertices) // 5)][:5]
        keyed = lambda d: {str(v): d[v] for v in vertices}
        doc = {
            "name": name,
            "networkx": nx.__version__,
            "directed": g.is_directed(),
            "vertices": vertices,
            "edges": sorted([list(e) for e in g.edges()]),
            "exact_normalized": keyed(nx.betweenness_centrality(g, normalized=True)),
            "exact_raw": keyed(nx.betweenness_centrality(g, normalized=False)),
            "sources": sources,
            "sampled_normalized": keyed(fixed_sources_bc(g, sources, True)),
            "sampled_raw": keyed(fixed_sources_bc(g, sources, False)),
            "diameter": exact_diameter(g),
        }
        path = os.path.join(OUT, f"bc-{name}.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        print(f"wrote {path} ({len(vertices)} vertices, {g.number_of_edges()} edges)", file=sys.stderr)


if __name__ == "__main__":
    main()
