"""The Python API: construction, results, errors, and agreement with the CLI."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import outcore
from conftest import GRAPHALYTICS, graphalytics_graphs, properties


def test_from_edges_numpy_and_results(tmp_path):
    g = outcore.Graph.from_edges(np.array([10, 20, 30, 10]), np.array([20, 30, 10, 30]), store=tmp_path / "g")
    assert (g.num_vertices, g.num_edges, g.directed) == (3, 4, True)
    r = g.bfs(20)
    assert r.ids.tolist() == [10, 20, 30]
    assert r.to_dict() == {10: 2, 20: 0, 30: 1}
    pr = g.pagerank(iterations=30)
    assert pr.values.dtype == np.float64
    assert math.isclose(pr.values.sum(), 1.0, rel_tol=1e-9)
    assert pr.stats["engine"] in ("inmem", "stream", "cache")
    assert pr.stats["iterations"] == 30


def test_from_edges_pandas_with_weights_and_strings(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"src": ["a", "b", "a"], "dst": ["b", "c", "c"], "weight": [1.0, 1.0, 5.0]})
    g = outcore.Graph.from_edges(frame, store=tmp_path / "g")
    assert g.weighted
    d = g.sssp("a").to_dict()
    assert d == {"a": 0.0, "b": 1.0, "c": 2.0}
    df = g.wcc().to_pandas()
    assert list(df.columns) == ["vertex", "value"]
    assert set(df["value"]) == {"a"}


def test_temporary_store_and_repr():
    g = outcore.Graph.from_edges([1, 2], [2, 3])
    assert "3 vertices" in repr(g)
    r = g.wcc()
    assert "wcc" in repr(r) and len(r) == 3


@pytest.mark.parametrize("name", graphalytics_graphs())
def test_every_algorithm_equals_the_cli(tmp_path, cli, name):
    props = properties(name)
    store = tmp_path / "store"
    g = outcore.import_edges(GRAPHALYTICS / f"{name}.properties", store)
    algorithms = [a.strip() for a in props["algorithms"].split(",")]
    for algo in algorithms:
        params, cli_args = {}, []
        if algo in ("bfs", "sssp"):
            params["source"] = props[f"{algo}.source-vertex"]
            cli_args = ["--source", props[f"{algo}.source-vertex"]]
        if algo == "cdlp":
            params["iterations"] = int(props["cdlp.max-iterations"])
            cli_args = ["--iterations", props["cdlp.max-iterations"]]
        if algo == "pr":
            params["iterations"] = int(props["pr.num-iterations"])
            params["damping"] = float(props["pr.damping-factor"])
            cli_args = ["--iterations", props["pr.num-iterations"], "--damping", props["pr.damping-factor"]]
        out = tmp_path / f"{algo}.txt"
        cli("run", algo, "--store", str(store), "--output", str(out), "--quiet", *cli_args)
        expected = {}
        for line in out.read_text().splitlines():
            vertex, value = line.split()
            expected[int(vertex)] = value
        got = g.run(algo, **params)
        assert got.ids.tolist() == sorted(expected)
        for vertex, value in zip(got.ids.tolist(), got.values.tolist()):
            want = expected[vertex]
            if want in ("infinity", "inf"):
                assert math.isinf(value)
            elif got.kinds[next(iter(got.columns))] == "float":
                assert math.isclose(float(want), value, rel_tol=1e-14, abs_tol=0.0), (algo, vertex)
            else:
                assert int(want) == value, (algo, vertex)


def test_errors_are_typed_with_clear_messages(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\n3 x\n")
    with pytest.raises(outcore.InputError, match=r"bad.txt:2: .*invalid vertex id 'x'"):
        outcore.import_edges(bad, tmp_path / "s")
    assert not (tmp_path / "s").exists()
    with pytest.raises(outcore.StoreError, match="does not exist"):
        outcore.open(tmp_path / "missing")
    g = outcore.Graph.from_edges([1], [2], store=tmp_path / "g")
    with pytest.raises(ValueError, match="not in the graph"):
        g.bfs(99)
    with pytest.raises(outcore.MemoryBudgetError):
        g.pagerank(engine="inmem", memory="1B")
    assert issubclass(outcore.InputError, outcore.OutcoreError)
    assert issubclass(outcore.MemoryBudgetError, outcore.OutcoreError)
    with pytest.raises(outcore.InputError):
        outcore.Graph.from_edges(np.array([1.5]), np.array([2.5]))


def test_ctrl_c_interrupts_a_run_and_leaves_the_store_intact(tmp_path):
    store = tmp_path / "g"
    rng = np.random.default_rng(1)
    n = 200_000
    outcore.Graph.from_edges(rng.integers(0, n, 2_000_000), rng.integers(0, n, 2_000_000), store=store)
    script = textwrap.dedent(
        f"""
        import signal, sys, outcore
        # A shell that starts the test suite in the background leaves SIGINT ignored, and Python
        # keeps an inherited SIG_IGN: restore the default handler so the test sees outcore's
        # behaviour, not the parent's signal disposition.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        g = outcore.open({str(store)!r})
        print("started", flush=True)
        try:
            g.pagerank(iterations=100000, progress=False)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    time.sleep(1.5)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 3 and "interrupted" in out
    assert outcore.open(store).num_vertices > 0


