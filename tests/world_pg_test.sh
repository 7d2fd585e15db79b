#!/usr/bin/env bash
# One World on PostgreSQL, end to end (issue #21): real `aurora-mcp`
# processes and real fixture Apps against a PostgreSQL this test starts
# itself (tests/support/pg.sh), checked in the database with psql.
#   a. four hosts at once, the same 10 000 events each, with repeats:
#      each id committed once, seq and every scope's sequences dense, the
#      same journal from every config dir, the hosts' counts add up;
#   b. a host killed with SIGKILL mid-flood: nothing half-committed, and a
#      rerun commits exactly the missing events;
#   c. the database restarted mid-flood: the host reconnects and every
#      event is accounted for;
#   d. the database away for longer than journal_wait_ms: no hang, the
#      lost events counted, a later run commits again;
#   e. TLS (verify-full), the password from journal_password_env, config
#      errors, and no password in any log or output;
#   f. journal --after / --scope the same on PostgreSQL as on SQLite, and
#      journal --follow streaming a run's commits as they happen.
# Every SQL and line check is also run against deliberately broken data
# (the "control:" checks): a check that cannot fail would pass those.
# usage: world_pg_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 (skip) only when the PostgreSQL server programs are absent.
set -u
# absolute: the hosts run with other working directories
BUILD=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
BIN="$BUILD/bin/aurora-mcp"
FIX="$BUILD/bin/aur-fixture-server"
PLUG="$BUILD/plugins"
PGSH="$SRC/tests/support/pg.sh" # its own header says how to use it
pgsh() { sh "$PGSH" "$@"; }
. "$SRC/tests/support/expect.sh"

# The server programs: on PATH or where Debian's postgresql puts them.
if ! command -v initdb >/dev/null 2>&1 &&
    ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "SKIP: no PostgreSQL server programs (initdb)"
    exit 77
fi

# Nothing from the caller's libpq environment may reach a host: the
# password must come from journal_password_env, the TLS settings from
# the URI.
unset PGPASSWORD PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGSERVICE \
    PGSSLMODE PGSSLROOTCERT PGOPTIONS PGREQUIRESSL PGSERVICEFILE
T=$(mktemp -d /tmp/aur-test-wpg-XXXXXX)
chmod 755 "$T" # pg.sh may run the server as another user
export PGPASSFILE="$T/no-pgpass" # never ~/.pgpass
PWVAR=AUR_WPG_PASSWORD
PW="wpg-pw-$RANDOM$RANDOM-x9"       # cluster A
PW_TLS="wpg-tls-$RANDOM$RANDOM-q7"  # cluster B
PW_WRONG="wpg-wrong-$RANDOM$RANDOM" # never a real password
CAPS='{"org.aurorabot/world-events":{"version":1}}'
PIDS=()
CLUSTERS=()

