#!/usr/bin/env bash
# Keep kernel housekeeping off one CPU for kernel-backend studies (docs/validation/README.md,
# "A quiet machine"), and put it back afterwards.
#
#   sudo scripts/isolate_cpu.sh apply 0     # unbound kernel workers and IRQs leave CPU 0
#   sudo taskset -c 0 ccfair validate ...   # the study runs on CPU 0
#   sudo scripts/isolate_cpu.sh restore     # the previous settings come back
#
# Why: on a kernel without full preemption the forwarder's SCHED_FIFO thread cannot preempt
# kernel work running on its CPU, such as writeback by unbound workqueue workers or a block
# device's interrupt handling caused by a build on another CPU; it then forwards packets
# milliseconds late and the run is flagged. This changes system-wide settings
# (/sys/devices/virtual/workqueue/cpumask, /proc/irq/*/smp_affinity), which ccfair itself
# never does: run it only on a machine you are using for the study.
set -euo pipefail

saved=/run/ccfair-isolate-cpu.saved

mask_without() { # the hex CPU mask of every online CPU except $1
    local n mask=0 cpu
    n=$(nproc --all)
    for ((cpu = 0; cpu < n; cpu++)); do
        [ "$cpu" -eq "$1" ] || mask=$((mask | (1 << cpu)))
    done
    printf '%x' "$mask"
}

case "${1:-}" in
apply)
    cpu=${2:?usage: isolate_cpu.sh apply CPU}
    [[ "$cpu" =~ ^[0-9]+$ ]] && [ "$cpu" -lt "$(nproc --all)" ] ||
        { echo "CPU: '$cpu' is not a CPU of this machine (0 to $(($(nproc --all) - 1)))" >&2; exit 2; }
    [ -e "$saved" ] && { echo "already applied (restore first): $saved" >&2; exit 1; }
    mask=$(mask_without "$cpu")
    [ "$mask" != 0 ] || { echo "CPU $cpu is the only CPU" >&2; exit 1; }
    {
        echo "wq $(cat /sys/devices/virtual/workqueue/cpumask)"
        echo "default $(cat /proc/irq/default_smp_affinity)"
        for f in /proc/irq/[0-9]*/smp_affinity; do echo "irq $f $(cat "$f")"; done
    } >"$saved"
    echo "$mask" >/sys/devices/virtual/workqueue/cpumask
    echo "$mask" >/proc/irq/default_smp_affinity
    for f in /proc/irq/[0-9]*/smp_affinity; do
        echo "$mask" >"$f" 2>/dev/null || true # some interrupts cannot move
    done
    echo "kernel workers and interrupts now avoid CPU $cpu (mask $mask); saved in $saved"
    ;;
restore)
    [ -e "$saved" ] || { echo "nothing to restore ($saved missing)" >&2; exit 1; }
    while read -r kind a b; do
        case "$kind" in
        wq) echo "$a" >/sys/devices/virtual/workqueue/cpumask ;;
        default) echo "$a" >/proc/irq/default_smp_affinity ;;
        irq) echo "$b" >"$a" 2>/dev/null || true ;;
        esac
    done <"$saved"
    rm -f "$saved"
    echo "restored"
    ;;
*)
    echo "usage: isolate_cpu.sh apply CPU | restore" >&2
    exit 2
    ;;
esac
