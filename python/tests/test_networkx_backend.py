"""The networkx backend: dispatch through nx.<function>(G, backend="outcore")."""

import math

import numpy as np

import pytest

nx = pytest.importorskip("networkx")
import outcore  # noqa: E402


@pytest.fixture
def directed():
    return nx.gnp_random_graph(60, 0.08, seed=3, directed=True)


@pytest.fixture
def undirected():
    G = nx.gnp_random_graph(60, 0.08, seed=4)
    G.add_node("isolated")
    return G


def test_backend_is_registered():
    assert "outcore" in nx.utils.backends.backends


def test_pagerank_matches_networkx(directed):
    ours = nx.pagerank(directed, backend="outcore")
    theirs = nx.pagerank(directed, tol=1e-12, max_iter=1000)
    assert ours.keys() == theirs.keys()
    for v in theirs:
        assert math.isclose(ours[v], theirs[v], rel_tol=1e-6)


def test_bfs_and_dijkstra_lengths(directed):
    source = next(iter(directed))
    assert nx.single_source_shortest_path_length(directed, source, backend="outcore") == dict(
        nx.single_source_shortest_path_length(directed, source)
    )
    for u, v in directed.edges:
        directed[u][v]["weight"] = (u * 7 + v) % 5 + 0.5
    ours = nx.single_source_dijkstra_path_length(directed, source, backend="outcore")
    theirs = nx.single_source_dijkstra_path_length(directed, source)
    assert ours.keys() == theirs.keys()
    for v in theirs:
        assert math.isclose(ours[v], theirs[v], rel_tol=1e-12)


def test_components(undirected, directed):
    ours = sorted(map(sorted, nx.connected_components(undirected, backend="outcore")), key=str)
    theirs = sorted(map(sorted, nx.connected_components(undirected)), key=str)
    assert ours == theirs
    assert nx.number_weakly_connected_components(directed, backend="outcore") == nx.number_weakly_connected_components(directed)


def test_clustering_undirected(undirected):
    ours = nx.clustering(undirected, backend="outcore")
    theirs = nx.clustering(undirected)
    for v in theirs:
        assert math.isclose(ours[v], theirs[v], rel_tol=1e-12)


def test_an_outcore_graph_goes_to_networkx_directly(tmp_path):
    g = outcore.Graph.from_edges([1, 2, 3], [2, 3, 1], store=tmp_path / "g")
    pr = nx.pagerank(g)
    assert set(pr) == {1, 2, 3}
    assert math.isclose(sum(pr.values()), 1.0, rel_tol=1e-9)


def test_positional_arguments_are_read_like_keywords():
    G = nx.karate_club_graph()
    ours = nx.pagerank(G, weight=None, backend="outcore")  # the example
    theirs = nx.pagerank(G, weight=None, tol=1e-12, max_iter=1000)
    assert all(math.isclose(ours[v], theirs[v], rel_tol=1e-6) for v in G)
    from outcore.networkx_backend import backend_interface as b

    assert b.can_run("pagerank", (G, 0.85, {0: 1.0}), {}) == "'personalization' is not supported"
    assert b.can_run("pagerank", (G, 0.85, None, 100, 1e-6, None, None), {}) is True
    assert isinstance(b.can_run("betweenness_centrality", (G, 5), {}), str)  # k given positionally


def test_at_least_forty_functions_are_dispatched():
    from outcore.networkx_backend import DISPATCHED, get_info

    assert len(DISPATCHED) >= 40, DISPATCHED
    assert set(get_info()["functions"]) == set(DISPATCHED)
    for name in DISPATCHED:
        assert name in nx.utils.backends._registered_algorithms, name


def _close(a, b):
    assert a.keys() == b.keys()
    for k in b:
        assert math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12), (k, a[k], b[k])


