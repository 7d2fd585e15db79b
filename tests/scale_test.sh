#!/usr/bin/env bash
# Scale: the outcome, ordering and cleanup guarantees hold with N Apps on
# one host (issue #22: 200 in CTest, 1 000 with scripts/scale.sh).  N
# fixture servers (3 tools each, in pages of 2), some of them faulty by
# their index (P = 50, or 10 when N < 100; residues of i mod P):
#   3 "nope"   a call to a tool id it does not have      -> failed
#   4 crash    exits during the call (--exit-during-call) -> unknown, and a
#              later call is failed without being sent (its log: one call)
#   5 reject   answers -32602                             -> failed
#   6 iserror  isError with the text "boom"               -> unknown, "boom"
#   7 slow     answers after 300 ms                       -> succeeded
#   8 hang     never answers a call (only called in the SIGTERM step)
#   others     echo the argument                          -> succeeded
# Steps (wall times printed, never asserted):
#  1. discover: exit 0, every App ready in config order, N x 3 tool ids,
#     sorted, each once; the journal of the run is, per App in config
#     order, mcp.app.starting then mcp.app.ready, then mcp.catalog.frozen
#     per App in config order; no process left.
#  2. serve: all calls written at once (about 1.5 per App, concurrent):
#     each id answered exactly once with its outcome (and, succeeded, its
#     own text); then the crashed Apps' second calls failed, not sent;
#     status counts ready and unavailable Apps; shutdown: exit 0, the
#     serve run's journal in the same order, no process left.
#  3. SIGTERM to a serve holding N Apps with calls in flight (the hang
#     Apps'): exit 0 within 120 s, each in-flight call answered unknown
#     once, no process left.
#  4. one App among N fails to start (discover: its command does not
#     exist; serve: it is /bin/false, which exits at once): exit 1
#     (aurora-mcp(1): startup failure),
#     one error object naming that App and phase connect, its journal
#     commit mcp.app.failed, no process left.
#  5. world events: every App on the world-events extension sends 20
#     events, each twice, after one call (all at once): each committed
#     once, each App's in the order it sent them, the status counts all
#     2 x 20 received and none dropped; no process left.
# usage: scale_test.sh BUILD_DIR SOURCE_DIR [N]   (AUR_KEEP=1 keeps the
# temporary directory)
set -u
B=$(cd "$1" && pwd)
N=${3:-200}
BIN="$B/bin/aurora-mcp"
FIX="$B/bin/aur-fixture-server"
PLUG="$B/plugins"
T=$(mktemp -d /tmp/aur-test-scale-XXXXXX)
srv=
cleanup() {
    [ -n "$srv" ] && kill -KILL "$srv" 2>/dev/null
    exec 7>&- 2>/dev/null
    [ -n "${AUR_KEEP:-}" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/support/expect.sh"

case $N in '' | *[!0-9]*) echo "N must be a number" >&2; exit 2 ;; esac
[ "$N" -ge 10 ] || { echo "N must be 10 or more" >&2; exit 2; }
P=50
[ "$N" -lt 100 ] && P=10
TOOLS=3
# Every process of this run carries the marker: the Apps in their --log
# path, their supervisors ("aur-contain <package>") in the package.
M="s$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
D="$T/$M"
settle() { settle_marker "$M" 100; } # no process of the run left
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Each App's kind and package, by index.
KIND=() PKG=()
for ((i = 0; i < N; i++)); do
    case $((i % P)) in
    3) KIND[i]=nope ;; 4) KIND[i]=crash ;; 5) KIND[i]=reject ;;
    6) KIND[i]=iserror ;; 7) KIND[i]=slow ;; 8) KIND[i]=hang ;;
    *) KIND[i]=normal ;;
    esac
    printf -v 'PKG[i]' 'org.%s.a%04d' "$M" $i
done

# --- the config ------------------------------------------------------------
mkdir -p "$D/apps.d" "$D/logs"
printf '[host]\nplugins = transport-stdio ext-tool-contract ext-world-events\nplugin_dir = %s\njournal = data/w.sqlite3\nlog_level = warn\n[mcp]\nenabled = true\n' \
    "$PLUG" >"$D/host.ini"
