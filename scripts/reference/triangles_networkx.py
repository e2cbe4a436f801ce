"""In-memory triangle count of an outcore store with networkx (a second baseline of the nwsm
acceptance figures, for graphs small enough for networkx: RMAT scale 18 takes a few GiB).
Reads csr-out/offsets and csr-out/targets (u32 targets), builds the simple undirected graph
(directions ignored, self-loops and duplicates dropped) and sums nx.triangles over the vertices.
Prints JSON: vertices, edges, triangles, seconds (load and count separately).

usage: python triangles_networkx.py STORE_DIR
"""
import json
import sys
import time

import networkx as nx

from store_arcs import load_arcs


def main(store):
    t0 = time.perf_counter()
    n, sources, targets = load_arcs(store)
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(sources.tolist(), targets.tolist()))
    t1 = time.perf_counter()
    triangles = sum(nx.triangles(graph).values()) // 3
    t2 = time.perf_counter()
    print(json.dumps({
        "vertices": n,
        "edges": graph.number_of_edges(),
        "triangles": triangles,
        "load_seconds": t1 - t0,
        "count_seconds": t2 - t1,
        "total_seconds": t2 - t0,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