def test_new_functions_agree_with_networkx(undirected, directed):
    U, D = undirected, directed
    s, t = 0, 5
    assert nx.triangles(U, backend="outcore") == nx.triangles(U)
    assert math.isclose(nx.transitivity(U, backend="outcore"), nx.transitivity(U))
    assert math.isclose(nx.average_clustering(U, backend="outcore"), nx.average_clustering(U))
    for G in (U, D):
        _close(nx.betweenness_centrality(G, backend="outcore"), nx.betweenness_centrality(G))
        _close(nx.closeness_centrality(G, backend="outcore"), nx.closeness_centrality(G))
        assert nx.descendants(G, s, backend="outcore") == nx.descendants(G, s)
        assert nx.descendants_at_distance(G, s, 2, backend="outcore") == nx.descendants_at_distance(G, s, 2)
        assert nx.has_path(G, s, t, backend="outcore") == nx.has_path(G, s, t)
        assert [sorted(x, key=str) for x in nx.bfs_layers(G, [s, t], backend="outcore")] == [
            sorted(x, key=str) for x in nx.bfs_layers(G, [s, t])
        ]
        assert nx.shortest_path_length(G, s, backend="outcore") == nx.shortest_path_length(G, s)
        assert dict(nx.all_pairs_shortest_path_length(G, backend="outcore")) == dict(nx.all_pairs_shortest_path_length(G))
    assert nx.is_connected(U, backend="outcore") is False
    assert nx.is_weakly_connected(D, backend="outcore") == nx.is_weakly_connected(D)
    assert nx.is_strongly_connected(D, backend="outcore") == nx.is_strongly_connected(D)
    assert nx.node_connected_component(U, s, backend="outcore") == nx.node_connected_component(U, s)
    C = nx.connected_watts_strogatz_graph(40, 4, 0.2, seed=2)
    assert nx.eccentricity(C, backend="outcore") == nx.eccentricity(C)
    assert nx.diameter(C, backend="outcore") == nx.diameter(C)
    assert nx.radius(C, backend="outcore") == nx.radius(C)
    assert math.isclose(nx.average_shortest_path_length(C, backend="outcore"), nx.average_shortest_path_length(C))
    assert nx.approximation.diameter(C, backend="outcore") <= nx.diameter(C)
    assert nx.wiener_index(C, backend="outcore") == nx.wiener_index(C)
    assert nx.wiener_index(U, backend="outcore") == float("inf")
    assert sorted(nx.barycenter(C, backend="outcore")) == sorted(nx.barycenter(C))
    with pytest.raises(nx.NetworkXNotImplemented):
        nx.triangles(D, backend="outcore")


def test_weighted_distances_agree_with_networkx(directed):
    for u, v in directed.edges:
        directed[u][v]["weight"] = (u * 7 + v) % 5 + 0.5
    _close(nx.multi_source_dijkstra_path_length(directed, {0, 3}, backend="outcore"),
           nx.multi_source_dijkstra_path_length(directed, {0, 3}))
    reach = nx.single_source_dijkstra_path_length(directed, 0)
    t = max(reach, key=reach.get)
    assert math.isclose(nx.dijkstra_path_length(directed, 0, t, backend="outcore"), reach[t])
    assert math.isclose(nx.shortest_path_length(directed, 0, t, weight="weight", backend="outcore"), reach[t])


@pytest.mark.parametrize("seed,directed_graph", [(1, False), (2, False), (3, True), (4, True)])
def test_core_number_and_k_core_match_networkx(seed, directed_graph):
    G = nx.gnp_random_graph(80, 0.1, seed=seed, directed=directed_graph)
    G.add_node("isolated")
    want = nx.core_number(G)
    assert nx.core_number(G, backend="outcore") == want
    for k in (None, 0, 1, 2, max(want.values())):
        ours, theirs = nx.k_core(G, k=k, backend="outcore"), nx.k_core(G, k=k)
        assert set(ours.nodes) == set(theirs.nodes), k
        assert set(ours.edges) == set(theirs.edges), k


def test_core_number_refuses_self_loops_like_networkx():
    G = nx.karate_club_graph()
    G.add_edge(0, 0)
    with pytest.raises(nx.NetworkXNotImplemented, match="self loops"):
        nx.core_number(G, backend="outcore")


def test_graph_core_number_and_bfs_parents_against_networkx(tmp_path):
    G = nx.gnp_random_graph(120, 0.04, seed=7, directed=True)
    src, dst = zip(*G.edges)
    g = outcore.Graph.from_edges(list(src), list(dst), store=tmp_path / "g")
    cores = g.core_number(progress=False)
    assert cores.to_dict() == {v: c for v, c in nx.core_number(G).items() if v in set(src) | set(dst)}
    source = src[0]
    tree = g.bfs_parents(source, progress=False)
    depth, parent = tree.to_dict("depth"), tree.to_dict("parent")
    want = nx.single_source_shortest_path_length(G, source)
    for v in depth:
        if v not in want:
            assert depth[v] == np.iinfo(np.int64).max and parent[v] == v
        elif v == source:
            assert depth[v] == 0 and parent[v] == v
        else:
            assert depth[v] == want[v]
            # the parent: the smallest id among the in-neighbours one level up
            assert parent[v] == min(u for u in G.predecessors(v) if want.get(u) == want[v] - 1)


