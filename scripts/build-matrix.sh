#!/usr/bin/env bash
# Configure and build (every target, test programs included; no tests run)
# the optimised configurations users build, with -DAUR_WERROR=ON, and fail
# on any warning (a compiler warning is an error there; the log is also
# searched for warnings -Werror does not cover, e.g. the linker's):
#
#   gcc   Release          PREFIX-gcc-release
#   clang Release          PREFIX-clang-release
#   clang RelWithDebInfo   PREFIX-clang-relwithdebinfo
#
# (gcc RelWithDebInfo is scripts/test.sh's build.)
# usage: scripts/build-matrix.sh [PREFIX]      (default build-matrix)
#   JOBS   parallel jobs per build (default 2)
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=${1:-build-matrix}
JOBS=${JOBS:-2}
configs=("gcc Release" "clang Release" "clang RelWithDebInfo")

for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "build-matrix.sh: $cc not found (apt-get install clang)" >&2
        exit 2
    fi
done

fail=0
for c in "${configs[@]}"; do
    read -r cc type <<<"$c"
    dir=$prefix-$cc-$(tr '[:upper:]' '[:lower:]' <<<"$type")
    t0=$(date +%s)
    mkdir -p "$dir"
    log=$dir/build-matrix.log
    # A fresh cache each time: CC is only read when a cache is created.
    rm -f "$dir/CMakeCache.txt"
    if CC=$cc nice -n 5 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" \
            -DAUR_WERROR=ON -DAUR_SANITIZE=OFF -DAUR_TSAN=OFF >"$log" 2>&1 &&
       nice -n 5 cmake --build "$dir" -j"$JOBS" -- -k >>"$log" 2>&1; then
        rc=0
    else
        rc=1
    fi
    # -k: every failing file is in the log, not just the first.
    warn=$(grep -E -i '(^|[^a-z_])(warning|error):' "$log" |
           grep -v '^gmake' | sort -u)
    if [ "$rc" != 0 ] || [ -n "$warn" ]; then
        status=FAIL
        fail=1
    else
        status=ok
    fi
    printf 'build-matrix: %-5s %-15s %-4s %3ds  %s\n' "$cc" "$type" "$status" \
        "$(($(date +%s) - t0))" "$dir"
    if [ "$status" = FAIL ]; then
        if [ -n "$warn" ]; then
            grep -E -B4 -A6 -i '(^|[^a-z_])(warning|error):' "$log" |
                grep -v '^\[ *[0-9]*%\]' | head -n 200
        else
            tail -n 40 "$log"
        fi
    fi
done
exit $fail
