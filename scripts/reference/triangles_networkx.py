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
import numpy as np


def main(store):
    t0 = time.perf_counter()
    offsets = np.fromfile(f"{store}/csr-out/offsets", dtype="<u8")
    targets = np.fromfile(f"{store}/csr-out/targets", dtype="<u4")
    n = len(offsets) - 1
    sources = np.repeat(np.arange(n, dtype=np.uint32), np.diff(offsets).astype(np.int64))
    keep = sources != targets
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(zip(sources[keep].tolist(), targets[keep].tolist()))
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
