#!/usr/bin/env bash
# Secrets never leak: every CLI path (check, discover, call, serve with
# status, journal, a refused token, a failing call) runs with canary values
# in a bearer-token variable and in a variable no App whitelists, at
# log_level debug.  Then stdout, stderr, the log file, the status JSON and
# the journal file are searched for them: zero hits.  Tool arguments and
# event data are canaries too; they may appear where they are the payload
# (a call's result on stdout, the journal's event row) and nowhere else.
# usage: secrets_test.sh BUILD_DIR SOURCE_DIR
set -u
B=$(cd "$1" && pwd)
BIN="$B/bin/aurora-mcp"
FIX="$B/bin/aur-fixture-server"
PLUG="$B/plugins"
SRC=$(cd "$2" && pwd)
PEERS="$SRC/tests/peers"
T=$(mktemp -d /tmp/aur-test-secrets-XXXXXX)
srv=
cleanup() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
[ -n "${AUR_KEEP:-}" ] && trap - EXIT
. "$(dirname "$0")/support/expect.sh"

# Random per run, so a hit cannot come from a file of ours.
r=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
C_ENV="canary-env-$r"     # in a variable no App whitelists
C_TOK="canary-token-$r"   # the bearer token (auth_env)
C_ARG="canary-arg-$r"     # a tool argument
C_DATA="canary-data-$r"   # world-event data
export AUR_SEC_HIDDEN="$C_ENV" AUR_SEC_TOKEN="$C_TOK"

have_peers=0
[ -d "$PEERS/node_modules/@modelcontextprotocol/server" ] && have_peers=1
if [ -n "${CI:-}" ] && [ $have_peers = 0 ]; then
    echo "FAIL: tests/peers/node_modules missing under CI" >&2
    exit 1
fi

EXT='{"org.aurorabot/world-events":{"version":1}}'
EV='{"event_id":"sec-1","scope":"aurora:mcp:org.test.sec","kind":"demo.thing","occurred_at":"2026-12-02T08:00:00Z","summary":"s","data":{"x":"'"$C_DATA"'"}}'

mkdir -p "$T/c/apps.d" "$T/c/logs"
plugins="transport-stdio ext-world-events"
[ $have_peers = 1 ] && plugins="$plugins transport-http"
printf '[host]\nplugins = %s\nplugin_dir = %s\njournal = data/w.sqlite3\nlog_level = debug\nlog_file = logs/host.log\n[mcp]\nenabled = true\n' \
    "$plugins" "$PLUG" >"$T/c/host.ini"
{
    printf '[app]\npackage = org.test.sec\nenabled = true\ntransport = stdio\ntimeout_seconds = 10\nevent_mode = world_events\n'
    printf '[stdio]\ncommand = %s\nworking_dir = .\nenv = AUR_SEC_VISIBLE\n' "$FIX"
    # The event comes before each call's answer: an event sent after it
    # may arrive after the CLI began to close (the host then refuses it,
    # docs/protocol.md, Events), and whether it did is a matter of timing.
    for a in --era modern --tools 2 --extensions "$EXT" --event-before-answer "$EV" --stderr-lines 3; do
        printf 'arg = %s\n' "$a"
    done
} >"$T/c/apps.d/a.ini"

if [ $have_peers = 1 ]; then
    # HTTPS App behind a bearer token, with a CA made here.
    sh "$SRC/tests/support/mkcerts.sh" "$T/c" srv IP:127.0.0.1 ||
        { echo "FAIL: openssl" >&2; exit 1; }
    mkfifo "$T/srv.in"
    node "$PEERS/sdk2-http-server.mjs" --cert "$T/c/srv.pem" --key "$T/c/srv.key" \
        --require-bearer "$C_TOK" <"$T/srv.in" >"$T/srv.out" 2>"$T/srv.err" &
    srv=$!
    exec 9>"$T/srv.in" # held open: the server exits on its EOF
    port=
    for _ in $(seq 150); do
        port=$(sed -n 's/^PORT \([0-9]*\)$/\1/p' "$T/srv.out")
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { echo "FAIL: no PORT from the HTTPS peer" >&2; exit 1; }
    printf '[app]\npackage = org.test.sechttp\nenabled = true\ntransport = streamable_http\ntimeout_seconds = 15\n[http]\nurl = https://127.0.0.1:%s/mcp\nca_file = ca.pem\nauth_env = AUR_SEC_TOKEN\n' \
        "$port" >"$T/c/apps.d/b.ini"
