#!/usr/bin/env bash
# perturb-soak.sh [SEEDS] [BUILD_DIR] - the timing-perturbation soak
# (docs/timing-perturbation.md): every scenario (startup, change, events,
# kill) over SEEDS seeds (default 10000; "A:B" = the seeds A..B) in a
# build configured with -DAUR_PERTURB=ON (default build-pt; configured here
# if it does not exist, and its aur-perturb target built).  May take hours.
#
# Environment: PERTURB_JOBS (runs at once, default: twice the number of
# CPUs, since a run mostly waits on its Apps and on perturbation sleeps),
# PERTURB_MAX_US (AUR_PERTURB_MAX_US, default 2000), PERTURB_TIMEOUT
# (seconds per run before it counts as a hang, default 180),
# PERTURB_SCENARIOS (default "startup,change,events,kill").
#
# Prints, per scenario, the seeds run and the violations (every violation
# also with its seed and the command that replays it), and exits 1 if
# there was any: the soak passes only with 0 violations everywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

seeds=${1:-10000}
build=${2:-build-pt}
jobs=${PERTURB_JOBS:-$((2 * $(nproc)))}
max_us=${PERTURB_MAX_US:-2000}
timeout=${PERTURB_TIMEOUT:-180}
scenarios=${PERTURB_SCENARIOS:-startup,change,events,kill}

case $seeds in
*:*) range=$seeds ;;
*) range="1:$seeds" ;;
esac

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUR_PERTURB=ON
fi
if ! grep -q '^AUR_PERTURB:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "perturb-soak: $build is not configured with -DAUR_PERTURB=ON" >&2
    exit 2
fi
# the runner, its server, the fixture, the library and plugins: up to date
nice -n 5 cmake --build "$build" -j"$(nproc)" --target aur-perturb

log="$build/perturb-soak-$(date +%Y%m%d-%H%M%S).log"
echo "perturb-soak: seeds $range, scenarios $scenarios, $jobs jobs," \
     "AUR_PERTURB_MAX_US=$max_us; log $log"
set +e
# One aur-perturb per scenario, one after the other, so each scenario's
# table comes out as soon as it is done.
status=0
IFS=, read -r -a list <<<"$scenarios"
for s in "${list[@]}"; do
    "$build/bin/aur-perturb" "$s" --seeds "$range" --jobs "$jobs" \
        --max-us "$max_us" --timeout "$timeout" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || status=1
done
set -e

echo
echo "perturb-soak summary (seeds $range):"
grep -E '^scenario ' "$log" | sed -E \
    's/^scenario +([a-z]+) +seeds ([0-9.]+)[^:]*: ([0-9]+) runs, .* ([0-9]+) VIOLATIONS.*wall ([0-9.]+ s)$/  \1: \3 seeds run, \4 violations (\5)/'
if [ "$status" -ne 0 ]; then
    echo "perturb-soak: FAILED (violations above; each prints its replay command)"
else
    echo "perturb-soak: passed (0 violations)"
fi
exit "$status"
