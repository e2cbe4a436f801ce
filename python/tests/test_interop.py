"""Inputs and outputs beyond numpy: pandas with any column names, pyarrow Tables, Parquet and
Arrow IPC files, scipy.sparse and networkx, checked against those libraries."""

import numpy as np
import pytest

import outcore

nx = pytest.importorskip("networkx")


def _random_edges(seed=1, n=200, m=1500):
    """Distinct random arcs (networkx's simple graphs keep one arc per pair)."""
    rng = np.random.default_rng(seed)
    pairs = np.unique(np.stack([rng.integers(0, n, m), rng.integers(0, n, m)], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))]
    return pairs[:, 0], pairs[:, 1], rng.random(len(pairs))


def _nx_of(src, dst, w=None, directed=True):
    G = nx.DiGraph() if directed else nx.Graph()
    if w is None:
        G.add_edges_from(zip(src.tolist(), dst.tolist()))
    else:
        G.add_weighted_edges_from(zip(src.tolist(), dst.tolist(), w.tolist()))
    return G


def _same_graph(g, G):
    """g (outcore) and G (networkx, simple) have the same vertices and arcs."""
    H = g.to_networkx()
    assert set(H.nodes) == set(G.nodes)
    assert set(H.edges) == set(G.edges)


def test_pandas_with_any_column_names(tmp_path):
    pd = pytest.importorskip("pandas")
    s, d, w = _random_edges()
    frame = pd.DataFrame({"u": s, "v": d, "w": w}).rename(columns={"u": "from_id", "v": "to_id"})
    g = outcore.Graph.from_edges(frame, src="from_id", dst="to_id", weight="w", store=tmp_path / "g")
    assert g.num_edges == len(s) and g.weighted
    G = _nx_of(s, d, w)
    want = nx.single_source_dijkstra_path_length(G, int(s[0]))
    got = {k: v for k, v in g.sssp(int(s[0]), progress=False).to_dict().items() if np.isfinite(v)}
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-9 for k in want)
    with pytest.raises(outcore.InvalidParameter, match="no column 'nope'"):
        outcore.Graph.from_edges(frame, src="nope", dst="to_id")
    with pytest.raises(outcore.InvalidParameter, match="name the edge columns with src= and dst="):
        outcore.Graph.from_edges(frame)


def test_arrow_table_parquet_and_ipc_files(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow.feather as feather

    s, d, _ = _random_edges(2)
    table = pa.table({"source": s, "target": d})
    G = _nx_of(s, d)
    _same_graph(outcore.Graph.from_edges(table, store=tmp_path / "t"), G)
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=100)  # many row groups
    _same_graph(outcore.Graph.from_edges(tmp_path / "e.parquet", store=tmp_path / "p", memory="4MiB"), G)
    feather.write_feather(table, tmp_path / "e.arrow", chunksize=128)
    _same_graph(outcore.Graph.from_edges(str(tmp_path / "e.arrow"), store=tmp_path / "a"), G)
    names = pa.table({"a": ["x", "y"], "b": ["y", "z"]})
    g = outcore.Graph.from_edges(names, src="a", dst="b")
    assert g.bfs("x", progress=False).to_dict() == {"x": 0, "y": 1, "z": 2}
    (tmp_path / "e.txt").write_text("1 2\n")
    with pytest.raises(outcore.InvalidParameter, match="not a Parquet or Arrow file"):
        outcore.Graph.from_edges(tmp_path / "e.txt")
    with pytest.raises(outcore.InputError, match="no such file"):
        outcore.Graph.from_edges(tmp_path / "missing.parquet")


def test_scipy_sparse_in_and_out(tmp_path):
    sparse = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(3)
    a = sparse.random_array((60, 60), density=0.05, random_state=rng, format="csr")
    g = outcore.Graph.from_edges(a, store=tmp_path / "g")
    assert g.num_vertices == 60 and g.weighted  # empty rows are vertices too
    back = g.to_scipy()
    assert (abs(back - a) > 1e-15).nnz == 0
    unweighted = (a != 0).astype(np.float64)
    assert not outcore.Graph.from_edges(unweighted).weighted
    # undirected graphs give a symmetric matrix
    s, d, _ = _random_edges(4, 30, 60)
    u = outcore.Graph.from_edges(s, d, directed=False)
    want = nx.to_scipy_sparse_array(nx.Graph(list(zip(s.tolist(), d.tolist()))), nodelist=u.vertices().tolist())
    got = u.to_scipy()
    assert (got != got.T).nnz == 0
    assert ((got > 0) != (want > 0)).nnz == 0


def test_networkx_round_trip_keeps_isolated_nodes_and_weights():
    G = nx.gnp_random_graph(50, 0.1, seed=5, directed=True)
    for i, (u, v) in enumerate(G.edges):
        G[u][v]["weight"] = 1.0 + i
    G.add_node(99)
    g = outcore.Graph.from_networkx(G)
    assert g.num_vertices == 51 and g.directed and g.weighted
    H = g.to_networkx()
    assert set(H.nodes) == set(G.nodes) and set(H.edges) == set(G.edges)
    assert all(H[u][v]["weight"] == G[u][v]["weight"] for u, v in G.edges)
    labelled = nx.relabel_nodes(nx.path_graph(3), {0: "a", 1: "b", 2: "c"})
    assert outcore.Graph.from_networkx(labelled).bfs("a", progress=False).to_dict() == {"a": 0, "b": 1, "c": 2}
    with pytest.raises(outcore.InputError, match="mix integers and strings"):
        outcore.Graph.from_networkx(nx.Graph([(1, "b")]))
    with pytest.raises(outcore.InvalidParameter, match="directed as G is"):
        outcore.Graph.from_networkx(nx.path_graph(3), directed=True)