cleanup() {
    local p c
    exec 7>&- 2>/dev/null
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    for c in "${CLUSTERS[@]}"; do pgsh stop "$c" >/dev/null 2>&1; done
    if [ "${WORLD_PG_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
say() { echo "== $*"; }
# wait_until TENTHS CMD...: CMD every 0.1 s until it succeeds, for at
# most TENTHS tenths of a second (a deadline, however long CMD takes);
# the status of the last try.
wait_until() {
    local end=$(($(now_ms) + $1 * 100))
    shift
    while :; do
        "$@" && return 0
        [ "$(now_ms)" -lt "$end" ] || return 1
        sleep 0.1
    done
}
alive() { kill -0 "$1" 2>/dev/null; }
# forget PID: a reaped child leaves the list cleanup kills (its pid may
# be reused by then).
forget() {
    local p keep=()
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}
# wait_exit PID TENTHS: wait for PID (a child) to end, bounded; its exit
# status, or 255 after a SIGKILL when it did not end in time.
wait_exit() {
    if ! wait_until "$2" eval '! alive '"$1"; then
        bad "process $1 did not end within $(($2 / 10)) s: killed"
        kill -KILL "$1" 2>/dev/null
    fi
    wait "$1"
    local rc=$?
    forget "$1"
    return $rc
}

# --- the clusters ----------------------------------------------------------
# pg_start NAME [pg.sh options]: a cluster in $T/NAME, its URI in
# $T/NAME.uri (not run in $(...): cleanup must know the cluster).
# pg.sh's watcher also stops it should this script be killed.
export AUR_PG_OWNER=$$
pg_start() {
    local d="$T/$1"
    shift
    mkdir -p "$d"
    CLUSTERS+=("$d")
    pgsh start "$d" "$@" >"$d.uri"
}
# sql DIR SQL: SQL on cluster DIR's database aurora (as its superuser,
# over the socket), the rows unaligned.
sql() { pgsh psql "$1" "$2"; }

# --- hosts -------------------------------------------------------------------
# mkhost DIR JOURNAL [host.ini line]...: a host whose journal key is on
# line 4 (the config errors below name it).
mkhost() {
    local d="$1" j="$2" l
    shift 2
    mkdir -p "$d/apps.d"
    {
        printf '[host]\nplugins = transport-stdio ext-world-events\n'
        printf 'plugin_dir = %s\njournal = %s\n' "$PLUG" "$j"
        for l in "$@"; do printf '%s\n' "$l"; done
        printf 'log_file = %s/host.log\nlog_level = debug\n' "$d"
        printf '[mcp]\nenabled = true\n'
    } >"$d/host.ini"
}
# addapp DIR PKG [fixture option]...: the App, on the world-events
# extension; its --log names DIR (the marker of its processes).
addapp() {
    local d="$1" p="$2" a
    shift 2
    {
        printf '[app]\npackage = %s\nenabled = true\ntransport = stdio\n' "$p"
        printf 'timeout_seconds = 60\nevent_mode = world_events\n'
        printf '[stdio]\ncommand = %s\nworking_dir = .\n' "$FIX"
        for a in --log "$d/server.log" --era modern --extensions "$CAPS" \
            --lifetime 900 "$@"; do
            printf 'arg = %s\n' "$a"
        done
    } >"$d/apps.d/a.ini"
}
PWENV="journal_password_env = $PWVAR"
# h PW CMD...: CMD with the journal password in $PWVAR.  (In the
# background, `env` itself is started: it execs CMD, so $! is CMD's pid;
# a function there would be a subshell's.)
h() {
    local pw="$1"
    shift
    env "$PWVAR=$pw" "$@"
}
# The last "events: ..." line of a host's log as "R A D X P" (received,
# accepted, duplicates, rejected, dropped); empty if none.
ev_counts() {
    grep -o 'events: [0-9]* received, [0-9]* accepted, [0-9]* duplicates, [0-9]* rejected, [0-9]* dropped' \
        "$1/host.log" 2>/dev/null | tail -1 | tr -cs '0-9' ' ' | sed 's/^ //; s/ $//'
}
# counts_add_up "R A D X P" [R]: empty when A + D + X + P = R (and R is the
# given one), else why not.
counts_add_up() {
    local r a d x p
    read -r r a d x p <<<"$1"
    if [ -z "$p" ]; then
        echo "no counts"
    elif [ $((a + d + x + p)) -ne "$r" ]; then
        echo "$a + $d + $x + $p != $r"
    elif [ -n "${2:-}" ] && [ "$r" -ne "$2" ]; then
        echo "received $r, not $2"
    fi
}
leftover() { settle_marker "$1/server.log" 100; }

# serve_start DIR PW: `aurora-mcp serve -c DIR` on a fifo (fd 7), ready.
SPID="" SD=""
serve_start() {
    SD="$1"
    rm -f "$SD/in"
    echo 0 >"$SD/rid" # request ids, counted in a file: req runs in $(...)
    mkfifo "$SD/in"
    env "$PWVAR=$2" "$BIN" serve -c "$SD" <"$SD/in" >"$SD/serve.out" 2>"$SD/serve.err" &
    SPID=$!
    PIDS+=("$SPID")
    exec 7>"$SD/in"
    wait_until 300 grep -q '"ready":true' "$SD/serve.out" ||
        bad "serve in $SD not ready: $(head -c 600 "$SD/serve.out" "$SD/serve.err")"
}
# req JSON-WITHOUT-ID: send it with the next id, print its answer (30 s).
req() {
    local id i line
    id=$(($(cat "$SD/rid") + 1))
    echo "$id" >"$SD/rid"
    # (a write to a fifo nobody reads would kill this script: SIGPIPE)
    alive "$SPID" || { bad "serve in $SD is gone, not sent: $1"; return 1; }
    printf '{"id":%d,%s\n' "$id" "${1#\{}" >&7
    for ((i = 0; i < 300; i++)); do
        line=$(grep -m1 "^{\"id\":$id," "$SD/serve.out") && {
            printf '%s\n' "$line"
            return 0
        }
        sleep 0.1
    done
    bad "no answer to $1 in $SD"
    return 1
}
# The world-events counters of the status answer on stdin:
# "received committed duplicates journal_error queued dropped conflicts
# invalid".
we_status() {
    python3 -c '
import json, sys
try:
    d = json.loads(sys.stdin.readline())
    w = d["result"]["apps"][0]["extension_status"]["org.aurorabot/world-events"]
    r = w["rejected_by_reason"]
    print(w["received"], w["committed"], w["duplicates"], r["journal_error"],
          w["queued"], w["dropped_inactive"], r["commit_conflict"],
          r["invalid_payload"])
except Exception as e:
    print("error", e)'
}
# The journal member of the status answer on stdin, KEY=VALUE words.
journal_status() {
    python3 -c '
import json, sys
try:
    j = json.loads(sys.stdin.readline())["result"]["journal"]
    print(" ".join("%s=%s" % (k, json.dumps(j[k])) for k in sorted(j)))
except Exception as e:
    print("no journal in status:", repr(e))'
}
# flood_done N: the serve host received N events and answered them all.
flood_done() {
    local s
    s=$(req '{"op":"status"}' | we_status)
    set -- "$1" $s
    [ "$2" = "$1" ] && [ "$6" = 0 ]
}
# serve_stop [TENTHS]: the shutdown op, then EOF; waits (bounded, default
# 30 s) and sets rc (its exit status) and ms (how long it took).
serve_stop() {
    local t0
    t0=$(now_ms)
    req '{"op":"shutdown"}' >/dev/null
    exec 7>&-
    wait_exit "$SPID" "${1:-300}"
    rc=$?
    ms=$(($(now_ms) - t0))
}

# --- the checks on the database ----------------------------------------------
CLEAN="first=1 holes=0 head_lag=0 dup_ids=0 bare=0 orphans=0 short_events=0 bad_scopes=0 misnumbered=0"
# integrity DIR [COMMITS SCOPES HEAD]: the journal tables' invariants as
# KEY=N words; $CLEAN when they hold.  first/holes: seq is exactly
# 1..count; head_lag: world_head (what followers and appends read) is
# max(seq); dup_ids: a commit id twice; bare: a commit without scope rows;
# orphans: scope rows without their commit; short_events: an event commit
# without both its scopes (its own and the App's); bad_scopes: scopes
# whose sequences are not exactly 1..count; misnumbered: scope rows whose
# sequence is not their rank by seq within the scope.
integrity() {
    local c="${2:-world_commits}" s="${3:-world_commit_scopes}" hd="${4:-world_head}"
    sql "$1" "SELECT concat_ws(' ',
 'first=' || (SELECT COALESCE(min(seq), 1) FROM $c),
 'holes=' || (SELECT COALESCE(max(seq), 0) - count(*) FROM $c),
 'head_lag=' || (SELECT COALESCE((SELECT max(seq) FROM $c), 0) - (SELECT seq FROM $hd)),
 'dup_ids=' || (SELECT count(*) - count(DISTINCT commit_id) FROM $c),
 'bare=' || (SELECT count(*) FROM $c AS x WHERE NOT EXISTS
     (SELECT 1 FROM $s AS y WHERE y.commit_seq = x.seq)),
 'orphans=' || (SELECT count(*) FROM $s AS y WHERE NOT EXISTS
     (SELECT 1 FROM $c AS x WHERE x.seq = y.commit_seq)),
 'short_events=' || (SELECT count(*) FROM $c AS x LEFT JOIN
     (SELECT commit_seq, count(*) AS n FROM $s GROUP BY commit_seq) AS y
     ON y.commit_seq = x.seq
     WHERE x.kind = 'mcp.event.received' AND COALESCE(y.n, 0) <> 2),
 'bad_scopes=' || (SELECT count(*) FROM (SELECT scope FROM $s GROUP BY scope
     HAVING min(sequence) <> 1 OR max(sequence) <> count(*)
         OR count(DISTINCT sequence) <> count(*)) AS z),
 'misnumbered=' || (SELECT count(*) FROM (SELECT sequence - row_number()
     OVER (PARTITION BY scope ORDER BY commit_seq) AS d FROM $s) AS z
     WHERE d <> 0))"
}
# events_in DIR PKG: event commits of that App in the database.
events_in() {
    sql "$1" "SELECT count(*) FROM world_commits
 WHERE kind = 'mcp.event.received' AND source = 'mcp:$2'"
}
# integrity_controls DIR: each way of breaking a copy of the tables must
# show in integrity's words (the copy is dropped again).
integrity_controls() {
    local d="$1" got break want
    sql "$d" "SET client_min_messages = warning;
 DROP SCHEMA IF EXISTS wpg_ctl CASCADE; CREATE SCHEMA wpg_ctl;
 CREATE TABLE wpg_ctl.c AS SELECT * FROM world_commits;
 CREATE TABLE wpg_ctl.s AS SELECT * FROM world_commit_scopes;
 CREATE TABLE wpg_ctl.h AS SELECT * FROM world_head;" >/dev/null
    expect_eq "$(integrity "$d" wpg_ctl.c wpg_ctl.s wpg_ctl.h)" "$CLEAN" "control: the unbroken copy is clean"
    # break | a word the check must show
    while IFS='|' read -r break want; do
        got=$(sql "$d" "BEGIN; $break;" 2>&1; integrity "$d" wpg_ctl.c wpg_ctl.s wpg_ctl.h)
        # every break is undone by rebuilding the copy
        sql "$d" "TRUNCATE wpg_ctl.c, wpg_ctl.s, wpg_ctl.h;
 INSERT INTO wpg_ctl.c SELECT * FROM world_commits;
 INSERT INTO wpg_ctl.s SELECT * FROM world_commit_scopes;
 INSERT INTO wpg_ctl.h SELECT * FROM world_head;" >/dev/null
        case " $got " in
        *" $want "*) ok ;;
        *) bad "control: after '$break' the check says '$got', want $want" ;;
        esac
    done <<'EOF'
