#!/usr/bin/env bash
# bench/journal.sh - world journal throughput (issue #21): events committed
# per second by one host, and by several hosts at once, into one local
# PostgreSQL, beside the same into one SQLite file.  Prints a Markdown
# section (a table of medians and the issue's >= 50 000 / s target row);
# bench/run.sh appends it to its report.  See docs/benchmarks.md.
#
# Usage: bench/journal.sh [BENCH_EVENTS] [--build DIR] [--events N]
#                         [--rounds R] [--hosts K] [--timeout SECONDS]
#                         [--fsync on|off] [--no-pg] [--no-sqlite]
# BENCH_EVENTS: a Release-built bench/bench_events (default: the one
# bench/run.sh builds, build-bench-install/tree/bench/bench_events;
# --build DIR: DIR/bench/bench_events, or DIR/tree/bench/bench_events for
# a bench dir).  It loads the PostgreSQL module of its own build tree.
# Defaults: 100000 events per host, 3 rounds, 4 hosts, 300 s per process.
# A "host" is one bench_events process: the real ext-world-events plugin
# fed N events through on_notify, committing through the journal in its
# batches (bench/bench_events.c), each with its own App package so the
# hosts' event ids are distinct.  Each round, for each backend: one host
# alone, then K hosts started together; events/s = hosts x N / the wall
# time of the whole group, taken here around all the processes (start to
# the last exit), not from their own timers.  Every group gets a fresh
# database (PostgreSQL: CREATE DATABASE; SQLite: a new file, shared by
# the K processes), opened once before the clock starts (so the schema
# exists), and must have grown by exactly hosts x N when they are done,
# else the group counts as failed.
# PostgreSQL: a throwaway server from tests/support/pg.sh (loopback TCP,
# trust), stopped and removed on exit.  pg.sh turns fsync off for tests;
# --fsync on (the default) restores the server's defaults (fsync and
# full_page_writes on, each commit flushed), --fsync off keeps pg.sh's.
# Without the server programs the PostgreSQL rows are skipped with a note
# (--no-pg skips them too).
# Exit status: 0 when every group ran and checked out, 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bench= build= events=100000 rounds=3 hosts=4 tmo=300 fsync=on
do_pg=1 do_sqlite=1
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --fsync) fsync=$2; shift 2 ;;
    --no-pg) do_pg=0; shift ;;
    --no-sqlite) do_sqlite=0; shift ;;
    -h|--help) sed -n '2,/^set /{/^set /d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "journal.sh: unknown option $1" >&2; exit 2 ;;
    *) bench=$1; shift ;;
    esac
done
log() { printf 'journal.sh: %s\n' "$*" >&2; }
case "$fsync" in on|off) ;; *) log "--fsync on|off"; exit 2 ;; esac
for v in "$events" "$rounds" "$hosts" "$tmo"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { log "not a positive number: $v"; exit 2; }
done
if [ -z "$bench" ]; then
    if [ -z "$build" ]; then
        bench=$root/build-bench-install/tree/bench/bench_events
    elif [ -x "$build/bench/bench_events" ]; then
        bench=$build/bench/bench_events
    else
        bench=$build/tree/bench/bench_events
    fi
fi
[ -x "$bench" ] ||
    { log "no $bench (build it: bench/run.sh does, or cmake --build)"; exit 1; }
bench=$(cd "$(dirname "$bench")" && pwd)/$(basename "$bench")

work=$(mktemp -d /tmp/aur-bench-journal.XXXXXX)
chmod 755 "$work" # pg.sh runs the server as postgres when we are root
pgdir=$work/pg pg_up=0 pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    if [ -f "$pgdir/data/PG_VERSION" ]; then
        sh "$root/tests/support/pg.sh" stop "$pgdir" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log "scratch in $work"