APPKEYS= # more [app] keys, one per line
app_file() { # index [extra fixture args...]
    local i=$1 a
    shift
    {
        printf '[app]\npackage = %s\nenabled = true\ntransport = stdio\ntimeout_seconds = 120\n%s' "${PKG[i]}" "$APPKEYS"
        printf '[stdio]\ncommand = %s\nworking_dir = .\n' "$FIX"
        for a in --tools $TOOLS --page-size 2 --lifetime 1800 --log "$D/logs/a$(printf %04d "$i").log" "$@"; do
            printf 'arg = %s\n' "$a"
        done
    } >"$D/apps.d/a$(printf %04d "$i").ini"
}
for ((i = 0; i < N; i++)); do
    case ${KIND[i]} in
    crash) app_file $i --exit-during-call ;;
    reject) app_file $i --call-error -32602 ;;
    iserror) app_file $i --call-result '{"content":[{"type":"text","text":"boom"}],"isError":true}' ;;
    slow) app_file $i --call-delay-ms 300 ;;
    hang) app_file $i --hang-at call ;;
    *) app_file $i ;;
    esac
done
echo "scale_test: $N Apps ($TOOLS tools each), P = $P, marker $M"

# Per App in config order: starting, ready; then frozen per App.
for ((i = 0; i < N; i++)); do
    printf 'mcp.app.starting %s\nmcp.app.ready %s\n' "${PKG[i]}" "${PKG[i]}"
done >"$T/order.want"
for ((i = 0; i < N; i++)); do printf 'mcp.catalog.frozen %s\n' "${PKG[i]}"; done >>"$T/order.want"
# The lifecycle commits of the journal after seq $1, as "kind source".
lifecycle() {
    "$BIN" journal -c "$D" --after "$1" |
        sed -n 's/.*"kind":"\(mcp\.app\.starting\|mcp\.app\.ready\|mcp\.catalog\.frozen\)","source":"mcp:\([^"]*\)".*/\1 \2/p'
}
last_seq() { "$BIN" journal -c "$D" | tail -1 | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p'; }

# --- 1. discover -------------------------------------------------------------
t0=$(now_ms)
timeout -k 10 900 "$BIN" discover -c "$D" >"$T/discover.out" 2>"$T/discover.err"
rc=$?
echo "discover of $N Apps: exit $rc, $(($(now_ms) - t0)) ms"
expect_eq "$rc" 0 "discover exit"
out="$T/discover.out"
expect_eq "$(wc -l <"$out")" 1 "discover: one line"
expect_eq "$(grep -o '"state":"[a-z_]*"' "$out" | sort | uniq -c | sed 's/^ *//')" "$N \"state\":\"ready\"" "discover: every App ready"
# The Apps in config order; the tools sorted by id, each once, N x 3.
printf '%s\n' "${PKG[@]}" >"$T/pkgs.want"
grep -o '"package":"[^"]*"' "$out" | sed 's/"package":"\(.*\)"/\1/' >"$T/pkgs.got"
cmp -s "$T/pkgs.want" "$T/pkgs.got" && ok || bad "discover: Apps not in config order: $(diff "$T/pkgs.want" "$T/pkgs.got" | head -5)"
for ((i = 0; i < N; i++)); do
    for ((k = 0; k < TOOLS; k++)); do printf 'aur.mcp.%s.t%04d\n' "${PKG[i]}" $k; done
done | LC_ALL=C sort >"$T/tools.want"
sed 's/.*"tools":\[//' "$out" | grep -o '"id":"aur\.mcp\.[^"]*"' | sed 's/"id":"\(.*\)"/\1/' >"$T/tools.got"
expect_eq "$(wc -l <"$T/tools.got")" $((N * TOOLS)) "discover: N x $TOOLS tools frozen"
cmp -s "$T/tools.want" "$T/tools.got" && ok || bad "discover: tool ids (sorted, each once) differ: $(diff "$T/tools.want" "$T/tools.got" | head -5)"
[ -s "$T/discover.err" ] && bad "discover: stderr: $(head -3 "$T/discover.err")" || ok
expect_eq "$(settle)" 0 "discover: no process left"
lifecycle 0 >"$T/order.got"
cmp -s "$T/order.want" "$T/order.got" && ok || bad "discover: journal order: $(diff "$T/order.want" "$T/order.got" | head -6)"
expect_eq "$("$BIN" journal -c "$D" | wc -l)" $((3 * N)) "discover: 3 commits per App, nothing else"

# --- 2. serve: outcomes of concurrent calls ---------------------------------
# Requests (all written at once) and the answer each must get, as
# "id status[ content]" (content: only where it is the server's text).
: >"$T/calls" && : >"$T/want"
ncrash=0 ncalls=0
call() { # id tool text
    printf '{"id":"%s","op":"call","tool":"%s","arguments":{"text":"%s"}}\n' "$1" "$2" "$3" >>"$T/calls"
    ncalls=$((ncalls + 1))
}
for ((i = 0; i < N; i++)); do
    p=${PKG[i]}
    case ${KIND[i]} in
    hang) continue ;;
    nope) call "x$i" "aur.mcp.$p.nope" "x$i"; echo "x$i failed" >>"$T/want"
          call "c$i" "aur.mcp.$p.t0000" "c$i"; echo "c$i succeeded c$i" >>"$T/want" ;;
    crash) call "c$i" "aur.mcp.$p.t0000" "c$i"; echo "c$i unknown" >>"$T/want"
           ncrash=$((ncrash + 1)) ;;
    reject) call "c$i" "aur.mcp.$p.t0000" "c$i"; echo "c$i failed" >>"$T/want" ;;
    iserror) call "c$i" "aur.mcp.$p.t0002" "c$i"; echo "c$i unknown boom" >>"$T/want" ;;
    *) call "c$i" "aur.mcp.$p.t0000" "c$i"; echo "c$i succeeded c$i" >>"$T/want"
       if [ $((i % 2)) = 0 ]; then
           call "d$i" "aur.mcp.$p.t0001" "d$i"; echo "d$i succeeded d$i" >>"$T/want"
       fi ;;
    esac