def test_every_engine_algorithm_has_a_method(tmp_path):
    nx = pytest.importorskip("networkx")
    G = nx.grid_2d_graph(4, 5)
    index = {n: i for i, n in enumerate(G)}
    src = [index[u] for u, v in G.edges] + [index[v] for u, v in G.edges]
    dst = [index[v] for u, v in G.edges] + [index[u] for u, v in G.edges]
    g = outcore.Graph.from_edges(src, dst, store=tmp_path / "grid")
    assert g.diameter(progress=False) == nx.diameter(G) == 7
    bc = g.betweenness(num_sources=g.num_vertices, progress=False).to_dict()
    ref = nx.betweenness_centrality(G)
    for node, i in index.items():
        assert math.isclose(bc[i], ref[node], rel_tol=1e-9, abs_tol=1e-12)
    m = g.mssp(sources=[0, 19], progress=False)
    assert list(m.columns) == ["0", "19"] and m.columns["19"][19] == 0.0
    assert m.columns["0"][19] == 7.0
    ms = g.msbfs(sources=[0, 19], progress=False)
    assert len(ms) == 20
    for engine in ("inmem", "stream", "cache"):
        assert g.bfs(0, engine=engine, memory="64MiB", progress=False).to_dict() == g.bfs(0, progress=False).to_dict()


def test_import_with_an_ordering_keeps_original_ids(tmp_path):
    edges = tmp_path / "e.txt"
    edges.write_text("".join(f"{i} {(i * 7 + 3) % 50}\n" for i in range(50)))
    plain = outcore.import_edges(edges, tmp_path / "plain")
    ordered = outcore.import_edges(edges, tmp_path / "norder", order="norder")
    assert ordered.info()["orderings"] == ["norder"]
    assert ordered.wcc(progress=False).to_dict() == plain.wcc(progress=False).to_dict()
    assert ordered.bfs(3, progress=False).to_dict() == plain.bfs(3, progress=False).to_dict()


def test_shards_engine_options_reach_the_engine(tmp_path):
    g = outcore.generate_rmat(10, 8, 3, tmp_path / "g")
    want = g.pagerank_delta(tolerance=1e-6, engine="inmem").values
    for dynamic, delivery in [("off", "adjacency"), ("ods", "adjacency"), ("ods", "shadow"), ("ads", "adjacency")]:
        options = {"shards": 8, "dynamic": dynamic, "delayed_delivery": delivery, "shadow_edge_share": 0.5,
                   "delay_buffer": "4KiB"}
        r = g.pagerank_delta(tolerance=1e-6, engine="shards", memory="64MiB", engine_options=options)
        assert r.stats["engine"] == "shards"
        assert r.stats["shards"] == 8
        assert r.stats["dynamic_policy"] == dynamic
        assert r.stats["delayed_delivery"] == delivery
        # Both runs end within tolerance·d/(1 − d) (L1) of the fixed point.
        assert np.abs(r.values - want).sum() <= 2 * 1e-6 * 0.85 / 0.15
        kinds = {step["kind"] for step in r.stats["per_iteration"]}
        assert ("dynamic" in kinds) == (dynamic != "off"), (dynamic, kinds)
    with pytest.raises(ValueError, match="unknown engine option 'shard'"):
        g.wcc(engine="shards", engine_options={"shard": 8})


