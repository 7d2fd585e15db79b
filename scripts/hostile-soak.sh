#!/usr/bin/env bash
# hostile-soak.sh [--minutes M | --quick] [--build DIR] [--no-build]
#                 [--rate R] [--inflight K] [--keep]
# Ten hostile and well-behaved stdio Apps against ONE `aurora-mcp serve`
# for M minutes (default 10; --quick: 1), with a steady stream of calls to
# every App's t0000 (R calls/s per App, default 10, at most K in flight,
# default 2) and a status request every 5 s.  bench/soak/soak_driver.py
# samples the host's /proc/<pid>/status (VmRSS, Threads) and /proc/<pid>/fd
# every second, sends {"op":"shutdown"} at the end and then looks for any
# App process left.  The Apps (aur-fixture-server; the steady floods go
# through bench/soak/hostile_wrap.py, see its header) and the budgets are
# written below; docs/fault-matrix.md has the table of a run.
#
# Exits 1 (after printing the summary) when: the host's RSS grows between
# the first and the last quarter of the soak by more than 10% of the
# first quarter's median + 8 MiB (SOAK_RSS_PCT, SOAK_RSS_MIB); its open fds
# or threads at the end (the least of the last 5 samples) exceed their
# median over the soak; the host crashes, exits non-zero or takes more
# than 120 s to exit after shutdown; any process of an App (supervisor,
# wrapper, server, found under the host while it ran or by its working
# directory) is alive 5 s after the host exited (they are then killed);
# a request got no answer (or one that is not a JSON object); or a call's
# outcome is one the App's behaviour does not allow (every call to an App
# that stays within its budgets must succeed; the crashing App's calls are
# unknown while in flight when it died, then failed).  Exits 2 on usage
# errors.
#
# The build directory (default build-soak; configured RelWithDebInfo if
# it does not exist) gets hostile-soak-<date>/ with summary.md,
# samples.csv (one row a second), calls.csv and, on failure or with
# --keep, host.log (~60 MiB for 10 minutes) and the world journal
# (~150 MiB).  RSS that creeps up early and then levels off is glibc's
# per-thread malloc arenas warming up (serve runs 65 workers); the host
# inherits MALLOC_ARENA_MAX, and MALLOC_ARENA_MAX=1 makes the curve flat,
# which tells that apart from a leak.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

minutes=10 build=build-soak do_build=1 rate=10 inflight=2 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) minutes=${2:?}; shift 2 ;;
    --quick) minutes=1; shift ;;
    --build) build=${2:?}; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --rate) rate=${2:?}; shift 2 ;;
    --inflight) inflight=${2:?}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "hostile-soak: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case $minutes in
''|*[!0-9.]*|*.*.*) echo "hostile-soak: --minutes expects a number" >&2
                     exit 2 ;;
esac
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
[ "$seconds" -ge 20 ] || { echo "hostile-soak: at least 20 s" >&2; exit 2; }
command -v python3 >/dev/null ||
    { echo "hostile-soak: python3 is required" >&2; exit 2; }

if [ "$do_build" = 1 ]; then
    [ -f "$build/CMakeCache.txt" ] ||
        cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    nice -n 5 cmake --build "$build" -j"$(nproc)" --target aurora-mcp-cli \
        aur-fixture-server transport-stdio ext-world-events >/dev/null
fi
build=$(cd "$build" && pwd)
bin=$build/bin fixture=$build/bin/aur-fixture-server
wrap=$root/bench/soak/hostile_wrap.py
for f in "$bin/aurora-mcp" "$fixture" "$build/plugins/transport-stdio.so" \
         "$build/plugins/ext-world-events.so"; do
    [ -e "$f" ] || { echo "hostile-soak: missing $f (build it)" >&2; exit 1; }
done

run=$build/hostile-soak-$(date +%Y%m%d-%H%M%S)
mkdir -p "$run/apps.d"
# A leaked App must not die of old age before the leftover check: the
# fixture's own safety net (--lifetime) is set past the end of the run.
life=$((seconds + 900))

# ---------------------------------------------------------------- budgets
# The defaults of docs/budgets.md, written out so the run documents them.
# Every App below stays within them: one over a budget at startup would
# fail the whole startup, which is not what this soak is about.
cat >"$run/host.ini" <<EOF
[host]
plugins    = transport-stdio ext-world-events
plugin_dir = $build/plugins
journal    = world.sqlite3
log_level  = info          ; App stderr is logged at info: the storm is real

