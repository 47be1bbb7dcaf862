#!/usr/bin/env bash
# Install ccfair with a profile-guided build of its simulator: the compiler lays out and
# inlines the code by branch counts from typical runs, for ~4% fewer instructions and 4-10%
# less wall time than `pip install .` (benches/README.md, "Profile-guided build").
#
#   bash scripts/install_pgo.sh           # install it
#   bash scripts/install_pgo.sh --check   # build it, install nothing: check that its results
#                                         # are those of the installed ccfair (scripts/test.sh)
#
# 1. `pip install .`: ccfair and its Python dependencies, a plain build (what is left if a
#    later step cannot run). Not with --check, which uses the ccfair already installed.
# 2. An instrumented wheel (rustc -Cprofile-generate), unpacked into a temporary directory.
# 3. scripts/pgo_train.py runs typical scenarios with it, writing branch counts.
# 4. llvm-profdata (of rustc's own LLVM: `rustup component add llvm-tools`) merges them.
# 5. The wheel built again with -Cprofile-use, installed over the plain one.
#
# Without llvm-profdata (a Rust not managed by rustup) it stops after step 1 and says so.
# The profile changes no arithmetic (Rust has no fast-math), so the results are bit-identical
# to the plain build's; --check shows it on every result table of the training scenarios.
# `python3 -c "import ccfair._core as c; print(c.BUILD_PGO)"` tells which build is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
case "${1:-}" in
    "") ;;
    --check) check=true ;;
    *)
        echo "usage: bash scripts/install_pgo.sh [--check]" >&2
        exit 2
        ;;
esac

step() { printf '\n== %s\n' "$*"; }
pip() { python3 -m pip --quiet --disable-pip-version-check "$@"; }

if ! $check; then
    step "plain build and the Python dependencies"
    pip install .
fi

# From here on a failure leaves the plain build installed (or, with --check, nothing).
set -E
$check || trap 'echo "install_pgo.sh: the profile-guided build failed (above);" \
    "ccfair stays installed with the plain build" >&2' ERR

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null 2>&1; then
    step "llvm-tools (llvm-profdata of rustc's LLVM)"
    rustup component add llvm-tools >/dev/null 2>&1 ||
        rustup component add llvm-tools-preview >/dev/null 2>&1 || true
fi
if [ ! -x "$profdata" ]; then
    echo "llvm-profdata not found at $profdata (rustup component add llvm-tools):" \
        "no profile-guided build; ccfair stays the plain build" >&2
    $check && exit 1
    exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ccfair-pgo.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Its own Cargo target directory: the instrumented build leaves the plain one in target/.
export CARGO_TARGET_DIR="$work/target"
# RUSTFLAGS set here replace the user's: keep theirs.
base_flags=${RUSTFLAGS:-}
# Run a command with the ccfair unpacked in $work/$1 first on the Python path.
with_site() {
    local site="$work/$1"
    shift
    PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$@"
}
# Build the wheel with extra rustc flags $2 and unpack it into $work/$1.
build_into() {
    RUSTFLAGS="$base_flags $2" pip wheel --no-deps -w "$work/wheel-$1" .
    pip install --no-deps --target "$work/$1" "$work/wheel-$1"/*.whl
    with_site "$1" python3 -c \
        "import ccfair, sys; sys.exit(not ccfair.__file__.startswith('$work/$1/'))" ||
        { echo "the ccfair in $work/$1 is not the one Python imports" >&2; exit 1; }
}

step "instrumented build"
build_into instrumented "-Cprofile-generate=$work/raw"

step "training run"
with_site instrumented python3 scripts/pgo_train.py
"$profdata" merge -o "$work/merged.profdata" "$work/raw"

step "profile-guided build"
build_into pgo "-Cprofile-use=$work/merged.profdata"
with_site pgo python3 -c "import ccfair._core as c; assert c.BUILD_PGO, 'not profile-guided'"

if $check; then
    step "results of the profile-guided build against the installed build's"
    python3 scripts/pgo_train.py --digest >"$work/plain.json"
    with_site pgo python3 scripts/pgo_train.py --digest >"$work/pgo.json"
    python3 - "$work/plain.json" "$work/pgo.json" <<'EOF'
import json, sys
plain, pgo = (json.load(open(p)) for p in sys.argv[1:])
assert not plain["pgo"] and pgo["pgo"], "expected the plain build installed, the other guided"
differ = [k for k in plain["digests"] if plain["digests"][k] != pgo["digests"].get(k)]
if differ or plain["digests"].keys() != pgo["digests"].keys():
    sys.exit(f"the profile-guided build's results differ from the plain build's: {differ}")
print(f"identical results on {len(plain['digests'])} scenarios (every table)")
EOF
    exit 0
fi

pip install --no-deps --force-reinstall "$work"/wheel-pgo/*.whl
python3 -c "import ccfair._core as c; assert c.BUILD_PGO, 'not the profile-guided build'"
echo "ccfair installed with the profile-guided build"
