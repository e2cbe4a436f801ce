"""The networkx backend: dispatch through nx.<function>(G, backend="outcore")."""

import math

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