def test_pregel_engine_options_reach_the_engine(tmp_path):
    g = outcore.generate_rmat(10, 8, 3, tmp_path / "g")
    want = g.pagerank(iterations=8, engine="inmem", progress=False).values
    basic = g.pagerank(iterations=8, engine="pregel", memory="64MiB", progress=False)
    recoded = g.pagerank(iterations=8, engine="pregel", memory="64MiB", progress=False,
                         engine_options={"recode": True, "message_file_size": "64KiB"})
    for r in (basic, recoded):
        assert r.stats["engine"] == "pregel"
        assert np.allclose(r.values, want, rtol=1e-9, atol=1e-12)
    # A single recoded rank pulls PageRank (messages fold in memory); a basic one pushes.
    assert {step["delivery"] for step in recoded.stats["per_iteration"]} == {"pull"}
    assert "pull" not in {step.get("delivery") for step in basic.stats["per_iteration"]}
    sent = [r.stats["pregel"]["per_rank"][0]["message_bytes_sent"] for r in (recoded, basic)]
    assert sent[0] == 0 < sent[1], sent
    assert recoded.stats["pregel"]["message_file_size"] == 64 << 10


def test_parameters_are_checked_before_any_work(tmp_path):
    g = outcore.Graph.from_edges([1, 2, 3], [2, 3, 1], store=tmp_path / "g")
    with pytest.raises(outcore.InvalidParameter, match="bfs does not take iterations"):
        g.bfs(1, iterations=3)
    with pytest.raises(outcore.InvalidParameter, match="unknown algorithm 'leiden'"):
        g.run("leiden")
    with pytest.raises(outcore.InvalidParameter, match="iterations must be a non-negative integer"):
        g.pagerank(iterations=-1)
    with pytest.raises(outcore.InvalidParameter, match="not in the graph"):
        g.bfs(10**9)
    with pytest.raises(outcore.InvalidParameter):
        g.bfs(1, engine="warp")
    assert g.pagerank(memory=10**8, progress=False).stats["iterations"] == 10  # the CLI's default
    with pytest.raises(outcore.InvalidParameter, match="memory must be"):
        g.pagerank(memory=-5)
    with pytest.raises(outcore.InvalidParameter, match="scale must be an integer in 1..32"):
        outcore.generate_rmat(40)
    with pytest.raises(outcore.InputError, match="integers but dst ids are strings|mix integers and strings"):
        outcore.Graph.from_edges([1, "b"], [2, "c"])
    with pytest.raises(outcore.StoreError, match="overwrite=True"):
        outcore.Graph.from_edges([1], [2], store=tmp_path / "g")
    assert outcore.Graph.from_edges([7], [8], store=tmp_path / "g", overwrite=True).num_vertices == 2


def test_every_error_is_an_outcore_error_in_python_terms(tmp_path):
    for cls in (outcore.InputError, outcore.StoreError, outcore.BudgetError, outcore.InvalidParameter,
                outcore.Interrupted):
        assert issubclass(cls, outcore.OutcoreError)
    assert issubclass(outcore.InvalidParameter, ValueError)
    assert issubclass(outcore.Interrupted, KeyboardInterrupt)
    assert outcore.MemoryBudgetError is outcore.BudgetError
    g = outcore.generate_rmat(12, 16, 1, tmp_path / "g")
    with pytest.raises(outcore.BudgetError) as caught:
        g.pagerank(engine="inmem", memory="64KiB", progress=False)
    assert "memory=" in str(caught.value) and "--" not in str(caught.value), caught.value
    with pytest.raises(outcore.InvalidParameter) as caught:
        g.wcc(engine="shards", engine_options={"dynamic": "fast"})
    assert 'engine_options["dynamic"]' in str(caught.value) and "--" not in str(caught.value)