# ---- PostgreSQL -------------------------------------------------------
# bounded: pg.sh's own waits are (pg_ctl -t 30), psql's are not
pgsh() { timeout -k 5 300 sh "$root/tests/support/pg.sh" "$@"; }
pg_note= pg_base= pg_query= pg_ver=
if [ "$do_pg" = 1 ]; then
    mkdir -p "$pgdir"
    rc=0
    # the watcher stops the server should this script be killed outright
    uri=$(AUR_PG_OWNER=$$ pgsh start "$pgdir" 2> "$work/pg-start.log") ||
        rc=$?
    if [ "$rc" = 77 ]; then
        pg_note="PostgreSQL rows skipped: no PostgreSQL server programs (initdb, pg_ctl)."
        do_pg=0
    elif [ "$rc" != 0 ] || [ -z "$uri" ]; then
        cat "$work/pg-start.log" >&2
        log "PostgreSQL did not start"
        pg_note="PostgreSQL rows failed: the server did not start."
        do_pg=0
        pg_failed=1
    else
        pg_up=1
        if [ "$fsync" = on ]; then
            # pg.sh's test settings off again: every commit flushed
            pgsh psql "$pgdir" "ALTER SYSTEM SET fsync = on" postgres >/dev/null
            pgsh psql "$pgdir" "ALTER SYSTEM SET full_page_writes = on" \
                postgres >/dev/null
            pgsh psql "$pgdir" "SELECT pg_reload_conf()" postgres >/dev/null
            sleep 0.5
        fi
        q() { pgsh psql "$pgdir" "$1" postgres; }
        pg_ver=$(q "SHOW server_version")
        pg_ver=${pg_ver%% *}
        pg_set="fsync $(q "SHOW fsync"), synchronous_commit $(q "SHOW synchronous_commit"), full_page_writes $(q "SHOW full_page_writes"), shared_buffers $(q "SHOW shared_buffers")"
        # the URI with another database: postgresql://U@H:P/DB[?...]
        case "$uri" in *\?*) pg_query="?${uri#*\?}" ;; esac
        pg_base=${uri%%\?*}
        pg_base=${pg_base%/*}
        log "PostgreSQL $pg_ver at $uri ($pg_set)"
    fi
else
    pg_note="PostgreSQL rows skipped (--no-pg)."
fi
pg_failed=${pg_failed:-0}

# ---- One group --------------------------------------------------------
# group BACKEND K ROUND: K processes at once into a fresh journal.  Appends
# "BACKEND K ok|failed WALL_MS OWN_RATE..." to $work/results.
group() {
    local be=$1 k=$2 r=$3 name="r${3}h${2}" target i rc=0 t0 t1 c
    local ok=ok own=()
    if [ "$be" = pg ]; then
        pgsh psql "$pgdir" "CREATE DATABASE $name OWNER aurora" postgres \
            >/dev/null 2>> "$work/stderr.log" || true
        target="$pg_base/$name$pg_query"
    else
        target="$work/$name.sqlite3"
    fi
    # the schema made (and the count read) before the clock starts
    c=$(timeout -k 5 60 "$bench" --journal "$target" --count \
        2>> "$work/stderr.log") || c=
    if [ "$c" != "journal count: 0" ]; then
        log "round $r, $be, $k host(s): cannot open a fresh journal ($c)"
        ok=failed
    fi
    [ "$be" != pg ] ||
        pgsh psql "$pgdir" "CHECKPOINT" postgres >/dev/null || true
    pids=()
    t0=$(date +%s%N)
    if [ "$ok" = ok ]; then
        for ((i = 1; i <= k; i++)); do
            timeout -k 5 "$tmo" "$bench" "$events" --new-only \
                --journal "$target" --package "org.bench.r$r.h$k.p$i" \
                > "$work/out.$i" 2>> "$work/stderr.log" &
            pids+=($!)
        done
        for i in "${!pids[@]}"; do
            wait "${pids[$i]}" || rc=$?
        done
    fi
    t1=$(date +%s%N)
    pids=()
    if [ "$ok" = ok ] && [ "$rc" != 0 ]; then
        log "round $r, $be, $k host(s): a process failed (status $rc;" \
            "124: timed out)"
        ok=failed
    fi
    if [ "$ok" = ok ]; then
        c=$(timeout -k 5 60 "$bench" --journal "$target" --count \
            2>> "$work/stderr.log") || c=
        if [ "$c" != "journal count: $((k * events))" ]; then
            log "round $r, $be, $k host(s): $c, not $((k * events))"
            ok=failed
        fi
        for ((i = 1; i <= k; i++)); do
            own+=("$(sed -n 's/^new events:.* = \([0-9]*\) events\/s.*/\1/p' \
                     "$work/out.$i")")
        done
    fi
    if [ "$be" = pg ]; then
        pgsh psql "$pgdir" "DROP DATABASE $name" postgres >/dev/null || true
    else
        rm -f "$target" "$target-wal" "$target-shm" "$target-journal"
    fi
    echo "$be $k $ok $(( (t1 - t0) / 1000000 )) ${own[*]}" >> "$work/results"
    if [ "$ok" = ok ]; then
        log "round $r, $be, $k host(s): $((k * events)) events in" \
            "$(( (t1 - t0) / 1000000 )) ms (own timers, events/s: ${own[*]})"
    else
        tail -n 5 "$work/stderr.log" >&2 || true
    fi
}