@pytest.mark.parametrize("directed_graph", [False, True])
def test_bfs_tree_functions_give_a_breadth_first_tree(directed_graph):
    G = nx.gnp_random_graph(70, 0.06, seed=11, directed=directed_graph)
    source = 0
    depth = nx.single_source_shortest_path_length(G, source)
    edges = list(nx.bfs_edges(G, source, backend="outcore"))
    assert {v for _, v in edges} == set(depth) - {source}
    seen = {source}
    for u, v in edges:  # breadth-first order: a parent comes before its children
        assert u in seen and G.has_edge(u, v) and depth[v] == depth[u] + 1
        seen.add(v)
    assert [depth[v] for _, v in edges] == sorted(depth[v] for _, v in edges)
    T = nx.bfs_tree(G, source, backend="outcore")
    assert set(T.edges) == set(edges) and set(T.nodes) == set(depth)
    assert dict(nx.bfs_predecessors(G, source, backend="outcore")) == {v: u for u, v in edges}
    successors = dict(nx.bfs_successors(G, source, backend="outcore"))
    assert sorted((u, v) for u, vs in successors.items() for v in vs) == sorted(edges)
    limited = list(nx.bfs_edges(G, source, depth_limit=2, backend="outcore"))
    assert limited == [(u, v) for u, v in edges if depth[v] <= 2]
    with pytest.raises(NotImplementedError):
        list(nx.bfs_edges(G, source, sort_neighbors=sorted, backend="outcore"))


def test_conversion_streams_edges_in_bounded_numpy_chunks(tmp_path):
    from outcore import networkx_backend as backend

    G = nx.gnm_random_graph(3000, 20000, seed=5, directed=True)
    G.add_node("lonely")
    for k, (u, v) in enumerate(G.edges):
        G[u][v]["w"] = 1.0 + k % 7
    index = {node: i for i, node in enumerate(G)}
    chunks = list(backend._NxEdgeChunks(G, index, "w", 1.0, 4096).chunks())
    assert [len(s) for s, _, _ in chunks] == [4096] * 4 + [20000 - 4 * 4096]
    assert all(s.dtype == np.uint64 and w.dtype == np.float64 for s, _, w in chunks)
    nodes = list(G)
    got = {(nodes[int(s)], nodes[int(d)]): float(w) for c in chunks for s, d, w in zip(*c)}
    assert got == {(u, v): d["w"] for u, v, d in G.edges(data=True)}

    # Through networkx with a small budget (chunks of 4096 edges): the same distances.
    previous = nx.config.backends.outcore.memory
    nx.config.backends.outcore.memory = "4MiB"
    try:
        store = backend.BackendInterface.convert_from_nx(G, edge_attrs={"w": 1.0})
        assert (store.num_vertices, store.num_edges, store.weighted, store.unit_weights) == (3001, 20000, True, False)
        _close(nx.single_source_dijkstra_path_length(G, 0, weight="w", backend="outcore"),
               nx.single_source_dijkstra_path_length(G, 0, weight="w"))
    finally:
        nx.config.backends.outcore.memory = previous


@pytest.mark.parametrize("graph", ["karate", "caveman", "planted"])
def test_louvain_communities_match_networkx(graph):
    G = {
        "karate": nx.karate_club_graph,
        "caveman": lambda: nx.connected_caveman_graph(5, 6),
        "planted": lambda: nx.planted_partition_graph(4, 25, 0.4, 0.02, seed=3),
    }[graph]()
    ours = nx.community.louvain_communities(G, seed=1, backend="outcore")
    assert isinstance(ours, list) and all(isinstance(c, set) for c in ours)
    assert set().union(*ours) == set(G) and sum(map(len, ours)) == len(G)
    theirs = [nx.community.louvain_communities(G, seed=s) for s in range(5)]
    q = nx.community.modularity(G, ours)
    best = max(nx.community.modularity(G, p) for p in theirs)
    assert q >= best - 0.02, (q, best)
    if graph != "karate":  # clear structure: the same partition as every networkx seed
        assert all(sorted(map(sorted, ours)) == sorted(map(sorted, p)) for p in theirs)


def test_graph_louvain_reports_modularity_and_refuses_bad_parameters(tmp_path):
    G = nx.karate_club_graph()
    src, dst = zip(*G.edges)
    g = outcore.Graph.from_edges(list(src), list(dst), directed=False, store=tmp_path / "s")
    r = g.louvain(progress=False)
    groups = {}
    for v, label in r.to_dict().items():
        groups.setdefault(label, set()).add(v)
        assert label <= v
    parts = list(groups.values())
    assert math.isclose(r.summary["modularity"], nx.community.modularity(G, parts, weight=None), abs_tol=1e-12)
    for bad in ({"resolution": 0}, {"resolution": -1.0}, {"threshold": -1e-3}, {"max_level": 0}):
        with pytest.raises(outcore.InvalidParameter):
            g.louvain(progress=False, **bad)
    d = outcore.Graph.from_edges([1, 2], [2, 3], directed=True, store=tmp_path / "d")
    with pytest.raises(outcore.InvalidParameter, match="undirected"):
        d.louvain(progress=False)