def test_auto_plans_within_memory_and_explains(tmp_path, capsys):
    # RMAT-14 needs about 4 MiB in memory; 2 MiB leaves only the out-of-core engines.
    g = outcore.generate_rmat(14, 16, 1, tmp_path / "g")
    ample = g.pagerank(iterations=5, progress=False)
    small = g.pagerank(iterations=5, memory="2MiB", progress=False, explain=True)
    printed = capsys.readouterr().out
    assert small.stats["engine"] != "inmem"
    assert small.stats["engine_reason"].startswith("auto: ")
    assert small.stats["plan"]["memory"]
    for engine in ("inmem", "stream", "cache", "shards", "pregel", "nwsm"):
        assert engine in small.explanation
    assert small.explanation in printed
    np.testing.assert_allclose(small.values, ample.values, rtol=1e-9)


def test_result_report_draws_runs_side_by_side(tmp_path):
    g = outcore.generate_rmat(8, path=tmp_path / "g", progress=False)
    inmem = g.pagerank(engine="inmem", progress=False)
    stream = g.pagerank(engine="stream", memory="16MiB", progress=False)
    page = inmem.report(tmp_path / "r.html", stream)
    with open(page, encoding="utf-8") as f:
        html = f.read()
    # Four charts per run, two comparison charts, one table row per run; stream splits time.
    assert html.count('<svg class="chart"') == 2 * 4 + 2
    assert html.count('<tr class="run">') == 2
    assert "<td>inmem</td>" in html and "<td>stream</td>" in html
    assert 'data-series="I/O wait"' in html
    with pytest.raises(outcore.OutcoreError, match="no-such-dir"):
        inmem.report(tmp_path / "no-such-dir" / "r.html")


def _charts(markup):
    """The chart elements of a plot's markup, each as its text."""
    return [c.split("</svg>")[0] for c in markup.split('<svg class="chart"')[1:]]


def test_result_plot_renders_the_report_charts_inline(tmp_path):
    import xml.etree.ElementTree as ET

    g = outcore.generate_rmat(8, path=tmp_path / "g", progress=False)
    inmem = g.pagerank(iterations=5, engine="inmem", progress=False)
    stream = g.pagerank(iterations=5, engine="stream", memory="16MiB", progress=False)
    plot = inmem.plot(stream)
    assert plot.num_charts == 2 * 4 + 2 and "10 charts" in repr(plot)
    for markup in (plot._repr_html_(), plot._repr_svg_()):
        charts = _charts(markup)
        assert len(charts) == 10
        for chart in charts:
            assert "no per-iteration figures" not in chart and '<g class="series"' in chart
        # Lines have a dot per iteration; time bars share one scale per row, so the fast inmem
        # run's bars may be thinner than a pixel beside the stream run's: one of them shows.
        lines = [c for c in charts if 'data-metric="time"' not in c]
        assert len(lines) == 8 and all(c.count("<circle ") >= 5 for c in lines)
        assert any("<rect " in c for c in charts if 'data-metric="time"' in c)
    assert plot._repr_html_().startswith('<div class="outcore-report">') and "<script" not in plot.html
    root = ET.fromstring(plot._repr_svg_())  # a well-formed standalone SVG document
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//{http://www.w3.org/2000/svg}svg")) == 10
    svg_file, page = plot.save(tmp_path / "p.svg"), plot.save(tmp_path / "p.html")
    assert open(svg_file, encoding="utf-8").read() == plot.svg
    assert open(page, encoding="utf-8").read().count('<svg class="chart"') == 10
    with pytest.raises(outcore.OutcoreError, match="p.png"):
        plot.save(tmp_path / "p.png")


