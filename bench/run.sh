#!/usr/bin/env bash
# bench/run.sh - run every benchmark scenario side by side, several rounds,
# and print a Markdown table of medians plus ratios against the reference
# clients measured in the same run.  See docs/benchmarks.md.
#
# Usage: bench/run.sh [--runs R] [--calls N] [--events E] [--build DIR]
#                     [--no-build] [--no-sdk-server] [--only REGEX]
# Defaults: 5 runs, 5000 calls, 100000 events, build dir build-bench.
# Nothing here asserts a timing; the exit status only says whether every
# case ran.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=5 calls=5000 events=100000 build="$root/build-bench"
do_build=1 sdk_server=1 only=.
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-sdk-server) sdk_server=0; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { printf 'run.sh: %s\n' "$*" >&2; }

if [ "$do_build" = 1 ]; then
    [ -f "$build/CMakeCache.txt" ] ||
        cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
    cmake --build "$build" -j2 --target aurora-mcp-cli aur-fixture-server \
        transport-stdio bench_host bench_raw_floor bench_measure \
        bench_events >&2
fi
bin="$build/bin" bb="$build/bench"
for f in "$bin/aurora-mcp" "$bin/aur-fixture-server" "$bb/bench_host" \
         "$bb/bench_raw_floor" "$bb/bench_measure" "$bb/bench_events"; do
    [ -x "$f" ] || { log "missing $f (build it, or drop --no-build)"; exit 1; }
done
command -v node >/dev/null || { log "node (>= 20) is required"; exit 1; }
if [ ! -d "$here/node_modules/@modelcontextprotocol/client" ]; then
    log "npm ci in bench/"
    (cd "$here" && npm ci --no-audit --no-fund >&2)
fi
if [ "$sdk_server" = 1 ] &&
   [ ! -d "$root/tests/peers/node_modules/@modelcontextprotocol/server" ]; then
    log "npm ci in tests/peers/"
    (cd "$root/tests/peers" && npm ci --no-audit --no-fund >&2)
fi

work=$(mktemp -d /tmp/aurora-bench.XXXXXX)
log "scratch and raw results in $work"

fixture="$bin/aur-fixture-server"
sdk2="$root/tests/peers/sdk2-server.mjs"

# config DIR APPS COMMAND ARG...: a host with APPS stdio Apps running CMD.
config() {
    local dir=$1 apps=$2 i a
    shift 2
    mkdir -p "$dir/apps.d"
    cat > "$dir/host.ini" <<EOF
[host]
plugins    = transport-stdio
plugin_dir = $build/plugins
journal    = data/world.sqlite3
log_level  = warn
[mcp]
enabled = true
EOF
    for ((i = 0; i < apps; i++)); do
        {
            printf '[app]\npackage = org.bench.a%02d\nenabled = true\n' "$i"
            printf 'transport = stdio\ntimeout_seconds = 120\n'
            printf '[stdio]\ncommand = %s\nworking_dir = .\n' "$1"
            for a in "${@:2}"; do printf 'arg = %s\n' "$a"; done
        } > "$dir/apps.d/a$(printf %02d "$i").ini"
    done
}

f1000=("$fixture" --tools 1000 --page-size 50 --lifetime 600)
f100=("$fixture" --tools 100 --page-size 50 --lifetime 600)
s1000=(node "$sdk2" --tools 1000 --page-size 50)
config "$work/c-f1000" 1 "${f1000[@]}"
config "$work/c-f20x100" 20 "${f100[@]}"
config "$work/c-s1000" 1 "${s1000[@]}"
tool=aur.mcp.org.bench.a00.t0000
sdkc=(node "$here/sdk-client.mjs")
raw="$bb/bench_raw_floor"
host="$bb/bench_host"
serve=("$bin/aurora-mcp" serve -c)

