#!/usr/bin/env bash
# Builds a release wheel of the Python package (the extension, the `outcore` console script,
# the networkx backend) tagged manylinux, so that pip installs it on other Linux machines
# without a Rust toolchain. Not part of `make test`: it is a long release build.
#
#   scripts/build-wheel.sh                 wheel tagged with the lowest manylinux level whose
#                                          glibc symbols the build uses (maturin's check)
#   ZIG=1 scripts/build-wheel.sh           link with zig against glibc 2.17: manylinux2014,
#                                          installable on almost every Linux (pip: ziglang)
#   COMPATIBILITY=manylinux_2_28 ...       ask for a given level (the build fails if the
#                                          binary needs a newer glibc)
#
# The wheel goes to target/wheels (WHEEL_DIR to change); `auditwheel show` then prints its
# tag and the external libraries it links (only the manylinux-allowed system libraries).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/wheel-venv
out=${WHEEL_DIR:-$PWD/target/wheels}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
packages=("maturin>=1.5,<2" auditwheel)
if [ "${ZIG:-0}" = 1 ]; then
    packages+=(ziglang)
fi
"$venv/bin/pip" install --quiet --upgrade "${packages[@]}"

args=(build --release --out "$out")
if [ "${ZIG:-0}" = 1 ]; then
    args+=(--zig --compatibility "${COMPATIBILITY:-manylinux2014}")
elif [ -n "${COMPATIBILITY:-}" ]; then
    args+=(--compatibility "$COMPATIBILITY")
fi
echo "build-wheel: maturin ${args[*]}"
(cd python && PATH="$PWD/../$venv/bin:$PATH" maturin "${args[@]}")

wheel=$(ls -t "$out"/outcore-*.whl | head -1)
echo "build-wheel: $wheel"
"$venv/bin/auditwheel" show "$wheel"
