#!/usr/bin/env bash
# bench/run.sh - run every benchmark scenario side by side, several rounds,
# and print a Markdown table of medians plus ratios against the reference
# clients measured in the same run.  See docs/benchmarks.md.
#
# Usage: bench/run.sh [--runs R] [--calls N] [--events E] [--build DIR]
#                     [--no-build] [--no-sdk-server] [--no-https]
#                     [--growth | --no-growth] [--growth-apps "1 10 100 300 1000"]
#                     [--only REGEX] [--cpus LIST] [--timeout SECONDS]
#                     [--no-pg] [--fast-reps K]
# Defaults: 5 runs, 5000 calls, 100000 events, bench dir build-bench-install.
# Each run is a round of every case, interleaved.  The startup cases of
# tens of milliseconds (fixed-10, discover-1000 against the C fixture) run
# K times a round (default 4), interleaved among themselves: five samples
# of a 20 ms process put a ratio anywhere in a wide band, and their
# verdicts sit on their lines.
# It builds Release (no -Werror) in DIR/tree and installs it with
# `cmake --install` into DIR/prefix, as a user would (--no-build: use what
# is there); the CLI rows run that installed aurora-mcp with the default
# plugin set (both transports, both extensions), no plugin_dir, a journal.
# --timeout: a case running longer is killed and counted as failed
# (default 600 s; 0: none).
# --cpus runs every case under taskset -c LIST (e.g. --cpus 0: one CPU, so
# every wake-up is a same-CPU switch and per-call numbers are CPU cost,
# not the latency of waking an idle virtual CPU).
# After the rounds, bench/journal.sh measures the world journal's
# throughput (issue #21: 1 and 4 hosts, events each, --runs rounds, into
# a PostgreSQL it starts itself and into one SQLite file) and its table
# becomes the report's section "World journal: events committed per
# second".  --no-pg leaves out its PostgreSQL rows (so does a machine
# without the PostgreSQL server programs, with a note); --only matches
# the section as "journal".
# Nothing here asserts a timing; the exit status only says whether every
# case ran (a case that fails is shown as "failed" in the tables; the run
# goes on).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=5 calls=5000 events=100000 build="$root/build-bench-install"
do_build=1 sdk_server=1 https=1 growth=1 only=. cpus= case_timeout=600 pg=1
growth_apps="1 10 100 300 1000" fast_reps=4
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --build) mkdir -p "$2"; build=$(cd "$2" && pwd); shift 2 ;;
    --no-build) do_build=0; shift ;;
    --no-sdk-server) sdk_server=0; shift ;;
    --no-https) https=0; shift ;;
    --growth) growth=1; shift ;;
    --no-growth) growth=0; shift ;;
    --growth-apps) growth_apps=$2; shift 2 ;;
    --timeout) case_timeout=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --no-pg) pg=0; shift ;;
    --fast-reps) fast_reps=$2; shift 2 ;;
    -h|--help) sed -n '2,35p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { printf 'run.sh: %s\n' "$*" >&2; }

# The bench dir holds the build tree and the install prefix side by side,
# not one inside the other: the library takes the build tree's plugins
# when it runs from inside that tree (lib/engine/host.c), so a prefix
# inside the tree would not show the installed default being found.
tree="$build/tree" prefix="$build/prefix"
if [ "$do_build" = 1 ]; then
    # As a user builds: Release, no -Werror, installed with cmake --install.
    [ -f "$tree/CMakeCache.txt" ] ||
        cmake -S "$root" -B "$tree" -DCMAKE_BUILD_TYPE=Release \
              -DCMAKE_INSTALL_PREFIX="$prefix" >&2
    cmake --build "$tree" -j2 >&2
    cmake --install "$tree" --prefix "$prefix" >&2
fi
bin="$tree/bin" bb="$tree/bench" cli="$prefix/bin/aurora-mcp"
plugdir=$(find "$prefix" -type d -path '*/aurora-mcp/plugins' 2>/dev/null |
          head -n 1)
