#!/usr/bin/env bash
# Installs what building and testing outcore needs, when it is missing.
# As root on Debian/Ubuntu it installs system packages with apt; otherwise it says exactly
# what to install. Safe to run repeatedly: it does nothing when everything is present.
set -euo pipefail

missing_packages=()
need() { # need COMMAND DEBIAN_PACKAGE
    command -v "$1" >/dev/null 2>&1 || missing_packages+=("$2")
}

if ! command -v cargo >/dev/null 2>&1; then
    echo "error: cargo (Rust) is not installed. Install it with rustup:" >&2
    echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh" >&2
    exit 1
fi
need cc build-essential
need make make
need pkg-config pkg-config
# MPI for the distributed engines (`make test-mpi`, `--features mpi`): Open MPI, and clang for
# the bindings of the `mpi` crate (PLATFORM.md).
need mpirun openmpi-bin
need mpicc libopenmpi-dev
need clang clang
if command -v dpkg >/dev/null 2>&1 && ! dpkg -s libclang-dev >/dev/null 2>&1; then
    missing_packages+=(libclang-dev)
fi
# A headless browser for the run-report test (crates/outcore-cli/tests/report_cli.rs loads the
# page in Debian's chromium, screenshots it and checks the charts rendered). Optional: where the
# package cannot be installed the test says so and skips.
browser_missing=
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || browser_missing=chromium

if [ ${#missing_packages[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing system packages: ${missing_packages[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_packages[@]}"
    else
        echo "error: missing system packages; install them with:" >&2
        echo "  sudo apt-get install -y ${missing_packages[*]}" >&2
        exit 1
    fi
fi

if [ -n "$browser_missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing chromium (headless browser for the run-report test)"
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }; then
            echo "note: chromium could not be installed; the run-report browser test will skip" >&2
        fi
    else
        echo "note: chromium is not installed (sudo apt-get install -y chromium); the run-report browser test will skip" >&2
    fi
fi