fi

n=0
run() { # name, then the command; stdin from $IN if set
    local name="$1"
    shift
    n=$((n + 1))
    "$@" <"${IN:-/dev/null}" >"$T/out.$n.$name" 2>"$T/err.$n.$name"
}
absent() { # file, canary: grep exits 1 only for a readable file without it
    grep -qaF -- "$2" "$1"
    case $? in
    1) ok ;;
    0) bad "$(basename "$1") contains ${2%-"$r"}" ;;
    *) bad "cannot read $1" ;;
    esac
}
export AUR_SEC_VISIBLE=fine
run check "$BIN" check -c "$T/c" || bad "check exit $?"
run discover "$BIN" discover -c "$T/c" || bad "discover exit $?"
run call "$BIN" call -c "$T/c" aur.mcp.org.test.sec.t0000 "{\"text\":\"$C_ARG\"}" || bad "call exit $?"
grep -q "$C_ARG" "$T/out.$n.call" || bad "the call result should echo its argument"
if [ $have_peers = 1 ]; then
    run callhttp "$BIN" call -c "$T/c" aur.mcp.org.test.sechttp.echo "{\"text\":\"$C_ARG\"}" ||
        bad "https call exit $? ($(cat "$T/err.$n.callhttp"))"
fi
printf '%s\n' '{"id":1,"op":"call","tool":"aur.mcp.org.test.sec.t0001","arguments":{"text":"'"$C_ARG"'"}}' \
    '{"id":2,"op":"status"}' '{"id":3,"op":"tools"}' >"$T/in"
IN="$T/in" run serve "$BIN" serve -c "$T/c" || bad "serve exit $?"
grep -q '"id":2,"result"' "$T/out.$n.serve" || bad "serve status answered"
run journal "$BIN" journal -c "$T/c" || bad "journal exit $?"
grep -q "$C_DATA" "$T/out.$n.journal" || bad "the event should be in the journal"
# A call that fails and one whose App is given a wrong token: errors too
# must not carry the values.
run unknown "$BIN" call -c "$T/c" aur.mcp.org.test.sec.nope "{\"text\":\"$C_ARG\"}"
[ $have_peers = 1 ] && AUR_SEC_TOKEN="$C_TOK-wrong" run refused "$BIN" discover -c "$T/c"
[ $have_peers = 1 ] && { grep -q '"phase":"connect"' "$T/out.$n.refused" || bad "wrong token fails connect"; }
[ -s "$T/c/logs/host.log" ] || bad "the log file was written"

# Environment and token canaries: nowhere at all.
for f in "$T"/out.* "$T"/err.* "$T/c/logs/host.log" "$T/c/data/w.sqlite3"*; do
    absent "$f" "$C_ENV"
    absent "$f" "$C_TOK"
done
# Arguments, results and event data: never in logs or on stderr.
for f in "$T"/err.* "$T/c/logs/host.log"; do
    absent "$f" "$C_ARG"
    absent "$f" "$C_DATA"
done
# ... nor in the status or tools answers of serve.
if grep -v '"id":1,' "$T"/out.*.serve | grep -qF -- "$C_ARG"; then bad "serve status/tools carry the argument"; else ok; fi

echo "secrets: $pass passed, $fail failed (https: $have_peers)"
[ "$fail" = 0 ]
