#!/usr/bin/env python3
"""Katz centrality references for outcore's tests, computed with networkx.

Adds to every crates/outcore/tests/data/reference/bc-<graph>.json (the graphs written by
networkx_reference.py: vertices, edges, directed) networkx's katz_centrality:
  * "katz": the defaults (alpha 0.1, beta 1, tol 1e-6, max_iter 1000, normalized);
  * "katz_raw": alpha 0.05, beta 2, tol 1e-9, normalized=False;
and "katz_scipy": the exact solution of (I - 0.1 A^T) x = 1 by scipy, normalised, an
independent check that the iteration converges to the right vector.

Run from the repository root:  python3 scripts/reference/centrality_reference.py
"""
import glob
import json
import os

import networkx as nx
import numpy as np
import scipy.sparse
import scipy.sparse.linalg

REF = os.path.join("crates", "outcore", "tests", "data", "reference")


def graph_of(doc):
    g = nx.DiGraph() if doc["directed"] else nx.Graph()
    g.add_nodes_from(doc["vertices"])
    g.add_edges_from((s, t) for s, t in doc["edges"])
    return g


def exact_katz(g, alpha):
    nodes = list(g)
    a = nx.to_scipy_sparse_array(g, nodelist=nodes, weight=None, format="csr")
    m = scipy.sparse.identity(len(nodes), format="csc") - alpha * a.T.tocsc()
    x = scipy.sparse.linalg.spsolve(m, np.ones(len(nodes)))
    x /= np.linalg.norm(x)
    return {str(v): float(x[i]) for i, v in enumerate(nodes)}


def main():
    for path in sorted(glob.glob(os.path.join(REF, "bc-*.json"))):
        with open(path) as f:
            doc = json.load(f)
        g = graph_of(doc)
        doc["katz"] = {str(v): c for v, c in nx.katz_centrality(g).items()}
        raw = nx.katz_centrality(g, alpha=0.05, beta=2.0, tol=1e-9, normalized=False)
        doc["katz_raw"] = {str(v): c for v, c in raw.items()}
        doc["katz_scipy"] = exact_katz(g, 0.1)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(path, len(g), "vertices")


if __name__ == "__main__":
    main()
