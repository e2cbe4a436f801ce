"""Shared fixtures: the Graphalytics validation graphs and the CLI binary."""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRAPHALYTICS = ROOT / "crates" / "outcore" / "tests" / "data" / "graphalytics"


def outcore_binary() -> str:
    """The CLI to compare against: $OUTCORE_BIN, else the workspace's build."""
    if os.environ.get("OUTCORE_BIN"):
        return os.environ["OUTCORE_BIN"]
    for profile in ("release", "debug"):
        candidate = ROOT / "target" / profile / "outcore"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("outcore")
    if found:
        return found
    pytest.fail("no outcore binary: build it with `cargo build` or set OUTCORE_BIN")


@pytest.fixture(scope="session")
def cli():
    binary = outcore_binary()

    def run(*args: str) -> str:
        done = subprocess.run([binary, *args], capture_output=True, text=True)
        assert done.returncode == 0, f"outcore {' '.join(args)} failed: {done.stderr}"
        return done.stdout

    return run


def graphalytics_graphs():
    return sorted(p.stem for p in GRAPHALYTICS.glob("*.properties"))


def properties(name: str) -> dict:
    props = {}
    for line in (GRAPHALYTICS / f"{name}.properties").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            props[key.strip().removeprefix(f"graph.{name}.")] = value.strip()
    return props
