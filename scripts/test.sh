#!/usr/bin/env bash
# Install everything ccfair needs and run all tests: the README's second command, and what CI
# runs (.ci/run). Works on a fresh machine with Rust, Python 3.11 and pip.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

# Debian packages the tests need: chromium renders the HTML report (report test); the kernel
# backend's, as README.md ("Install") lists them: iproute2's `ip` builds the namespaces and
# `tc` the veth data path's qdiscs (kernel tests); clang and libbpf-dev build ccfair's BPF
# congestion controls (bpf/, compiled by crates/ccfair-emu/build.rs, which looks for them
# again on the next build if they were missing) and libbpf1 loads them; bpftool inspects
# them (docs/kernel.md). Installed before the Python package, whose build needs them.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
{ command -v ip && command -v tc; } >/dev/null 2>&1 || missing+=(iproute2)
command -v clang >/dev/null 2>&1 || missing+=(clang)
[ -f /usr/include/bpf/bpf_helpers.h ] || missing+=(libbpf-dev)
command -v bpftool >/dev/null 2>&1 || missing+=(bpftool)
if [ "${#missing[@]}" -gt 0 ]; then
    step "Debian packages: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

step "Python package (builds the Rust extension) and test tools"
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"

step "Rust: format, lints, tests"
cargo fmt --all --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# ccfair-py is a Python extension module: it is tested through pytest, not linked by cargo.
cargo test --workspace --exclude ccfair-py --quiet

step "Python: lints and tests"
python3 -m ruff check python tests
python3 -m ruff format --check python tests
# Imports only go down (docs/architecture.md): import-linter's contracts in pyproject.toml.
python3 -c 'import sys; from importlinter.cli import lint_imports_command as lint; sys.exit(lint())' \
    --no-logo --no-cache
# Types (pyproject.toml [tool.mypy]): strict on spec, results and execution.
python3 -m mypy python/ccfair
# -rs lists every skipped test with its reason (e.g. the kernel backend without root).
python3 -m pytest -q -rs
# The examples in the docstrings of the public API are tests too (those marked +SKIP need
# root or minutes of real time and are shown, not run).
python3 -m pytest -q --doctest-modules python/ccfair

step "Profile-guided build (scripts/install_pgo.sh): builds, and gives the same results"
# It needs llvm-profdata of rustc's LLVM, which rustup installs; a Rust without rustup
# cannot make this build (the install script then keeps the plain one), so it is not checked.
if command -v rustup >/dev/null 2>&1; then
    bash scripts/install_pgo.sh --check
else
    echo "not checked: no rustup to install llvm-tools (llvm-profdata)"
fi
