#!/usr/bin/env bash
# memcheck over the integration suites and the parsers: no errors and no
# definite leaks in the host (Apps and peers it starts are not traced; a
# forked Check test stays under valgrind, so each test counts).
# usage: scripts/valgrind.sh [BUILD_DIR] [SUITE...]   (after scripts/build.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
shift || true
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(check_startup check_calls check_faults
    check_budgets check_ext_world_events_host check_ext_tool_contract
    check_peers check_peers_http check_journal check_journal_pg_ops
    check_config check_jsonx
    check_oom check_call_reply check_api_text check_async check_call_start
    check_rpc_pool check_status_live)
# Check's per-test timeouts stretch under valgrind; assertions do not.
export CK_TIMEOUT_MULTIPLIER=6 AUR_TEST_TIME_SCALE=4
# VALGRIND_JOBS suites at a time (default: the number of CPUs): each
# suite's host runs one thread at a time under valgrind, so two suites
# use two CPUs the way ctest -j2 does.
jobs=${VALGRIND_JOBS:-$(nproc)}
case $jobs in '' | 0 | *[!0-9]*)
    echo "valgrind.sh: VALGRIND_JOBS must be a whole number above 0" >&2
    exit 2 ;;
esac
out=$(mktemp -d /tmp/aur-valgrind-XXXXXX)
# one S: memcheck suite S; its line goes to $out/S.line, and for a failed
# suite the log's end to $out/S.log and the summary's part to $out/S.sum.
one() {
    local s=$1 log=$out/$1.full t0 rc errs
    t0=$(date +%s)
    valgrind --error-exitcode=9 --leak-check=full \
        --errors-for-leak-kinds=definite --show-leak-kinds=definite \
        --trace-children=no "$B/tests/$s" >"$log" 2>&1
    rc=$?
    errs=$(grep -c '== ERROR SUMMARY: [1-9]' "$log")
    printf 'valgrind %-32s rc=%d  %3ds  %s\n' "$s" "$rc" "$(($(date +%s) - t0))" \
        "$(grep -E '^[0-9]+%: Checks' "$log" | tail -1)" >"$out/$s.line"
    if [ "$rc" != 0 ] || [ "$errs" != 0 ]; then
        grep -v 'unhandled amd64-linux syscall: 434\|README_MISSING_SYSCALL\|write your own handler\|consider this a bug\|valgrind.org/support' "$log" | tail -60 >"$out/$s.log"
        # For the summary at the end: Check's verdicts
        # (file:line:F|E:case:test) and valgrind's first error or
        # definite leak with its stack.
        {
            echo "--- $s (rc $rc):"
            grep -E '^[^ :]+:[0-9]+:[FE]:' "$log" | head -10
            grep -E -m1 -A12 '^==[0-9]+== (Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and destination|Process terminating|[0-9,]+ bytes in [0-9,]+ blocks are definitely)' "$log"
        } >"$out/$s.sum"
    fi
    rm -f "$log"
}
# shellcheck source=pool.sh
. scripts/pool.sh
pool_run "$jobs" one "${suites[@]}"
# In the suites' order, whatever order they ended in.
fail=0
for s in "${suites[@]}"; do
    if [ ! -s "$out/$s.line" ]; then
        echo "valgrind $s: no result" >"$out/$s.sum"
    fi
    cat "$out/$s.line" "$out/$s.log" 2>/dev/null
    [ -e "$out/$s.sum" ] && fail=1
done
# Repeated last, where a CI log is read from.
if [ "$fail" != 0 ]; then
    echo "=== valgrind: failed suites"
    cat "$out"/*.sum
fi
rm -rf "$out"
exit $fail
