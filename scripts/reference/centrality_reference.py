#!/usr/bin/env python3
"""Katz, eigenvector centrality and HITS references for outcore's tests, computed with networkx.

Adds to every crates/outcore/tests/data/reference/bc-<graph>.json (the graphs written by
networkx_reference.py: vertices, edges, directed) networkx's katz_centrality:
  * "katz": the defaults (alpha 0.1, beta 1, tol 1e-6, max_iter 1000, normalized);
  * "katz_raw": alpha 0.05, beta 2, tol 1e-9, normalized=False;
and "katz_scipy": the exact solution of (I - 0.1 A^T) x = 1 by scipy, normalised, an
independent check that the iteration converges to the right vector; and networkx's
eigenvector_centrality:
  * "eigenvector": the defaults (max_iter 100, tol 1e-6, weight None), null when networkx
    raises PowerIterationFailedConvergence;
  * "eigenvector_tight": tol 1e-10, max_iter 1000 (null when it fails);
  * "eigenvector_weighted": weight="weight" with the weights of weight_of() (the Rust test
    derives the same ones), defaults otherwise;
  * "eigenvector_numpy": eigenvector_centrality_numpy (ARPACK), an independent check, only
    where the power iteration converges.

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


def weight_of(s, t):
    """The weights of the weighted eigenvector reference (tests/centrality.rs: weight_of)."""
    return 1.0 + (s + t) % 4  # symmetric: undirected edges have no orientation


def eigenvector_or_none(g, **kwargs):
    try:
        return {str(v): c for v, c in nx.eigenvector_centrality(g, **kwargs).items()}
    except nx.PowerIterationFailedConvergence:
        return None


def add_eigenvector(doc, g):
    doc["eigenvector"] = eigenvector_or_none(g)
    doc["eigenvector_tight"] = eigenvector_or_none(g, tol=1e-10, max_iter=1000)
    weighted = g.copy()
    for s, t in weighted.edges():
        weighted[s][t]["weight"] = weight_of(s, t)
    doc["eigenvector_weighted"] = eigenvector_or_none(weighted, weight="weight")
    doc["eigenvector_numpy"] = None
    if doc["eigenvector"] is not None:
        try:
            x = nx.eigenvector_centrality_numpy(g)
            doc["eigenvector_numpy"] = {str(v): float(c) for v, c in x.items()}
        except nx.AmbiguousSolution:  # disconnected: no unique leading eigenvector
            pass


def hits_or_none(hits, g, **kwargs):
    try:
        h, a = hits(g, **kwargs)
    except nx.PowerIterationFailedConvergence:
        return None
    return {"hub": {str(v): float(x) for v, x in h.items()}, "authority": {str(v): float(x) for v, x in a.items()}}


def add_hits(doc, g):
    from networkx.algorithms.link_analysis.hits_alg import _hits_python

    doc["hits"] = hits_or_none(_hits_python, g)
    doc["hits_raw"] = hits_or_none(_hits_python, g, tol=1e-10, max_iter=1000, normalized=False)
    weighted = g.copy()
    for s, t in weighted.edges():
        weighted[s][t]["weight"] = weight_of(s, t)
    doc["hits_weighted"] = hits_or_none(_hits_python, weighted)
    # On bipartite graphs the leading singular value is not simple: ARPACK and the power
    # iteration reach different vectors of its space, so there is nothing to compare.
    doc["hits_svd"] = None if nx.is_bipartite(g) else hits_or_none(nx.hits, g, max_iter=10000)


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
        add_eigenvector(doc, g)
        add_hits(doc, g)
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print(path, len(g), "vertices")


if __name__ == "__main__":
    main()