# One case a line: scenario|client|server|command (words, eval'd).
cases=()
add() { cases+=("$1|$2|$3|$4"); }
q() { printf '%q ' "$@"; }
add discover-1000 capi fixture "$(q "$host" -c "$work/c-f1000")"
add discover-1000 serve fixture "$(q "$raw" -s -- "${serve[@]}" "$work/c-f1000")"
add discover-1000 raw fixture "$(q "$raw" -- "${f1000[@]}")"
add discover-1000 sdk fixture "$(q "${sdkc[@]}" -- "${f1000[@]}")"
if [ "$sdk_server" = 1 ]; then
    add discover-1000 capi sdk2 "$(q "$host" -c "$work/c-s1000")"
    add discover-1000 raw sdk2 "$(q "$raw" -- "${s1000[@]}")"
    add discover-1000 sdk sdk2 "$(q "${sdkc[@]}" -- "${s1000[@]}")"
fi
add start-20x100 capi fixture "$(q "$host" -c "$work/c-f20x100")"
add start-20x100 serve fixture "$(q "$raw" -s -- "${serve[@]}" "$work/c-f20x100")"
add start-20x100 raw fixture "$(q "$raw" -a 20 -- "${f100[@]}")"
add start-20x100 sdk fixture "$(q "${sdkc[@]}" --apps 20 -- "${f100[@]}")"
for k in 1 32; do
    s=seq-$calls; [ $k = 1 ] || s=conc-${calls}x$k
    add "$s" capi fixture "$(q "$host" -c "$work/c-f1000" -t $tool -n "$calls" -k $k)"
    add "$s" serve fixture "$(q "$raw" -s -n "$calls" -k $k -t $tool -- "${serve[@]}" "$work/c-f1000")"
    add "$s" raw fixture "$(q "$raw" -n "$calls" -k $k -- "${f1000[@]}")"
    add "$s" sdk fixture "$(q "${sdkc[@]}" --calls "$calls" --inflight $k -- "${f1000[@]}")"
    if [ "$sdk_server" = 1 ] && [ $k = 1 ]; then
        add "$s" capi sdk2 "$(q "$host" -c "$work/c-s1000" -t $tool -n "$calls" -k $k)"
        add "$s" raw sdk2 "$(q "$raw" -n "$calls" -k $k -- "${s1000[@]}")"
        add "$s" sdk sdk2 "$(q "${sdkc[@]}" --calls "$calls" --inflight $k -- "${s1000[@]}")"
    fi
done
add "events-$events" bench_events journal "$(q "$bb/bench_events" "$events")"

# Rounds interleave the cases so background load hits all of them alike.
results="$work/results.jsonl"
: > "$results"
failed=0
for ((r = 1; r <= runs; r++)); do
    for c in "${cases[@]}"; do
        IFS='|' read -r scen client server cmd <<< "$c"
        [[ "$scen $client $server" =~ $only ]] || continue
        log "run $r/$runs: $scen $client -> $server"
        out="$work/out" m="$work/measure.json"
        if ! eval "$(q "$bb/bench_measure" "$m") $cmd" > "$out" \
                2>> "$work/stderr.log"; then
            log "FAILED: $scen $client -> $server (see $work/stderr.log)"
            failed=1
            continue
        fi
        node -e '
            const fs = require("fs");
            const [scen, client, server, run, outf, mf] = process.argv.slice(1);
            const text = fs.readFileSync(outf, "utf8");
            let o = {};
            const j = text.split("\n").find((l) => l.startsWith("{"));
            if (j) o = JSON.parse(j);
            const ev = /new events:\s+(\d+) in ([\d.]+) s/.exec(text);
            if (ev) Object.assign(o, { calls: +ev[1], call_ms: +ev[2] * 1000 });
            const m = JSON.parse(fs.readFileSync(mf, "utf8"));
            process.stdout.write(JSON.stringify({ ...o, scen, client, server,
                run: +run, measure: m }) + "\n");
        ' "$scen" "$client" "$server" "$r" "$out" "$m" >> "$results"
    done
done

report="$work/results-latest.md"
node "$here/report.mjs" "$results" "$runs" > "$report"
cat "$report"
log "table written to $report"
exit $failed
