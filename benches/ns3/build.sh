#!/bin/sh
# Builds benches/ns3/dumbbell against the system's ns-3 (Debian: apt-get install libns3-dev).
# Usage: benches/ns3/build.sh [OUTPUT]   (default: benches/ns3/build/dumbbell)
# Compiles at -O2 like the libraries (the program is a few hundred lines of set-up; the
# simulation runs inside libns3). Runs at idle priority where chrt exists.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/build/dumbbell"}
mods="ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control"
if ! pkg-config --exists $mods; then
    echo "build.sh: ns-3's pkg-config files are missing (Debian: apt-get install libns3-dev)" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
prio=""
if command -v chrt >/dev/null 2>&1 && chrt -i 0 true 2>/dev/null; then
    prio="chrt -i 0"
fi
# Debian's ns3-core.pc names /usr/lib/.../libgsl.so and libgslcblas.so, which only libgsl-dev
# provides; libns3-core already links libgsl.so.27 itself, so those two are left out rather
# than installing libgsl-dev. Its Cflags also carry a stray "-I/usr;" (harmless).
libs=""
for l in $(pkg-config --libs $mods); do
    case "$l" in
    */libgsl.so | */libgslcblas.so) ;;
    *) libs="$libs $l" ;;
    esac
done
# shellcheck disable=SC2046,SC2086
$prio ${CXX:-g++} -std=c++17 -O2 -DNDEBUG -o "$out" "$here/dumbbell.cc" \
    $(pkg-config --cflags $mods) $libs
echo "$out"
