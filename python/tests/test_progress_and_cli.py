"""Progress callbacks and the `outcore` console script."""

import os
import subprocess
import sys

import numpy as np
import pytest

import outcore


def test_progress_callback_gets_start_update_finish_events():
    events = []

    def record(event, bar, label, position, total, unit, message):
        events.append((event, bar, label, position, total, unit))

    g = outcore.generate_rmat(10, 8, 1, progress=record)
    g.pagerank(iterations=5, progress=record)
    kinds = {e[0] for e in events}
    assert {"start", "finish"} <= kinds
    started = {e[1] for e in events if e[0] == "start"}
    finished = {e[1] for e in events if e[0] == "finish"}
    assert started and finished <= started
    assert any(e[5] == "iterations" for e in events)


def test_set_progress_hook_and_bad_values():
    events = []
    outcore.set_progress(lambda *a: events.append(a[0]))
    try:
        outcore.Graph.from_edges([1, 2], [2, 3]).wcc()
    finally:
        outcore.set_progress(None)
    assert "start" in events
    with pytest.raises(outcore.InvalidParameter):
        outcore.Graph.from_edges([1, 2], [2, 3]).wcc(progress="yes")
    with pytest.raises(outcore.InvalidParameter):
        outcore.set_progress(3)


def test_a_failing_callback_does_not_stop_the_work():
    def broken(*_):
        raise RuntimeError("callback bug")

    r = outcore.Graph.from_edges([1, 2], [2, 3]).bfs(1, progress=broken)
    assert r.to_dict() == {1: 0, 2: 1, 3: 2}


def test_tqdm_draws_the_bars():
    pytest.importorskip("tqdm")
    from outcore import _progress

    assert isinstance(_progress.resolve(True), _progress.TqdmProgress)
    finished = {}

    class Recording(_progress.TqdmProgress):
        def __call__(self, event, bar, label, position, total, unit, message):
            drawn = self._bars.get(bar)
            super().__call__(event, bar, label, position, total, unit, message)
            if event == "finish":
                finished[label] = (drawn.n, drawn.total, position)

    recording = Recording()
    outcore.Graph.from_edges(np.arange(1000), np.arange(1, 1001)).pagerank(iterations=3, progress=recording)
    bars = [v for k, v in finished.items() if k.startswith("iterations")]
    assert bars == [(3, 3, 3)], finished
    assert recording._bars == {}  # every bar closed


def test_stats_report_the_calls_own_peak():
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("no /proc/self/clear_refs: the peak is the process's")
    import resource

    g = outcore.Graph.from_edges([1, 2], [2, 3])
    ballast = np.ones(400 * 2**20 // 8)  # 400 MiB touched, then freed, before the call
    del ballast
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the peak so far
    peak = g.pagerank(progress=False).stats["peak_rss_bytes"]
    assert before > 400 * 2**20
    assert peak < before - 300 * 2**20, (peak, before)


def test_console_script_runs_the_native_cli(tmp_path):
    run = lambda *args: subprocess.run([sys.executable, "-m", "outcore", *args], capture_output=True, text=True)
    assert run("--version").returncode == 0
    g = outcore.generate_rmat(8, 4, 1, tmp_path / "g")
    done = run("partition", "--store", str(tmp_path / "g"), "--ranks", "2")
    assert done.returncode == 0, done.stderr
    r = g.pagerank(engine="pregel", iterations=5, progress=False)
    assert r.stats["engine"] == "pregel"
    np.testing.assert_allclose(r.values, g.pagerank(engine="inmem", iterations=5, progress=False).values, rtol=1e-12)
    bad = run("run", "pr", "--store", str(tmp_path / "missing"))
    assert bad.returncode == 66 and "error:" in bad.stderr