def test_edges_are_streamed_in_chunks_and_degree_matches_networkx():
    s, d, _ = _random_edges(6, 300, 3000)
    g = outcore.Graph.from_edges(s, d)
    chunks = list(g.edges(chunk_size=500))
    assert len(chunks) > 3 and all(len(c[0]) <= 500 for c in chunks)
    arcs = sorted(zip(np.concatenate([c[0] for c in chunks]).tolist(), np.concatenate([c[1] for c in chunks]).tolist()))
    assert arcs == sorted(zip(s.tolist(), d.tolist()))
    M = nx.MultiDiGraph(list(zip(s.tolist(), d.tolist())))
    deg = g.degree()
    assert deg.to_dict() == dict(M.degree())
    assert deg.to_dict("in_degree") == dict(M.in_degree())
    assert deg.to_dict("out_degree") == dict(M.out_degree())


def test_to_pandas_has_na_for_unreachable():
    pd = pytest.importorskip("pandas")
    g = outcore.Graph.from_edges([1, 2, 4], [2, 3, 1], weights=[1.0, 2.0, 1.0])
    bfs = g.bfs(1, progress=False).to_pandas()
    assert str(bfs["value"].dtype) == "Int64"
    assert bfs["value"].isna().tolist() == [False, False, False, True]
    sssp = g.sssp(1, progress=False).to_pandas()
    assert str(sssp["value"].dtype) == "Float64"
    assert sssp["value"].isna().tolist() == [False, False, False, True]
    assert sssp["value"][2] == 3.0
    pr = g.pagerank(progress=False).to_pandas()
    assert pr["value"].dtype == np.float64


def test_from_edges_over_chunks_equals_one_chunk(tmp_path):
    s, d, w = _random_edges(7, 1000, 20000)
    small = outcore.Graph.from_edges(s, d, w, store=tmp_path / "a", memory="4MiB")  # 4096-edge chunks
    whole = outcore.Graph.from_edges(s, d, w, store=tmp_path / "b")
    assert small.num_edges == whole.num_edges == len(s)
    np.testing.assert_array_equal(small.pagerank(progress=False).values, whole.pagerank(progress=False).values)
    with pytest.raises(outcore.InvalidParameter, match="same length"):
        outcore.Graph.from_edges(s, d[:-1])


def test_an_error_in_a_later_chunk_is_raised_as_itself_and_leaves_no_store(tmp_path):
    pa = pytest.importorskip("pyarrow")
    src = np.arange(10_000, dtype=np.int64)
    dst = src + 1
    src[9_000] = -5  # in the last of several 4096-edge batches
    table = pa.table({"src": src, "dst": dst})
    with pytest.raises(outcore.InputError, match="non-negative"):
        outcore.Graph.from_edges(table, store=tmp_path / "g", memory="4MiB")
    assert not (tmp_path / "g").exists()


def _all_edges(g):
    """Every edge of a store as sorted (src, dst, weight) triples."""
    out = []
    for s, d, w in g.edges():
        weights = w.tolist() if w is not None else [None] * len(s)
        out.extend(zip(list(s), list(d), weights))
    return sorted(out, key=lambda e: (str(e[0]), str(e[1]), e[2] or 0))


def test_cli_imports_parquet_written_by_pyarrow_like_the_same_text(tmp_path):
    import subprocess
    import sys

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(7)
    u = rng.integers(0, 500, 3000, dtype=np.int64)
    v = rng.integers(0, 500, 3000).astype(np.uint32)
    w = rng.random(3000)
    table = pa.table({"note": pa.array(["x"] * 3000), "u": u, "v": v, "w": w})
    pq.write_table(table, tmp_path / "e.parquet", row_group_size=700)
    (tmp_path / "e.txt").write_text("".join(f"{a} {b} {float(c)!r}\n" for a, b, c in zip(u, v, w)))
    cli = lambda *args: subprocess.run([sys.executable, "-m", "outcore", "import", *args, "--quiet"],
                                       capture_output=True, text=True)
    done = cli(str(tmp_path / "e.parquet"), "--store", str(tmp_path / "p"), "--src-col", "u", "--dst-col", "v",
               "--weight-col", "w", "--memory", "16MiB")
    assert done.returncode == 0, done.stderr
    assert cli(str(tmp_path / "e.txt"), "--store", str(tmp_path / "t"), "--weighted").returncode == 0
    from_parquet, from_text = outcore.open(tmp_path / "p"), outcore.open(tmp_path / "t")
    assert from_parquet.num_edges == 3000 and from_parquet.weighted
    assert _all_edges(from_parquet) == _all_edges(from_text)

    # String ids (--ids string), and errors naming the file and the column.
    names = pa.table({"a": ["ann", "bob", "cy"], "b": ["bob", "cy", "ann"]})
    pq.write_table(names, tmp_path / "n.parquet")
    assert cli(str(tmp_path / "n.parquet"), "--store", str(tmp_path / "n"), "--ids", "string").returncode == 0
    assert _all_edges(outcore.open(tmp_path / "n")) == [("ann", "bob", None), ("bob", "cy", None), ("cy", "ann", None)]
    refused = cli(str(tmp_path / "n.parquet"), "--store", str(tmp_path / "x"))
    assert refused.returncode != 0 and "n.parquet" in refused.stderr and "column 'a'" in refused.stderr
    assert "--ids string" in refused.stderr
    missing = cli(str(tmp_path / "e.parquet"), "--store", str(tmp_path / "x"), "--src-col", "source")
    assert missing.returncode != 0 and "e.parquet" in missing.stderr and "--src-col 'source'" in missing.stderr