DELETE FROM wpg_ctl.s WHERE commit_seq = 5000; DELETE FROM wpg_ctl.c WHERE seq = 5000; COMMIT|holes=1
UPDATE wpg_ctl.s SET commit_seq = commit_seq + 1; UPDATE wpg_ctl.c SET seq = seq + 1; UPDATE wpg_ctl.h SET seq = seq + 1; COMMIT|first=2
UPDATE wpg_ctl.h SET seq = seq - 1; COMMIT|head_lag=1
UPDATE wpg_ctl.c SET commit_id = (SELECT commit_id FROM wpg_ctl.c WHERE seq = 1) WHERE seq = 2; COMMIT|dup_ids=1
DELETE FROM wpg_ctl.s WHERE commit_seq = 1; COMMIT|bare=1
INSERT INTO wpg_ctl.s VALUES (999999999, 'wpg:ctl', 1); COMMIT|orphans=1
DELETE FROM wpg_ctl.s WHERE ctid = (SELECT ctid FROM wpg_ctl.s WHERE scope LIKE 'flood:%' ORDER BY commit_seq DESC LIMIT 1); COMMIT|short_events=1
UPDATE wpg_ctl.s SET sequence = sequence + 1 WHERE ctid = (SELECT ctid FROM wpg_ctl.s WHERE scope = 'flood:1' ORDER BY sequence DESC LIMIT 1); COMMIT|bad_scopes=1
UPDATE wpg_ctl.s SET sequence = 1 - sequence WHERE scope = 'flood:2' AND sequence IN (1, 2); UPDATE wpg_ctl.s SET sequence = CASE sequence WHEN 0 THEN 2 ELSE 1 END WHERE scope = 'flood:2' AND sequence IN (0, -1); COMMIT|misnumbered=2
EOF
    sql "$d" "SET client_min_messages = warning; DROP SCHEMA wpg_ctl CASCADE" >/dev/null
}
# lines_check FILE N: empty when FILE holds N journal lines with seq
# 1..N in order and N distinct commit ids, else why not.
lines_check() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
seqs, ids = [], set()
for n, line in enumerate(open(sys.argv[1]), 1):
    try:
        c = json.loads(line)
    except ValueError:
        print("line %d is not JSON" % n); sys.exit()
    seqs.append(c["seq"]); ids.add(c["commit_id"])
want = int(sys.argv[2])
if seqs != list(range(1, want + 1)):
    bad = next((i for i, s in enumerate(seqs) if s != i + 1), len(seqs))
    print("%d lines, seq %s at line %d" % (len(seqs),
          seqs[bad] if bad < len(seqs) else "missing", bad + 1))