done
# id, status and (succeeded or "boom") the content of each answer line.
answers() {
    sed -n 's/^{"id":"\([^"]*\)","result":{"status":"\([a-z]*\)","content":"\([^"\\]*\)".*/\1 \2 \3/p' "$1" |
        while read -r id st text; do
            case "$st $text" in
            "succeeded "* | "unknown boom") echo "$id $st $text" ;;
            *) echo "$id $st" ;;
            esac
        done | LC_ALL=C sort
}
lines() { local n; n=$(wc -l <"$1" 2>/dev/null); echo "${n:-0}"; }
wait_lines() { # file count seconds: until the file has count lines (or serve ended)
    local until=$(($(date +%s) + $3))
    while [ "$(lines "$1")" -lt "$2" ] && [ "$(date +%s)" -lt "$until" ] &&
        kill -0 "$srv" 2>/dev/null; do
        sleep 0.2
    done
}
start_serve() { # out err
    rm -f "$T/in"
    mkfifo "$T/in"
    "$BIN" serve -c "$D" <"$T/in" >"$1" 2>"$2" &
    srv=$!
    exec 7>"$T/in"
    t0=$(now_ms)
    wait_lines "$1" 1 900
    echo "serve of $N Apps: ready line after $(($(now_ms) - t0)) ms"
    expect_eq "$(head -1 "$1")" '{"ready":true,"tools":'$((N * TOOLS))'}' "serve: the ready line"
}
stop_serve() { # seconds: wait for serve to exit; rc = its status or "hung"
    local until=$(($(date +%s) + $1))
    while kill -0 "$srv" 2>/dev/null && [ "$(date +%s)" -lt "$until" ]; do sleep 0.1; done
    if kill -0 "$srv" 2>/dev/null; then
        kill -KILL "$srv"
        wait "$srv" 2>/dev/null
        rc=hung
    else
        wait "$srv"
        rc=$?
    fi
    srv=
}