[ -n "$plugdir" ] ||
    { log "no installed plugins under $prefix (drop --no-build)"; exit 1; }
for f in "$cli" "$bin/aur-fixture-server" "$bb/bench_host" \
         "$bb/bench_raw_floor" "$bb/bench_measure" "$bb/bench_events" \
         "$plugdir/transport-stdio.so" "$plugdir/transport-http.so" \
         "$plugdir/ext-tool-contract.so" "$plugdir/ext-world-events.so"; do
    [ -e "$f" ] || { log "missing $f (build it, or drop --no-build)"; exit 1; }
done
log "installed CLI $cli, its plugins $plugdir"
command -v node >/dev/null || { log "node (>= 20) is required"; exit 1; }
if [ ! -d "$here/node_modules/@modelcontextprotocol/client" ]; then
    log "npm ci in bench/"
    (cd "$here" && npm ci --no-audit --no-fund >&2)
fi
[ "$sdk_server" = 1 ] || https=0
if [ "$https" = 1 ] && ! command -v openssl >/dev/null; then
    log "no openssl: skipping the HTTPS rows"
    https=0
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

# config DIR APPS COMMAND ARG...: a host with APPS stdio Apps running CMD,
# the default plugin set and a journal, no plugin_dir: the installed CLI
# must find its installed plugins.  DIR.capi is the same host for
# bench_host (linked in the build tree), with plugin_dir set to the
# installed plugins.
config() {
    local dir=$1 apps=$2 i a
    shift 2
    mkdir -p "$dir/apps.d" "$dir.capi/apps.d"
    cat > "$dir/host.ini" <<EOF
[host]
plugins    = transport-stdio transport-http ext-tool-contract ext-world-events
journal    = data/world.sqlite3
log_level  = warn
[mcp]
enabled = true
EOF
    for ((i = 0; i < apps; i++)); do
        {
            printf '[app]\npackage = org.bench.a%04d\nenabled = true\n' "$i"
            printf 'transport = stdio\ntimeout_seconds = 120\n'
            printf '[stdio]\ncommand = %s\nworking_dir = .\n' "$1"
            for a in "${@:2}"; do printf 'arg = %s\n' "$a"; done
        } > "$dir/apps.d/a$(printf %04d "$i").ini"
    done
    sed "s|^plugins .*|&\nplugin_dir = $plugdir|" "$dir/host.ini" \
        > "$dir.capi/host.ini"
    [ "$apps" = 0 ] || cp "$dir"/apps.d/*.ini "$dir.capi/apps.d/"
}

f1000=("$fixture" --tools 1000 --page-size 50 --lifetime 600)
f100=("$fixture" --tools 100 --page-size 50 --lifetime 600)
f10=("$fixture" --tools 10 --page-size 50 --lifetime 600)
# Servers that idle 200 ms before they read stdin: parallel startup.
d100=("${f100[@]}" --start-delay-ms 200)
s1000=(node "$sdk2" --tools 1000 --page-size 50)
config "$work/c-f1000" 1 "${f1000[@]}"
config "$work/c-f10" 1 "${f10[@]}"
config "$work/c-f20x100" 20 "${f100[@]}"
config "$work/c-d1x100" 1 "${d100[@]}"
config "$work/c-d20x100" 20 "${d100[@]}"
config "$work/c-s1000" 1 "${s1000[@]}"
# HTTPS: one SDK v2 Streamable HTTP server (node:https, keep-alive) for the
# whole run, with a throwaway CA; it exits when its stdin closes.
hpid=
stop_https() {
    [ -n "$hpid" ] || return 0
    exec {hfd}>&- 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
    kill "$hpid" 2>/dev/null || true
}
trap stop_https EXIT
if [ "$https" = 1 ]; then
    h="$work/https"
    mkdir -p "$h"
    sh "$root/tests/support/mkcerts.sh" "$h" srv IP:127.0.0.1
    mkfifo "$h/stdin"
    node "$root/tests/peers/sdk2-http-server.mjs" --cert "$h/srv.pem" \
        --key "$h/srv.key" --tools 1000 --page-size 50 \
        < "$h/stdin" > "$h/port" 2>> "$work/stderr.log" &
    hpid=$!
    exec {hfd}>"$h/stdin"
    port=
    for _ in $(seq 100); do
        port=$(sed -n 's/^PORT \([0-9]*\).*/\1/p' "$h/port")
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        log "the HTTPS server did not start: skipping the HTTPS rows"
        https=0
    else
        url="https://127.0.0.1:$port/mcp"
        config "$work/c-h1000" 0
        d="$work/c-h1000.capi"
        cp "$h/ca.pem" "$d/ca.pem"
        printf '%s\n' '[app]' 'package = org.bench.a0000' 'enabled = true' \
            'transport = streamable_http' 'timeout_seconds = 120' '[http]' \
            "url = $url" 'ca_file = ca.pem' > "$d/apps.d/a0000.ini"
    fi
fi

tool=aur.mcp.org.bench.a0000.t0000
sdkc=(node "$here/sdk-client.mjs")
raw="$bb/bench_raw_floor"
host="$bb/bench_host"
serve=("$cli" serve -c)
# The installed CLI's discover, its catalog thrown away (bench_measure -q):
# the row's wall is the whole process, compared with the raw floor's.
discover=("$cli" discover -c)

# One case a line: scenario|client|server|command (words, eval'd).
cases=()
add() { cases+=("$1|$2|$3|$4"); }
q() { printf '%q ' "$@"; }
add discover-1000 capi fixture "$(q "$host" -c "$work/c-f1000.capi")"
add discover-1000 serve fixture "$(q "$raw" -s -- "${serve[@]}" "$work/c-f1000")"
add discover-1000 raw fixture "$(q "$raw" -- "${f1000[@]}")"
add discover-1000 cli fixture "$(q "${discover[@]}" "$work/c-f1000")"
add fixed-10 capi fixture "$(q "$host" -c "$work/c-f10.capi")"
add fixed-10 cli fixture "$(q "${discover[@]}" "$work/c-f10")"
add fixed-10 raw fixture "$(q "$raw" -- "${f10[@]}")"
add discover-1000 sdk fixture "$(q "${sdkc[@]}" -- "${f1000[@]}")"
if [ "$sdk_server" = 1 ]; then
    add discover-1000 capi sdk2 "$(q "$host" -c "$work/c-s1000.capi")"
    add discover-1000 raw sdk2 "$(q "$raw" -- "${s1000[@]}")"
    add discover-1000 sdk sdk2 "$(q "${sdkc[@]}" -- "${s1000[@]}")"
fi
add start-20x100 capi fixture "$(q "$host" -c "$work/c-f20x100.capi")"
add start-20x100 serve fixture "$(q "$raw" -s -- "${serve[@]}" "$work/c-f20x100")"
add start-20x100 raw fixture "$(q "$raw" -a 20 -- "${f100[@]}")"
add start-20x100 cli fixture "$(q "${discover[@]}" "$work/c-f20x100")"
add start-20x100 sdk fixture "$(q "${sdkc[@]}" --apps 20 -- "${f100[@]}")"
for a in 1 20; do
    add "slowstart-${a}x100" capi fixture "$(q "$host" -c "$work/c-d${a}x100.capi")"
    add "slowstart-${a}x100" cli fixture "$(q "${discover[@]}" "$work/c-d${a}x100")"
    add "slowstart-${a}x100" serve fixture "$(q "$raw" -s -- "${serve[@]}" "$work/c-d${a}x100")"
    add "slowstart-${a}x100" raw fixture "$(q "$raw" -a $a -- "${d100[@]}")"
    add "slowstart-${a}x100" sdk fixture "$(q "${sdkc[@]}" --apps $a -- "${d100[@]}")"
done
for k in 1 16 32; do
    s=seq-$calls; [ $k = 1 ] || s=conc-${calls}x$k
    add "$s" capi fixture "$(q "$host" -c "$work/c-f1000.capi" -t $tool -n "$calls" -k $k)"
    add "$s" serve fixture "$(q "$raw" -s -n "$calls" -k $k -t $tool -- "${serve[@]}" "$work/c-f1000")"
    # The floor for serve: the same pipe hop, zero work (raw_floor -r).
    add "$s" relay fixture "$(q "$raw" -s -n "$calls" -k $k -t $tool -- "$raw" -r -- "${f1000[@]}")"
    add "$s" raw fixture "$(q "$raw" -n "$calls" -k $k -- "${f1000[@]}")"
    [ $k = 16 ] && continue # for serve against its relay floor
    add "$s" sdk fixture "$(q "${sdkc[@]}" --calls "$calls" --inflight $k -- "${f1000[@]}")"
    if [ "$sdk_server" = 1 ] && [ $k = 1 ]; then
        add "$s" capi sdk2 "$(q "$host" -c "$work/c-s1000.capi" -t $tool -n "$calls" -k $k)"
        add "$s" raw sdk2 "$(q "$raw" -n "$calls" -k $k -- "${s1000[@]}")"
        add "$s" sdk sdk2 "$(q "${sdkc[@]}" --calls "$calls" --inflight $k -- "${s1000[@]}")"
    fi
done
if [ "$https" = 1 ]; then
    sdkh=(env NODE_EXTRA_CA_CERTS="$h/ca.pem" node "$here/sdk-client.mjs")
    add discover-1000 capi sdk2h "$(q "$host" -c "$work/c-h1000.capi")"
    add discover-1000 sdk sdk2h "$(q "${sdkh[@]}" --url "$url")"
    # A call over HTTPS costs the node server about 2 ms: a tenth of the
    # calls keeps the rounds short.
    hc=$(( calls / 10 > 0 ? calls / 10 : 1 ))
    for k in 1 32; do
        s=seq-$hc; [ $k = 1 ] || s=conc-${hc}x$k
        # The node server idles through every other case of a round, and
        # the first calls after that ran slower by half (1.7x in full runs
        # against 1.1x for these rows alone): an unmeasured warm-up first,
        # and the C API beside its floor, so both meet the server alike.
        if [ $k = 1 ] && [ -x "$bb/bench_raw_https" ]; then
            add "$s" warm sdk2h "$(q "$bb/bench_raw_https" -c "$h/ca.pem" -n "$hc" "$url")"
        fi
        add "$s" capi sdk2h "$(q "$host" -c "$work/c-h1000.capi" -t $tool -n "$hc" -k $k)"
        # The HTTPS floor: libcurl, one connection, no JSON parsing.
        if [ $k = 1 ] && [ -x "$bb/bench_raw_https" ]; then
            add "$s" rawh sdk2h "$(q "$bb/bench_raw_https" -c "$h/ca.pem" -n "$hc" "$url")"
        fi
        add "$s" sdk sdk2h "$(q "${sdkh[@]}" --calls "$hc" --inflight $k --url "$url")"
    done
fi
add "events-$events" bench_events journal "$(q "$bb/bench_events" "$events")"
# Growth (issue #22): N instant Apps of 100 tools in pages of 50, the
# installed CLI's discover against the raw floor starting the same N
# servers.
if [ "$growth" = 1 ]; then
    for n in $growth_apps; do
        config "$work/c-g$n" "$n" "${f100[@]}"
        add "growth-$n" cli fixture "$(q "${discover[@]}" "$work/c-g$n")"
        add "growth-$n" raw fixture "$(q "$raw" -a "$n" -- "${f100[@]}")"
    done
fi

tmo=
if [ "$case_timeout" != 0 ] && command -v timeout >/dev/null; then
    tmo="$(q timeout -k 10 "$case_timeout")"
fi
pin=
if [ -n "$cpus" ]; then
    command -v taskset >/dev/null || { log "--cpus needs taskset"; exit 1; }
    pin="$(q taskset -c "$cpus")"
fi

# Rounds interleave the cases so background load hits all of them alike.
results="$work/results.jsonl"
: > "$results"
failed=0
fast() { [[ $1 =~ ^(fixed-10|discover-1000)$ && $2 == fixture ]]; }
for ((r = 1; r <= runs; r++)); do
  for ((k = 1; k <= fast_reps; k++)); do
    for c in "${cases[@]}"; do
        IFS='|' read -r scen client server cmd <<< "$c"
        [[ "$scen $client $server" =~ $only ]] || continue
        [ "$k" = 1 ] || fast "$scen" "$server" || continue
        again=; [ "$k" = 1 ] || again=" (again, $k of $fast_reps)"
        log "run $r/$runs$again: $scen $client -> $server"
        if [ "$client" = warm ]; then # run, not measured
            eval "$tmo$pin$cmd" > /dev/null 2>> "$work/stderr.log" || true
            continue
        fi
        out="$work/out" m="$work/measure.json" quiet=
        [ "$client" != cli ] || quiet=-q
        # bench_measure: bench_measure plus the command's own peak RSS
        # (self_rss_kib), so the CLI and the raw floor compare by their own
        # footprint, not their biggest server's.
        if ! eval "$tmo$pin$(q "$bb/bench_measure") $quiet $(q "$m") $cmd" \
                > "$out" 2>> "$work/stderr.log"; then
            log "FAILED: $scen $client -> $server (see $work/stderr.log)"
            # Kept as a result: the tables show it as "failed".
            printf '{"scen":"%s","client":"%s","server":"%s","run":%d,"rep":%d,"failed":true}\n' \
                "$scen" "$client" "$server" "$r" "$k" >> "$results"
            failed=1
            continue
        fi
        node -e '
            const fs = require("fs");
            const [scen, client, server, run, rep, outf, mf] =
                process.argv.slice(1);
            const text = fs.readFileSync(outf, "utf8");
            let o = {};
            const j = text.split("\n").find((l) => l.startsWith("{"));
            if (j) o = JSON.parse(j);
            const ev = /new events:\s+(\d+) in ([\d.]+) s/.exec(text);
            if (ev) Object.assign(o, { calls: +ev[1], call_ms: +ev[2] * 1000 });
            const m = JSON.parse(fs.readFileSync(mf, "utf8"));
            process.stdout.write(JSON.stringify({ ...o, scen, client, server,
                run: +run, rep: +rep, measure: m }) + "\n");
        ' "$scen" "$client" "$server" "$r" "$k" "$out" "$m" >> "$results"
    done
  done
done

# The world journal's throughput (issue #21): its own rounds, after the
# others, so its database server never runs beside another case.
jmd=
if [[ journal =~ $only ]]; then
    jmd="$work/journal.md"
    jargs=(--events "$events" --rounds "$runs")
    [ "$case_timeout" = 0 ] || jargs+=(--timeout "$case_timeout")
    [ "$pg" = 1 ] || jargs+=(--no-pg)
    log "world journal throughput: bench/journal.sh ${jargs[*]}"
    if ! eval "$pin$(q bash "$here/journal.sh" "$bb/bench_events" "${jargs[@]}")" \
            > "$jmd" 2> >(tee -a "$work/stderr.log" >&2); then
        log "FAILED: world journal throughput (see $work/stderr.log)"
        failed=1
        grep -q '^## ' "$jmd" ||
            printf '## World journal: events committed per second (issue #21)\n\nfailed: bench/journal.sh did not finish (see stderr.log).\n' \
                > "$jmd"
    fi
fi

report="$work/results-latest.md"
node "$here/report.mjs" "$results" "$runs" "$cpus" ${jmd:+"$jmd"} > "$report"
cat "$report"
log "table written to $report"
if [ "$growth" = 1 ]; then
    node "$here/plot.mjs" "$results" "$cpus" > "$work/growth.svg"
    log "growth plot written to $work/growth.svg"
    echo "growth plot: $work/growth.svg"
fi
exit $failed
