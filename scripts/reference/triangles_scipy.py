"""In-memory triangle count of an outcore store with scipy (the baseline of the nwsm
acceptance figures): reads csr-out/offsets and csr-out/targets (u32 targets), builds the
simple undirected graph (directions ignored, self-loops and duplicates dropped), orders
vertices by degree, and counts triangles as sum((L @ L) .* L) with L the lower triangle.
Prints JSON: vertices, edges, triangles, seconds (load and count separately).

usage: python triangles_scipy.py STORE_DIR
"""
import json
import sys
import time

import numpy as np
import scipy.sparse as sp

from store_arcs import load_arcs


def main(store):
    t0 = time.perf_counter()
    n, sources, targets = load_arcs(store)
    a = sp.coo_matrix((np.ones(len(sources), dtype=np.int32), (sources, targets)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.int64).tocsr()
    t1 = time.perf_counter()
    degree = np.asarray(a.sum(axis=1)).ravel()
    order = np.argsort(-degree, kind="stable")
    a = a[order][:, order]
    lower = sp.tril(a, k=-1).tocsr()
    triangles = int((lower @ lower).multiply(lower).sum())
    t2 = time.perf_counter()
    print(json.dumps({
        "vertices": n,
        "edges": int(lower.nnz),
        "triangles": triangles,
        "load_seconds": t1 - t0,
        "count_seconds": t2 - t1,
        "total_seconds": t2 - t0,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