def test_result_plot_of_a_one_iteration_run():
    g = outcore.Graph.from_edges([1, 2, 3], [2, 3, 1])
    result = g.pagerank(iterations=1, engine="inmem", progress=False)
    assert len(result.stats["per_iteration"]) == 1
    plot = result.plot()
    assert plot.num_charts == 4
    for chart in _charts(plot.html):
        assert "no per-iteration figures" not in chart
        # One bar, or one dot on each line.
        assert chart.count("<rect ") == 1 or chart.count("<circle ") >= 1


def test_katz_equals_networkx(tmp_path):
    nx = pytest.importorskip("networkx")
    G = nx.karate_club_graph()
    g = outcore.Graph.from_edges([u for u, _ in G.edges()], [v for _, v in G.edges()], store=tmp_path / "k",
                                 directed=False)
    got = g.katz(progress=False).to_dict()
    want = nx.katz_centrality(G)
    assert got.keys() == want.keys()
    assert max(abs(got[v] - want[v]) for v in want) < 1e-12
    raw = g.katz(alpha=0.05, beta=2.0, tol=1e-9, normalized=False, progress=False).to_dict()
    want = nx.katz_centrality(G, alpha=0.05, beta=2.0, tol=1e-9, normalized=False)
    assert max(abs(raw[v] - want[v]) for v in want) < 1e-12
    with pytest.raises(ValueError, match="did not converge"):
        g.katz(alpha=0.5, max_iter=20, progress=False)


def test_eigenvector_equals_networkx(tmp_path):
    nx = pytest.importorskip("networkx")
    G = nx.karate_club_graph()  # edges carry a "weight" attribute
    src, dst = zip(*G.edges())
    weights = [G[u][v]["weight"] for u, v in G.edges()]
    g = outcore.Graph.from_edges(list(src), list(dst), weights=weights, store=tmp_path / "k", directed=False)
    got = g.eigenvector(progress=False).to_dict()
    want = nx.eigenvector_centrality(G)
    assert got.keys() == want.keys()
    assert max(abs(got[v] - want[v]) for v in want) < 1e-12
    got = g.eigenvector(weighted=True, tol=1e-9, max_iter=500, progress=False).to_dict()
    want = nx.eigenvector_centrality(G, weight="weight", tol=1e-9, max_iter=500)
    assert max(abs(got[v] - want[v]) for v in want) < 1e-12
    with pytest.raises(outcore.OutcoreError, match="did not converge in 3 iterations"):
        g.eigenvector(max_iter=3, progress=False)


def test_hits_equals_networkx(tmp_path):
    nx = pytest.importorskip("networkx")
    from networkx.algorithms.link_analysis.hits_alg import _hits_python

    G = nx.gnp_random_graph(60, 0.08, seed=5, directed=True)
    src, dst = zip(*G.edges())
    g = outcore.Graph.from_edges(list(src), list(dst), store=tmp_path / "h", directed=True)
    r = g.hits(progress=False)
    assert list(r.columns) == ["hub", "authority"] and sorted(r.ids.tolist()) == sorted(G)
    hubs, authorities = _hits_python(G)
    got_h = dict(zip(r.ids.tolist(), r.columns["hub"].tolist()))
    got_a = dict(zip(r.ids.tolist(), r.columns["authority"].tolist()))
    assert max(abs(got_h[v] - hubs[v]) for v in G) < 1e-12
    assert max(abs(got_a[v] - authorities[v]) for v in G) < 1e-12
    # networkx's public hits (ARPACK's SVD) reaches the same vectors.
    hubs, authorities = nx.hits(G, tol=1e-12, max_iter=10000)
    r = g.hits(tol=1e-12, max_iter=10000, progress=False)
    got_h = dict(zip(r.ids.tolist(), r.columns["hub"].tolist()))
    assert max(abs(got_h[v] - hubs[v]) for v in G) < 1e-9
    with pytest.raises(outcore.OutcoreError, match="did not converge in 2 iterations"):
        g.hits(max_iter=2, progress=False)
