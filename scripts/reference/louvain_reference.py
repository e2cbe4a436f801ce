#!/usr/bin/env python3
"""Louvain references for outcore's tests (crates/outcore/tests/louvain.rs), from networkx.

Writes crates/outcore/tests/data/louvain/<graph>.json for graphs with clear structure (two
cliques joined by an edge, caveman, connected caveman, karate club) and random ones (planted
partition, R-MAT scale 10, a weighted planted partition): the edges (original ids, weight),
and networkx's louvain_communities (weight="weight", resolution 1, threshold 1e-7) for seeds
0..9: each seed's partition (sorted lists of sorted ids) and modularity, plus, for the
planted partition, resolution 2.

Run from the repository root with networkx installed:
  python3 scripts/reference/louvain_reference.py
"""
import json
import os
import random

import networkx as nx

OUT = os.path.join("crates", "outcore", "tests", "data", "louvain")
SEEDS = range(10)


def rmat(scale, edge_factor, seed, a=0.57, b=0.19, c=0.19):
    """Undirected R-MAT edges (Graph500 parameters), self-loops and duplicates dropped."""
    rng = random.Random(seed)
    n = 1 << scale
    edges = set()
    for _ in range(edge_factor * n):
        s = t = 0
        for bit in range(scale):
            r = rng.random()
            if r < a:
                pass
            elif r < a + b:
                t |= 1 << bit
            elif r < a + b + c:
                s |= 1 << bit
            else:
                s |= 1 << bit
                t |= 1 << bit
        if s != t:
            edges.add((min(s, t), max(s, t)))
    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(sorted(edges))
    return g


def graphs():
    two = nx.complete_graph(5)
    two.add_edges_from((u + 5, v + 5) for u, v in nx.complete_graph(5).edges())
    two.add_edge(4, 5)
    yield "two_cliques", two
    yield "caveman", nx.caveman_graph(4, 5)
    yield "connected_caveman", nx.connected_caveman_graph(6, 5)
    yield "karate", nx.karate_club_graph()
    yield "planted", nx.planted_partition_graph(4, 32, 0.3, 0.02, seed=1)
    yield "rmat10", rmat(10, 8, 7)
    weighted = nx.planted_partition_graph(5, 20, 0.4, 0.05, seed=2)
    rng = random.Random(5)
    for u, v in weighted.edges():
        weighted[u][v]["weight"] = rng.choice([0.5, 1.0, 2.0, 3.0])
    weighted.add_edge(3, 3, weight=2.0)
    yield "weighted_planted", weighted


def runs(g, resolution):
    out = []
    for seed in SEEDS:
        parts = nx.community.louvain_communities(g, weight="weight", resolution=resolution, seed=seed)
        out.append({
            "seed": seed,
            "modularity": nx.community.modularity(g, parts, weight="weight", resolution=resolution),
            "partition": sorted(sorted(p) for p in parts),
        })
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, g in graphs():
        weighted = any("weight" in d for _, _, d in g.edges(data=True))
        doc = {
            "name": name,
            "weighted": weighted,
            "vertices": sorted(g.nodes()),
            "edges": [[u, v, d.get("weight", 1.0)] for u, v, d in sorted(g.edges(data=True))],
            "resolution_1": runs(g, 1.0),
        }
        if name == "planted":
            doc["resolution_2"] = runs(g, 2.0)
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")
        best = max(r["modularity"] for r in doc["resolution_1"])
        print(f"{name}: {g.number_of_nodes()} vertices, {g.number_of_edges()} edges, best modularity {best:.4f}")


if __name__ == "__main__":
    main()