: > "$work/results"
for ((r = 1; r <= rounds; r++)); do
    if [ "$do_pg" = 1 ]; then
        group pg 1 "$r"
        group pg "$hosts" "$r"
    fi
    if [ "$do_sqlite" = 1 ]; then
        group sqlite 1 "$r"
        group sqlite "$hosts" "$r"
    fi
done

# ---- The table --------------------------------------------------------
# stats BACKEND K: "runs ok median_rate min_rate max_rate median_wall_ms
# median_own_rate_per_host" over the groups that checked out.
stats() {
    awk -v be="$1" -v k="$2" -v n="$events" '
        function med(a, c,   i, j, t) {
            for (i = 2; i <= c; i++)
                for (j = i; j > 1 && a[j-1] > a[j]; j--) {
                    t = a[j]; a[j] = a[j-1]; a[j-1] = t
                }
            return c % 2 ? a[(c+1)/2] : (a[c/2] + a[c/2+1]) / 2
        }
        $1 == be && $2 == k {
            runs++
            if ($3 != "ok") next
            ok++
            w[ok] = $4; rate[ok] = k * n / ($4 / 1000)
            for (i = 5; i <= NF; i++) own[++no] = $i
        }
        END {
            if (!ok) { printf "%d 0\n", runs; exit }
            m = med(rate, ok) # sorts rate: then [1] is the least
            printf "%d %d %.0f %.0f %.0f %.0f %.0f\n", runs, ok, m,
                rate[1], rate[ok], med(w, ok), no ? med(own, no) : 0
        }' "$work/results"
}
sqlite_ver=$(pkg-config --modversion sqlite3 2>/dev/null || true)
failed=$pg_failed
target_rate=
echo "## World journal: events committed per second (issue #21)"
echo
echo "$events new events per host (\`bench_events --new-only\`: ext-world-events," \
     "batches of up to 1024), $rounds round(s), medians; a fresh journal for" \
     "every group; events/s in total = hosts x $events / the wall time of the" \
     "whole group (every process, start to exit). Hosts on this machine" \
     "($(nproc) CPUs)${pg_ver:+, sharing it with the database server}."
echo
echo "| journal | hosts | events | events/s in total | (min-max) | group wall ms | per host, its own timer, events/s | runs |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
row() { # BACKEND K LABEL
    local s runs ok med mn mx w own
    s=$(stats "$1" "$2")
    read -r runs ok med mn mx w own <<< "$s"
    [ "$runs" -gt 0 ] || return 0
    local ev=$events
    [ "$2" = 1 ] || ev="$2 x $events"
    if [ "$ok" = 0 ]; then
        echo "| $3 | $2 | $ev | failed | | | | 0/$runs |"
        failed=1
        if [ "$1" = pg ] && [ "$2" = "$hosts" ]; then target_rate=failed; fi
        return 0
    fi
    [ "$ok" = "$runs" ] || failed=1
    echo "| $3 | $2 | $ev | $med | $mn-$mx | $w | $own | $ok/$runs |"
    if [ "$1" = pg ] && [ "$2" = "$hosts" ]; then target_rate=$med; fi
}
if [ "$pg_up" = 1 ]; then
    row pg 1 "PostgreSQL $pg_ver, local (TCP loopback)"
    row pg "$hosts" "PostgreSQL $pg_ver, local, one database"
fi
row sqlite 1 "SQLite ${sqlite_ver:+$sqlite_ver }file (WAL, synchronous=NORMAL)"
row sqlite "$hosts" "SQLite, one file shared"
echo
if [ "$pg_up" = 1 ]; then
    echo "PostgreSQL: $pg_set (--fsync $fsync); the server from tests/support/pg.sh."
fi
[ -z "$pg_note" ] || echo "$pg_note"
echo
echo "| target | figure | limit | |"
echo "|---|---|---|---|"
if [ "$target_rate" = failed ]; then
    echo "| $hosts hosts to one local PostgreSQL, events committed per second in total (issue #21) | failed | ≥ 50 000 / s | **not met** |"
elif [ -n "$target_rate" ]; then
    verdict='**not met**'
    [ "$target_rate" -lt 50000 ] || verdict=met
    echo "| $hosts hosts to one local PostgreSQL, events committed per second in total (issue #21) | $target_rate / s | ≥ 50 000 / s | $verdict |"
else
    echo "| $hosts hosts to one local PostgreSQL, events committed per second in total (issue #21) | - | ≥ 50 000 / s | not measured |"
fi
[ "$failed" = 0 ] || log "some groups failed (see above)"
exit "$failed"