seq0=$(last_seq)
start_serve "$T/serve.out" "$T/serve.err"
t0=$(now_ms)
timeout 600 cat "$T/calls" >&7
wait_lines "$T/serve.out" $((ncalls + 1)) 600
echo "serve: $ncalls concurrent calls over $N Apps answered in $(($(now_ms) - t0)) ms"
expect_eq "$(lines "$T/serve.out")" $((ncalls + 1)) "serve: one answer per call"
expect_eq "$(tail -n +2 "$T/serve.out" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p' | sort | uniq -d | head -3)" "" "serve: no id answered twice"
LC_ALL=C sort "$T/want" >"$T/want.sorted"
answers "$T/serve.out" >"$T/got.sorted"
cmp -s "$T/want.sorted" "$T/got.sorted" && ok || bad "serve: outcomes differ (want < > got): $(diff "$T/want.sorted" "$T/got.sorted" | head -8)"
expect_eq "$(grep -c '"status":"succeeded"' "$T/serve.out")" "$(grep -c ' succeeded' "$T/want")" "serve: succeeded count"
# The crashed Apps are unavailable now: a second call is failed, never
# sent; then the states, then shutdown.
: >"$T/calls2"
for ((i = 0; i < N; i++)); do
    [ "${KIND[i]}" = crash ] &&
        printf '{"id":"r%d","op":"call","tool":"aur.mcp.%s.t0000","arguments":{"text":"r%d"}}\n' $i "${PKG[i]}" $i >>"$T/calls2"
done
echo '{"id":"s2","op":"status"}' >>"$T/calls2"
timeout 600 cat "$T/calls2" >&7
wait_lines "$T/serve.out" $((ncalls + ncrash + 2)) 300
expect_eq "$(grep -c '^{"id":"r[0-9]*","result":{"status":"failed","content":"MCP App is not connected; the call was not sent"' "$T/serve.out")" "$ncrash" "serve: calls to crashed Apps failed, not sent"
st=$(grep '^{"id":"s2"' "$T/serve.out")
expect_eq "$(echo "$st" | grep -o '"state":"ready"' | wc -l)" $((N - ncrash)) "serve: Apps still ready"
expect_eq "$(echo "$st" | grep -o '"state":"unavailable"' | wc -l)" "$ncrash" "serve: crashed Apps unavailable"
echo '{"id":"z","op":"shutdown"}' >&7
exec 7>&-
t0=$(now_ms)
stop_serve 300
echo "serve: shutdown of $N Apps: exit $rc after $(($(now_ms) - t0)) ms"
expect_eq "$rc" 0 "serve: shutdown exit"
expect_eq "$(grep -c '^{"id":"z","result":{}}$' "$T/serve.out")" 1 "serve: shutdown answered"
expect_eq "$(lines "$T/serve.out")" $((ncalls + ncrash + 3)) "serve: nothing else on stdout"
expect_eq "$(settle)" 0 "serve: no process left after shutdown"
# On stderr (log_level warn): the crashed Apps' disconnects, nothing else.
expect_eq "$(grep -c ' WARN app org\.'"$M"'\.a[0-9]*: disconnected; restart required$' "$T/serve.err")" "$ncrash" "serve: a warning per crashed App"
expect_eq "$(grep -vc ' WARN app org\.'"$M"'\.a[0-9]*: disconnected; restart required$' "$T/serve.err")" 0 "serve: no other log line"
# What the Apps saw: one tools/call per call the host sent, none for the
# crashed Apps' second calls or for the unknown tool.
sent_ok=0
for ((i = 0; i < N; i++)); do
    n=$(grep -c '^tools/call ' "$D/logs/a$(printf %04d $i).log")
    case ${KIND[i]} in
    hang) want=0 ;;
    normal | slow) want=$((1 + (i % 2 == 0))) ;;
    *) want=1 ;;
    esac
    [ "$n" = "$want" ] && sent_ok=$((sent_ok + 1)) || echo "a$i (${KIND[i]}): $n tools/call, want $want" >&2
done
expect_eq "$sent_ok" "$N" "serve: each App got exactly the calls that were sent"
lifecycle "$seq0" >"$T/order2.got"
cmp -s "$T/order.want" "$T/order2.got" && ok || bad "serve: journal order: $(diff "$T/order.want" "$T/order2.got" | head -6)"