[mcp]
start_concurrency            = 64
max_tools                    = 10000     ; hugelist lists 5000
max_pages                    = 1024
max_notifications_per_second = 1000      ; flood keeps 800/s, events 300/s
notification_burst           = 250000    ; events: a burst of 101 000
max_schema_bytes             = 1048576
max_description_bytes        = 65536
max_result_bytes             = 4194304

[transport-stdio]
max_line_bytes    = 16777216   ; hugelist writes 12 MiB lines
stderr_line_bytes = 4096       ; every 100th storm line is 10000 bytes
term_grace_ms     = 2000
EOF

# --------------------------------------------------------------- the Apps
# app NAME EXPECT "WHAT" EXTRA_APP_KEYS -- COMMAND ARGS...
manifest=$run/manifest.tsv
: >"$manifest"
n=0
app() {
    local name=$1 expect=$2 what=$3 keys=$4
    shift 5
    n=$((n + 1))
    local file pkg
    file=$(printf '%02d-%s' "$n" "$name")
    pkg=org.hostilesoak.${name//-/}
    mkdir -p "$run/apps/$name"
    {
        printf '[app]\npackage = %s\nenabled = true\ntransport = stdio\n' "$pkg"
        printf 'timeout_seconds = 30\n'
        [ -z "$keys" ] || printf '%s\n' "$keys"
        printf '\n[stdio]\nworking_dir = apps/%s\ncommand = %s\n' "$name" "$1"
        shift
        for a in "$@"; do printf 'arg = %s\n' "$a"; done
    } >"$run/apps.d/$file.ini"
    printf '%s\t%s\t%s\t%s\n' "$pkg" "$name" "$expect" "$what" >>"$manifest"
}
fx=("$fixture" --lifetime "$life")
we='{"org.aurorabot/world-events":{"version":1}}'

app flood ok "10 000 notifications at startup (paced at 1000/s), then 800/s for the whole run" "" \
    -- python3 "$wrap" --notify-rate 800 -- "${fx[@]}" \
    --flood 10000 --flood-rate 1000
app hugelist ok "5000 tools in 2 pages of ~5 MB, a 12 MiB line before each page" "" \
    -- "${fx[@]}" --tools 5000 --page-size 2500 --schema-props 32 \
    --huge-line 12582912
app crash crash "exits during its first call (then unavailable)" "" \
    -- "${fx[@]}" --exit-during-call
app stderr ok "200 000 stderr lines at startup, then 500/s (1% over stderr_line_bytes)" "" \
    -- python3 "$wrap" --stderr-rate 500 -- "${fx[@]}" --stderr-lines 200000
app garbage ok "a non-JSON line and a JSON array before every answer" "" \
    -- "${fx[@]}" --garbage
app events ok "world events: 1000 before the first answer, 100 000 after it, then 300/s" \
    "event_mode = world_events" \
    -- python3 "$wrap" --event-rate 300 -- "${fx[@]}" --era modern \
    --extensions "$we" --events-before-call 1000 --event-flood 100000
app slow ok "answers every call after 1.5 s" "" \
    -- "${fx[@]}" --call-delay-ms 1500
app good-modern ok "well-behaved (2026-07-28)" "" -- "${fx[@]}" --era modern --tools 3
app good-legacy ok "well-behaved (initialize, 2025-11-25)" "" \
    -- "${fx[@]}" --era legacy --tools 3
app good-dual ok "well-behaved (dual era)" "" -- "${fx[@]}" --tools 3

echo "hostile-soak: $n Apps, ${seconds} s, $rate calls/s per App," \
     "load $(cut -d' ' -f1-3 /proc/loadavg); run directory $run" >&2
set +e
python3 "$root/bench/soak/soak_driver.py" --aurora "$bin/aurora-mcp" \
    --config "$run" --manifest "$manifest" --out "$run" \
    --seconds "$seconds" --rate "$rate" --inflight "$inflight" \
    --rss-pct "${SOAK_RSS_PCT:-10}" --rss-mib "${SOAK_RSS_MIB:-8}"
status=$?
set -e
if [ "$status" -eq 0 ] && [ "$keep" = 0 ]; then
    rm -f "$run"/world.sqlite3* "$run/host.log"
fi
echo "hostile-soak: results in $run" >&2
exit "$status"
