#!/usr/bin/env bash
# scale.sh [N] [BUILD_DIR] - the scale test (tests/scale_test.sh,
# docs/fault-matrix.md "At scale") with N Apps on one host: default 1000,
# against BUILD_DIR (default build; configured RelWithDebInfo with
# -DAUR_WERROR=ON if it does not exist).  CTest runs the same test with
# 200 Apps (scale_test).
#
# N Apps need about 10 N descriptors in the host (docs/budgets.md, "File
# descriptors"): the CLI raises its soft limit to the hard limit, so the
# hard limit (ulimit -Hn) must be above that; this script says so before
# it starts rather than letting the test fail on it.  The fixture servers
# are N processes plus N supervisors: the user's process limit (ulimit -u)
# must leave room for 2 N more.
#
# Environment: AUR_KEEP=1 keeps the test's directory (config, logs,
# outputs, journal).  ASAN_OPTIONS etc. pass through to the build's
# binaries (for a sanitizer build).  Prints each step's wall time; exits
# with the test's status.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
build=${2:-build}
case $n in '' | *[!0-9]*) echo "scale.sh: N must be a number" >&2; exit 2 ;; esac

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUR_WERROR=ON
fi
cmake --build "$build" -j"$(nproc)" --target aurora-mcp-cli transport-stdio \
    ext-tool-contract ext-world-events aur-fixture-server

need=$((11 * n + 64))
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
    echo "scale.sh: $n Apps need about $need descriptors, the hard limit is" \
         "$hard (raise it: ulimit -Hn, or LimitNOFILE= / limits.conf)" >&2
    exit 2
fi
procs=$(ulimit -u)
if [ "$procs" != unlimited ] && [ "$procs" -lt $((2 * n + 256)) ]; then
    echo "scale.sh: $n Apps are $((2 * n)) processes, ulimit -u is $procs" >&2
    exit 2
fi
t0=$(date +%s)
status=0
bash tests/scale_test.sh "$build" . "$n" || status=$?
echo "scale.sh: $n Apps, $(($(date +%s) - t0)) s in all, exit $status"
exit "$status"