# --- 3. SIGTERM with calls in flight -----------------------------------------
rm -f "$D"/logs/*.log
start_serve "$T/term.out" "$T/term.err"
nhang=0
for ((i = 0; i < N; i++)); do
    if [ "${KIND[i]}" = hang ]; then
        printf '{"id":"h%d","op":"call","tool":"aur.mcp.%s.t0000","arguments":{}}\n' $i "${PKG[i]}" >&7
        nhang=$((nhang + 1))
    fi
done
# Every hang App has the call (waited for, not slept for).
until=$(($(date +%s) + 120))
while [ "$(cat "$D"/logs/*.log 2>/dev/null | grep -c '^tools/call ')" -lt "$nhang" ] &&
    [ "$(date +%s)" -lt "$until" ]; do sleep 0.1; done
expect_eq "$(cat "$D"/logs/*.log | grep -c '^tools/call ')" "$nhang" "SIGTERM: $nhang calls in flight"
t0=$(now_ms)
kill -TERM "$srv"
stop_serve 120
echo "serve: SIGTERM with $N Apps and $nhang calls in flight: exit $rc after $(($(now_ms) - t0)) ms"
exec 7>&-
expect_eq "$rc" 0 "SIGTERM: serve exits 0"
expect_eq "$(grep -c '^{"id":"h[0-9]*","result":{"status":"unknown"' "$T/term.out")" "$nhang" "SIGTERM: in-flight calls unknown"
expect_eq "$(tail -n +2 "$T/term.out" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p' | sort -u | wc -l)" "$nhang" "SIGTERM: each id once"
expect_eq "$(lines "$T/term.out")" $((nhang + 1)) "SIGTERM: nothing else on stdout"
expect_eq "$(settle)" 0 "SIGTERM: no process left"

# --- 4. one startup failure among N -----------------------------------------
mid=$((N / 2))
cp "$D/apps.d/a$(printf %04d $mid).ini" "$T/mid.keep"
sed -i 's|^command = .*|command = bin/not-there|' "$D/apps.d/a$(printf %04d $mid).ini"
seq0=$(last_seq)
t0=$(now_ms)
timeout -k 10 600 "$BIN" discover -c "$D" >"$T/fail.out" 2>"$T/fail.err"
rc=$?
echo "discover with ${PKG[mid]} missing: exit $rc after $(($(now_ms) - t0)) ms"
expect_eq "$rc" 1 "missing command: exit 1"
expect_eq "$(cat "$T/fail.out")" '{"error":{"code":"startup_failed","app":"'"${PKG[mid]}"'","phase":"connect","message":"'"${PKG[mid]}"': cannot start '"'$(cd "$D" && pwd -P)/bin/not-there'"': No such file or directory"}}' "missing command: the error names the App"
expect_has "$(cat "$T/fail.err")" "ERROR app ${PKG[mid]}: startup failed in phase connect" "missing command: logged"
expect_eq "$(settle)" 0 "missing command: no process left"
expect_eq "$("$BIN" journal -c "$D" --after "$seq0" | grep -c '"kind":"mcp.app.failed","source":"mcp:'"${PKG[mid]}"'"')" 1 "missing command: mcp.app.failed"
cp "$T/mid.keep" "$D/apps.d/a$(printf %04d $mid).ini"
last=$((N - 1))
cp "$D/apps.d/a$(printf %04d $last).ini" "$T/last.keep"
sed -i 's|^command = .*|command = /bin/false|' "$D/apps.d/a$(printf %04d $last).ini"
seq0=$(last_seq)
t0=$(now_ms)
timeout -k 10 600 "$BIN" serve -c "$D" </dev/null >"$T/fail.out" 2>"$T/fail.err"
rc=$?
echo "serve with ${PKG[last]} = /bin/false: exit $rc after $(($(now_ms) - t0)) ms"
expect_eq "$rc" 1 "exit at start: exit 1"
expect_eq "$(lines "$T/fail.out")" 1 "exit at start: one line"
# (the words around it depend on when the host saw the exit: before the
# probe, during it, or as the connection's close)
expect_has "$(cat "$T/fail.out")" '{"error":{"code":"startup_failed","app":"'"${PKG[last]}"'","phase":"connect","message":"' "exit at start: the error names the App"
expect_has "$(cat "$T/fail.out")" "${PKG[last]}: App process exited with status 1" "exit at start: and how it ended"
expect_has "$(cat "$T/fail.err")" "ERROR app ${PKG[last]}: startup failed in phase connect" "exit at start: logged"
expect_eq "$(settle)" 0 "exit at start: no process left"
expect_eq "$("$BIN" journal -c "$D" --after "$seq0" | grep -c '"kind":"mcp.app.failed","source":"mcp:'"${PKG[last]}"'"')" 1 "exit at start: mcp.app.failed"
cp "$T/last.keep" "$D/apps.d/a$(printf %04d $last).ini"

# --- 5. world events from every App at once ----------------------------------
# Every App on the world-events extension; one call each, all at once,
# after whose answer each App sends E events, each twice: N x 2E
# notifications through the dispatch workers every App shares.  Each
# event is committed exactly once, each App's in the order it sent them,
# the status counts every one received (none dropped), and nothing is
# left behind.
E=20
CAPS='{"org.aurorabot/world-events":{"version":1}}'
APPKEYS=$'event_mode = world_events\n'
for ((i = 0; i < N; i++)); do
    app_file $i --era modern --extensions "$CAPS" --event-flood $E --event-repeat 2
done
seq0=$(last_seq)
start_serve "$T/ev.out" "$T/ev.err"
t0=$(now_ms)
for ((i = 0; i < N; i++)); do
    printf '{"id":"e%d","op":"call","tool":"aur.mcp.%s.t0000","arguments":{"text":"e%d"}}\n' $i "${PKG[i]}" $i
done >&7
wait_lines "$T/ev.out" $((N + 1)) 600
events_now() { "$BIN" journal -c "$D" --after "$seq0" | grep -c '"kind":"mcp.event.received"'; }
until=$(($(date +%s) + 300))
while [ "$(events_now)" -lt $((N * E)) ] && [ "$(date +%s)" -lt "$until" ]; do sleep 0.2; done
echo "events: $N Apps x $E events (each sent twice) committed in $(($(now_ms) - t0)) ms"
expect_eq "$(grep -c '"status":"succeeded"' "$T/ev.out")" "$N" "events: every call succeeded"
echo '{"id":"s5","op":"status"}' >&7
wait_lines "$T/ev.out" $((N + 2)) 60
python3 -c '
import json, sys
want = 2 * int(sys.argv[1])
bad = 0
for line in open(sys.argv[2]):
    d = json.loads(line)
    if d.get("id") != "s5":
        continue
    for a in d["result"]["apps"]:
        w = a["extension_status"]["org.aurorabot/world-events"]
        got = (w["received"], w["committed"] + w["duplicates"], w["dropped_inactive"], w["queued"])
        if got != (want, want, 0, 0):
            bad += 1
            if bad < 4:
                print(a["package"], got, file=sys.stderr)
print(bad)' $E "$T/ev.out" >"$T/ev.status"
expect_eq "$(cat "$T/ev.status")" 0 "events: each App: 2E received, each committed or a duplicate, none dropped or queued"
echo '{"id":"z5","op":"shutdown"}' >&7
exec 7>&-
stop_serve 300
expect_eq "$rc" 0 "events: shutdown exit"
expect_eq "$(settle)" 0 "events: no process left"
"$BIN" journal -c "$D" --after "$seq0" |
    sed -n 's/.*"commit_id":"mcp:\([^:"]*\):event:flood-\([0-9]*\)".*/\1 \2/p' >"$T/ev.got"
expect_eq "$(wc -l <"$T/ev.got")" $((N * E)) "events: N x E event commits"
expect_eq "$(sort "$T/ev.got" | uniq -d | head -3)" "" "events: each event committed once"
# Per App, in journal order, the events as the App sent them: 0, 1, 2...
expect_eq "$(awk '{ if ($2 != n[$1]++) { print $1 " " $2; exit } }' "$T/ev.got")" "" "events: each App's events in the order it sent them"
expect_eq "$(grep -vc ' WARN app org\.'"$M"'\.a[0-9]*: \|^$' "$T/ev.err")" 0 "events: no log line but the Apps' warnings"

# A sanitizer build reports on stderr (and aborts, with abort_on_error).
expect_eq "$(cat "$T"/*.err | grep -c 'Sanitizer\|runtime error')" 0 "no sanitizer report"

finish