elif len(ids) != want:
    print("%d distinct commit ids in %d lines" % (len(ids), want))
EOF
}

# ===========================================================================
say "clusters"
mkdir -p "$T/h"
t0=$(now_ms)
pg_start pgA --password "$PW"
expect_eq $? 0 "pg.sh start (TCP, password)"
URI_A=$(cat "$T/pgA.uri")
echo "cluster A: $URI_A ($(($(now_ms) - t0)) ms)"
case $URI_A in postgresql://*@127.0.0.1:*/aurora) ok ;; *) bad "cluster A URI: '$URI_A'" ;; esac
expect_eq "$(cat "$T/pgA/uri" 2>/dev/null)" "$URI_A" "pg.sh writes DIR/uri"
PORT_A=${URI_A##*:}
PORT_A=${PORT_A%%/*}

# ===========================================================================
say "a. four hosts at once, the same 10 000 events, each sent 3 times"
PKG=org.test.pga
N=10000
for i in 1 2 3 4; do
    mkhost "$T/h/a$i" "$URI_A" "$PWENV"
    # 20 000 a second: each host's 30 000 sends last ~1.5 s, so the four
    # runs overlap whatever the start-up jitter.
    addapp "$T/h/a$i" $PKG --events-before-call $N --event-repeat 3 \
        --event-scopes 4 --event-rate 20000
done
t0=$(now_ms)
apids=()
for i in 1 2 3 4; do
    env "$PWVAR=$PW" "$BIN" call -c "$T/h/a$i" aur.mcp.$PKG.t0000 >"$T/h/a$i/out" 2>"$T/h/a$i/err" &
    apids+=($!)
    PIDS+=($!)
done
for i in 1 2 3 4; do
    wait_exit "${apids[$((i - 1))]}" 1800
    expect_eq $? 0 "a: host $i call"
    expect_has "$(cat "$T/h/a$i/out")" '"status":"succeeded"' "a: host $i call status"
done
echo "a: four calls done in $(($(now_ms) - t0)) ms"
# When each host ran: its first log line to its events line (the same
# day's HH:MM:SS.mmm compare as text).
firsts="" lasts=""
for i in 1 2 3 4; do
    f=$(head -1 "$T/h/a$i/host.log" | cut -c12-23)
    l=$(grep 'events: ' "$T/h/a$i/host.log" | tail -1 | cut -c12-23)
    echo "a: host $i ran $f .. $l, events: $(ev_counts "$T/h/a$i")"
    firsts="$firsts $f"
    lasts="$lasts $l"
done
# shellcheck disable=SC2086
if [[ "$(printf '%s\n' $firsts | sort | tail -1)" < "$(printf '%s\n' $lasts | sort | head -1)" ]]; then ok; else
    bad "a: the four runs did not overlap: starts$firsts, ends$lasts"
fi
# The database.
expect_eq "$(events_in "$T/pgA" $PKG)" $N "a: event commits in the database"
total=$(sql "$T/pgA" "SELECT count(*) FROM world_commits")
echo "a: $total commits in all ($((total - N)) lifecycle commits of the four runs)"
expect_eq "$(sql "$T/pgA" "SELECT count(*) FROM world_commits WHERE kind <> 'mcp.event.received'")" 12 "a: 3 lifecycle commits per run"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "a: journal tables consistent"
expect_eq "$(sql "$T/pgA" "SELECT min(seq) || '..' || max(seq) || ' ' || count(*) FROM world_commits")" "1..$total $total" "a: seq exactly 1..count"
expect_eq "$(sql "$T/pgA" "SELECT string_agg(scope || '=' || n || ':' || lo || '..' || hi, ' ' ORDER BY scope)
 FROM (SELECT scope, count(*) AS n, min(sequence) AS lo, max(sequence) AS hi FROM world_commit_scopes GROUP BY scope) AS x")" \
    "aurora:mcp:$PKG=$total:1..$total flood:1=2500:1..2500 flood:2=2500:1..2500 flood:3=2500:1..2500 flood:4=2500:1..2500" \
    "a: every scope's sequences exactly 1..count"
expect_eq "$(sql "$T/pgA" "SELECT count(DISTINCT commit_id) FROM world_commits WHERE commit_id LIKE 'mcp:$PKG:event:pre-%'")" $N "a: ids pre-0..pre-9999 each once"
expect_eq "$(sql "$T/pgA" "SELECT count(*) FROM world_commits WHERE kind = 'mcp.event.received'
 AND commit_id NOT IN (SELECT 'mcp:$PKG:event:pre-' || g FROM generate_series(0, $((N - 1))) AS g)")" 0 "a: no other event id"
# The journal, through the CLI, from each host's config dir.
for i in 1 2 3 4; do
    h "$PW" "$BIN" journal -c "$T/h/a$i" >"$T/h/a$i/journal" 2>"$T/h/a$i/journal.err"
    expect_eq $? 0 "a: journal from host $i"
done
expect_eq "$(lines_check "$T/h/a1/journal" "$total")" "" "a: journal lines are seq 1..$total in order"
expect_eq "$(grep -c '"kind":"mcp.event.received"' "$T/h/a1/journal")" $N "a: journal shows $N events"
for i in 2 3 4; do
    cmp -s "$T/h/a1/journal" "$T/h/a$i/journal"
    expect_eq $? 0 "a: host $i prints the same journal as host 1"
done
# The hosts' own counts: each received all 30 000 and answered every one;
# between them they committed each id once.
sum=0
for i in 1 2 3 4; do
    c=$(ev_counts "$T/h/a$i")
    expect_eq "$(counts_add_up "$c")" "" "a: host $i received = committed + duplicates ($c)"
    read -r r a _ x p <<<"$c"
    # Nothing refused; a drop only as what close's bounded drain (2 s)
    # could not hand to the journal in time under four-host contention,
    # and then exactly as many as close logged as overdue.
    overdue=$(grep -o 'close: [0-9]* server messages that arrived before it were not handled' \
        "$T/h/a$i/host.log" | tr -cd '0-9\n' | awk '{s += $1} END {print s + 0}')
    expect_eq "$x $p" "0 $overdue" "a: host $i nothing rejected, dropped only as close's overdue count"
    [ "$p" = 0 ] || echo "a: host $i: $p events handled after close's drain time (counted as dropped)"
    # All were sent before the call's answer: each must reach the plugin
    # and be counted (read by the host, then handled while close drains).
    expect_eq "$r" $((3 * N)) "a: host $i received all $((3 * N)) events sent before the answer"
    sum=$((sum + ${a:-0}))
done
expect_eq $sum $N "a: the four hosts committed $N in all"
for i in 1 2 3 4; do expect_eq "$(leftover "$T/h/a$i")" 0 "a: no App left of host $i"; done

# The checks above, shown to fail on broken data.
integrity_controls "$T/pgA"
sed 5000d "$T/h/a1/journal" >"$T/ctl.journal"
[ -n "$(lines_check "$T/ctl.journal" "$total")" ] && ok || bad "control: a missing journal line passes"
awk 'NR == 11 { held = $0; next } NR == 12 { print; print held; next } 1' "$T/h/a1/journal" >"$T/ctl.journal"
[ -n "$(lines_check "$T/ctl.journal" "$total")" ] && ok || bad "control: two swapped journal lines pass"
{ cat "$T/h/a1/journal"; sed -n '$p' "$T/h/a1/journal" | sed "s/^{\"seq\":$total,/{\"seq\":$((total + 1)),/"; } >"$T/ctl.journal"
[ -n "$(lines_check "$T/ctl.journal" $((total + 1)))" ] && ok || bad "control: a commit id twice passes"
[ -n "$(counts_add_up "30000 7000 22999 0 0" 30000)" ] && ok || bad "control: counts one short pass"
[ -n "$(counts_add_up "29999 7000 22999 0 0" 30000)" ] && ok || bad "control: 29 999 received passes"
[ -n "$(counts_add_up "")" ] && ok || bad "control: no events line passes"

# ===========================================================================
say "b. a host killed with SIGKILL mid-flood, then the same events again"
PKG=org.test.pgb
NB=200000
mkhost "$T/h/b" "$URI_A" "$PWENV"
# Paced at 40 000 a second (5 s), so the kill surely lands mid-flood.
addapp "$T/h/b" $PKG --event-flood $NB --event-scopes 4 --event-rate 40000
serve_start "$T/h/b" "$PW"
expect_has "$(req '{"op":"call","tool":"aur.mcp.'$PKG'.t0000","arguments":{}}')" '"status":"succeeded"' "b: call"
t0=$(now_ms)
wait_until 600 eval '[ "$(events_in "$T/pgA" $PKG)" -ge 20000 ]' || bad "b: fewer than 20000 events committed in 60 s"
open_tx() { grep -c 'unexpected EOF on client connection with an open transaction' "$T/pgA/log"; }
tx0=$(open_tx)
{ kill -KILL "$SPID"; wait "$SPID"; } 2>/dev/null # (no "Killed" line from bash)
expect_eq $? 137 "b: the host died of SIGKILL"
forget "$SPID"
exec 7>&-
echo "b: killed after $(($(now_ms) - t0)) ms of flood"
expect_eq "$(leftover "$T/h/b")" 0 "b: no App left after the host's SIGKILL"
# The server ends the dead session (rolling back a transaction it left
# open; a COMMIT already sent still completes): count once it is gone.
sessions() {
    sql "$T/$1" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
}
wait_until 100 eval '[ "$(sessions pgA)" = 0 ]' || bad "b: the killed host's session is still open after 10 s"
killed_at=$(events_in "$T/pgA" $PKG)
echo "b: $killed_at of $NB events committed at the kill; the server saw the kill end an open transaction: $([ "$(open_tx)" -gt "$tx0" ] && echo yes || echo no)"
[ "$killed_at" -ge 20000 ] && [ "$killed_at" -lt $NB ] && ok || bad "b: not mid-flood: $killed_at of $NB"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "b: nothing half-committed"
# The same events once more: exactly the missing ones are new.
serve_start "$T/h/b" "$PW"
t0=$(now_ms)
expect_has "$(req '{"op":"call","tool":"aur.mcp.'$PKG'.t0000","arguments":{}}')" '"status":"succeeded"' "b: rerun call"
wait_until 1800 flood_done $NB || bad "b: rerun: the flood was not answered in 180 s: $(req '{"op":"status"}' | we_status)"
serve_stop
expect_eq "$rc" 0 "b: rerun serve exit"
c=$(ev_counts "$T/h/b")
echo "b: rerun took $(($(now_ms) - t0)) ms (shutdown $ms ms): events $c"
expect_eq "$c" "$NB $((NB - killed_at)) $killed_at 0 0" "b: the rerun committed exactly the $((NB - killed_at)) missing events"
expect_eq "$(events_in "$T/pgA" $PKG)" $NB "b: all $NB events in the database, once"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "b: journal tables consistent after the rerun"

# ===========================================================================
say "c. the database restarts mid-flood"
PKG=org.test.pgc
NC=100000
mkhost "$T/h/c" "$URI_A" "$PWENV"
addapp "$T/h/c" $PKG --event-flood $NC --event-scopes 4 --event-rate 20000
serve_start "$T/h/c" "$PW"
expect_has "$(req '{"op":"call","tool":"aur.mcp.'$PKG'.t0000","arguments":{}}')" '"status":"succeeded"' "c: call"
wait_until 600 eval '[ "$(events_in "$T/pgA" $PKG)" -ge 10000 ]' || bad "c: fewer than 10000 events in 60 s"
before=$(events_in "$T/pgA" $PKG)
t0=$(now_ms)
pgsh restart "$T/pgA" >"$T/h/c/restart.out" 2>&1
expect_eq $? 0 "c: pg.sh restart"
echo "c: restarted at $before of $NC events, in $(($(now_ms) - t0)) ms"
wait_until 1800 flood_done $NC || bad "c: the flood was not answered in 180 s after the restart"
echo "c: flood answered $(($(now_ms) - t0)) ms after the restart began"
st=$(req '{"op":"status"}')
js=$(journal_status <<<"$st")
echo "c: status journal: $js"
expect_has " $js " ' connection="connected" ' "c: status: journal connected again"
case " $js " in *" reconnects=0 "* | *"no journal"*) bad "c: status counts no reconnect: $js" ;; *) ok ;; esac
serve_stop
expect_eq "$rc" 0 "c: serve exit"
c=$(ev_counts "$T/h/c")
s=$(we_status <<<"$st")
echo "c: events $c; status (received committed duplicates journal_error queued dropped conflicts invalid) $s"
expect_eq "$(counts_add_up "$c" $NC)" "" "c: received = committed + duplicates + rejected"
read -r r a d x p <<<"$c"
read -r sr sa sd sj sq sp sc si <<<"$s"
expect_eq "$sr $sa $sd $sj $sq $sp $sc $si" "$r $a $d $x 0 $p 0 0" "c: status = log; every rejection a journal_error"
in_db=$(events_in "$T/pgA" $PKG)
echo "c: $in_db events in the database; the host counted $a committed, $d duplicates, $x failed"
# Each id at most once (integrity: dup_ids), every counted commit there;
# beyond those only events whose commit's answer was lost in the restart
# (a retry then finds them present: duplicates).
[ "$in_db" -ge "$a" ] && [ "$in_db" -le $((a + d)) ] && ok ||
    bad "c: $in_db events in the database, the host counted $a committed + $d duplicates"
[ "$in_db" -gt "$before" ] && ok || bad "c: nothing committed after the restart"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "c: journal tables consistent"
grep -qi 'reconnect' "$T/h/c/host.log" && ok || bad "c: the log does not show the reconnect"
grep -i 'journal' "$T/h/c/host.log" | grep -i -m3 'reconnect\|lost\|unavailable' | sed 's/^/c: log: /'

# ===========================================================================
say "d. the database away for longer than journal_wait_ms = 1000"
PKG=org.test.pgd
ND=60000
mkhost "$T/h/d" "$URI_A" "$PWENV" "journal_wait_ms = 1000"
addapp "$T/h/d" $PKG --event-flood $ND --event-scopes 4 --event-rate 20000
serve_start "$T/h/d" "$PW"
expect_has "$(req '{"op":"call","tool":"aur.mcp.'$PKG'.t0000","arguments":{}}')" '"status":"succeeded"' "d: call"
wait_until 600 eval '[ "$(events_in "$T/pgA" $PKG)" -ge 5000 ]' || bad "d: fewer than 5000 events in 60 s"
pgsh stop "$T/pgA" >/dev/null 2>&1
expect_eq $? 0 "d: pg.sh stop"
t0=$(now_ms)
# The flood goes on against a database that is away: the host must keep
# answering it (each batch waits 1 s at most, then fails at once).
wait_until 600 flood_done $ND
expect_eq $? 0 "d: the flood answered while the database is away (bound 60 s)"
dt=$(($(now_ms) - t0))
st=$(req '{"op":"status"}')
js=$(journal_status <<<"$st")
s=$(we_status <<<"$st")
echo "d: flood answered ${dt} ms after the stop; status journal: $js; events $s"
expect_has " $js " ' connection="unavailable" ' "d: status: journal unavailable"
read -r _ _ _ sj _ <<<"$s"
[ "${sj:-0}" -gt 0 ] && ok || bad "d: no journal_error counted: $s"
# Shut down with the database still away: bounded (the plugin's queue
# is, and each batch fails within journal_wait_ms).
serve_stop 150
expect_eq "$rc" 0 "d: serve exit with the database away"
echo "d: shutdown with the database away took $ms ms (bound 15 s)"
c=$(ev_counts "$T/h/d")
echo "d: events $c"
expect_eq "$(counts_add_up "$c" $ND)" "" "d: received = committed + duplicates + failed"
read -r r a d x p <<<"$c"
[ "$x" -gt 0 ] && ok || bad "d: the log counts no failed events: $c"
grep -q 'rejected: journal_error' "$T/h/d/host.log" && ok || bad "d: the log does not say journal_error"
# Back: what the host counted committed is there, and a new run commits.
t0=$(now_ms)
pgsh start "$T/pgA" --password "$PW" >"$T/h/d/start.out" 2>&1
expect_eq $? 0 "d: pg.sh start again"
expect_eq "$(cat "$T/h/d/start.out")" "$URI_A" "d: the cluster is back on its URI"
echo "d: database back in $(($(now_ms) - t0)) ms"
in_db=$(events_in "$T/pgA" $PKG)
[ "$in_db" -ge "$a" ] && [ "$in_db" -le $((a + d)) ] && ok ||
    bad "d: $in_db events in the database, the host counted $a committed + $d duplicates"
echo "d: $in_db of $ND events in the database, $x lost"
mkhost "$T/h/d2" "$URI_A" "$PWENV" "journal_wait_ms = 1000"
addapp "$T/h/d2" $PKG --events-before-call 1000
h "$PW" "$BIN" call -c "$T/h/d2" aur.mcp.$PKG.t0000 >"$T/h/d2/out" 2>"$T/h/d2/err"
expect_eq $? 0 "d: a new run after the outage"
expect_eq "$(ev_counts "$T/h/d2")" "1000 1000 0 0 0" "d: the new run committed its 1000 events"
expect_eq "$(events_in "$T/pgA" $PKG)" $((in_db + 1000)) "d: and they are in the database"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "d: journal tables consistent"

# ===========================================================================
say "e. TLS, the password from the environment, config errors, no secret"
mkdir -p "$T/certs" "$T/certs-other"
sh "$SRC/tests/support/mkcerts.sh" "$T/certs" && sh "$SRC/tests/support/mkcerts.sh" "$T/certs-other"
expect_eq $? 0 "e: test certificates"
pg_start pgB --tls "$T/certs" --password "$PW_TLS"
expect_eq $? 0 "pg.sh start (TLS, password)"
URI_B=$(cat "$T/pgB.uri")
echo "cluster B: $URI_B"
PKG=org.test.pge
TLS_OK="${URI_B/#postgresql:/postgres:}?sslmode=verify-full&sslrootcert=$T/certs/ca.pem"
mkhost "$T/h/e" "$TLS_OK" "$PWENV"
addapp "$T/h/e" $PKG --events-before-call 100
h "$PW_TLS" "$BIN" call -c "$T/h/e" aur.mcp.$PKG.t0000 >"$T/h/e/out" 2>"$T/h/e/err"
expect_eq $? 0 "e: verify-full with the test CA (postgres:// URI)"
expect_eq "$(events_in "$T/pgB" $PKG)" 100 "e: the events are in the TLS database"
# The host's own session is TLS (seen from the server while it serves).
serve_start "$T/h/e" "$PW_TLS"
expect_eq "$(sql "$T/pgB" "SELECT count(*) FILTER (WHERE s.ssl) || '/' || count(*)
 FROM pg_stat_activity AS a JOIN pg_stat_ssl AS s USING (pid)
 WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()")" "1/1" "e: the host's session is TLS"
serve_stop
expect_eq "$rc" 0 "e: serve exit"
# Another CA: refused at start, naming the journal.
mkhost "$T/h/e2" "$URI_B?sslmode=verify-full&sslrootcert=$T/certs-other/ca.pem" "$PWENV"
addapp "$T/h/e2" $PKG --events-before-call 1
h "$PW_TLS" "$BIN" call -c "$T/h/e2" aur.mcp.$PKG.t0000 >"$T/h/e2/out" 2>"$T/h/e2/err"
expect_eq $? 1 "e: a server certificate from another CA: exit 1"
out=$(cat "$T/h/e2/out")
echo "e: other CA: $out"
expect_has "$out" '"code":"journal_error"' "e: other CA: journal_error"
expect_has "$out" "journal 127.0.0.1:${URI_B##*:}" "e: other CA: the error names the journal"
expect_eq "$(leftover "$T/h/e2")" 0 "e: other CA: no App left"
# The wrong password: refused, and never repeated.
h "$PW_WRONG" "$BIN" call -c "$T/h/e" aur.mcp.$PKG.t0000 >"$T/h/e/out-wrong" 2>"$T/h/e/err-wrong"
expect_eq $? 1 "e: a wrong password: exit 1"
expect_has "$(cat "$T/h/e/out-wrong")" '"code":"journal_error"' "e: wrong password: journal_error"
echo "e: wrong password: $(cat "$T/h/e/out-wrong")"
# No password at all (no journal_password_env): the server wants one.
mkhost "$T/h/e3" "$TLS_OK"
addapp "$T/h/e3" $PKG --events-before-call 1
h "$PW_TLS" "$BIN" call -c "$T/h/e3" aur.mcp.$PKG.t0000 >"$T/h/e3/out" 2>"$T/h/e3/err"
expect_eq $? 1 "e: without journal_password_env the server refuses"
echo "e: no password: $(cat "$T/h/e3/out")"
# journal_password_env naming a variable that is missing, or empty.
for how in missing empty; do
    if [ $how = missing ]; then
        out=$(env -u $PWVAR "$BIN" check -c "$T/h/e" 2>&1)
    else
        out=$(env $PWVAR= "$BIN" check -c "$T/h/e" 2>&1)
    fi
    expect_eq $? 2 "e: password variable $how: config error"
    expect_has "$out" "journal_password_env" "e: password variable $how: names the key"
    expect_has "$out" "$PWVAR" "e: password variable $how: names the variable"
    echo "e: variable $how: $(grep -m1 -o '"message":"[^"]*"' <<<"$out")"
done
out=$(env -u $PWVAR "$BIN" call -c "$T/h/e" aur.mcp.$PKG.t0000 2>&1)
expect_eq $? 2 "e: call with the variable missing: config error"
# A password inside the URI (user:PW@ or ?password=PW): refused at
# config time, naming the line.
for pw in "$PW_TLS" "$PW_WRONG"; do
  for form in userinfo query; do
    if [ $form = userinfo ]; then
        mkhost "$T/h/e4" "${URI_B/aurora@/aurora:$pw@}" "$PWENV"
    else
        mkhost "$T/h/e4" "$URI_B?sslmode=prefer&password=$pw" "$PWENV"
    fi
    addapp "$T/h/e4" $PKG --events-before-call 1
    grep -q "^journal = .*$pw" "$T/h/e4/host.ini" || bad "e: the URI with a password was not written"
    out=$(h "$PW_TLS" "$BIN" check -c "$T/h/e4" 2>&1)
    expect_eq $? 2 "e: a password in the URI: config error"
    expect_has "$out" "host.ini:4: journal" "e: password in the URI: names host.ini, the line and the key"
    echo "$out" >>"$T/h/e4/outs"
    out=$(h "$PW_TLS" "$BIN" journal -c "$T/h/e4" 2>&1)
    expect_eq $? 2 "e: journal with a password in the URI: config error"
    echo "$out" >>"$T/h/e4/outs"
    rm "$T/h/e4/host.ini" # the only file that may hold it
  done
done
echo "e: password in the URI: $(grep -m1 -o '"message":"[^"]*"' "$T/h/e4/outs")"

# ===========================================================================
say "f. journal --after / --scope on PostgreSQL and SQLite; journal --follow"
USER_A=${URI_A#postgresql://}
USER_A=${USER_A%%@*}
sql "$T/pgA" "CREATE DATABASE aurora_f OWNER \"$USER_A\"" >/dev/null
expect_eq $? 0 "f: a fresh database"
URI_F="${URI_A%/aurora}/aurora_f"
PKG=org.test.pgf
mkhost "$T/h/fp" "$URI_F" "$PWENV"
mkhost "$T/h/fs" "$T/h/fs/data/w.sqlite3"
for d in fp fs; do
    addapp "$T/h/$d" $PKG --events-before-call 600 --event-repeat 2 --event-scopes 3
    h "$PW" "$BIN" call -c "$T/h/$d" aur.mcp.$PKG.t0000 >"$T/h/$d/out" 2>"$T/h/$d/err"
    expect_eq $? 0 "f: run on $d"
done
# Lifecycle commits differ by run (startup id, times): compare them by
# kind; events compare byte for byte.
norm() {
    sed -E '/"kind":"mcp\.(app|catalog)\./{s/"commit_id":"mcp:[0-9a-f]{32}:/"commit_id":"mcp:RUN:/;s/"occurred_at":"[^"]*"/"occurred_at":"T"/}'
}
jq_both() { # expected-lines journal-args...
    local want="$1" p s
    shift
    p=$(h "$PW" "$BIN" journal -c "$T/h/fp" "$@" 2>&1 | norm)
    s=$("$BIN" journal -c "$T/h/fs" "$@" 2>&1 | norm)
    expect_eq "$p" "$s" "f: journal $* the same on both"
    expect_eq "$(grep -c '^{"seq"' <<<"$p")" "$want" "f: journal $*: $want lines"
}
jq_both 603
jq_both 603 --after 0
jq_both 600 --after 3
jq_both 303 --after 300
jq_both 0 --after 603
jq_both 0 --after 999999
jq_both 200 --scope flood:2
jq_both 603 --scope aurora:mcp:$PKG
jq_both 168 --scope flood:3 --after 100
jq_both 0 --scope nope:1
h "$PW" "$BIN" journal -c "$T/h/fp" >"$T/h/fp/journal"
expect_eq "$(lines_check "$T/h/fp/journal" 603)" "" "f: PostgreSQL journal lines seq 1..603"
# --follow from another config dir (another host on the same database),
# started before the run: it prints the run's commits while the run is
# still going, then ends on SIGTERM.
for d in fp fs; do
    mkdir -p "$T/h/${d}f"
    cp "$T/h/$d/host.ini" "$T/h/${d}f/host.ini"
    sed -i "s|^log_file = .*|log_file = $T/h/${d}f/host.log|" "$T/h/${d}f/host.ini"
    mkdir -p "$T/h/${d}f/apps.d"
    env "$PWVAR=$PW" "$BIN" journal -c "$T/h/${d}f" --follow --after 603 >"$T/h/${d}f/follow" 2>"$T/h/${d}f/follow.err" &
    fpid=$!
    PIDS+=("$fpid")
    sleep 0.5
    alive "$fpid" && ok || bad "f: $d: journal --follow ended at once: $(cat "$T/h/${d}f/follow.err")"
    expect_eq "$(wc -l <"$T/h/${d}f/follow")" 0 "f: $d: --follow --after 603 prints nothing yet"
    addapp "$T/h/$d" $PKG --events-before-call 500 --event-offset 600 --event-scopes 3
    serve_start "$T/h/$d" "$PW"
    t0=$(now_ms)
    expect_has "$(req '{"op":"call","tool":"aur.mcp.'$PKG'.t0000","arguments":{}}')" '"status":"succeeded"' "f: $d: second run's call"
    wait_until 300 eval '[ "$(wc -l <"$T/h/${d}f/follow")" -ge 503 ]'
    expect_eq $? 0 "f: $d: --follow printed the run's 503 commits within 30 s"
    echo "f: $d: --follow had them $(($(now_ms) - t0)) ms after the call"
    alive "$SPID" && ok || bad "f: $d: the run had ended: not seen as they happen"
    serve_stop
    expect_eq "$rc" 0 "f: $d: second run exit"
    sleep 0.3 # nothing more may come
    kill -TERM "$fpid"
    wait_exit "$fpid" 50
    expect_eq $? 0 "f: $d: --follow exit on SIGTERM"
    expect_eq "$(cat "$T/h/${d}f/follow")" "$(h "$PW" "$BIN" journal -c "$T/h/$d" --after 603)" "f: $d: --follow printed exactly the new commits"
done
expect_eq "$(norm <"$T/h/fpf/follow")" "$(norm <"$T/h/fsf/follow")" "f: --follow the same on both"
# --follow --scope, and an end when stdout closes.
out=$(timeout 20 bash -c "env $PWVAR='$PW' '$BIN' journal -c '$T/h/fpf' --follow --scope flood:2 | head -n 3")
expect_eq $? 0 "f: --follow | head -n 3 ends when head does"
expect_eq "$(grep -c '"flood:2"' <<<"$out")" 3 "f: --follow --scope flood:2"

# ===========================================================================
say "secrets"
# Every log and every output of every host and CLI run: no password.
for pw in "$PW" "$PW_TLS" "$PW_WRONG"; do
    found=$(grep -rl -F -- "$pw" "$T/h" "$T/ctl.journal")
    expect_eq "$found" "" "no password in any log or output"
done
echo "secrets: searched $(find "$T/h" -type f | wc -l) files"
expect_eq "$(integrity "$T/pgA")" "$CLEAN" "end: journal tables consistent"
finish
