#!/usr/bin/env bash
# CLI end-to-end: exit codes of check/discover/call, the JSON outputs, the
# serve protocol (ready line, out-of-order answers, status/tools/shutdown,
# bad lines, EOF and SIGTERM), and that no child process is left behind.
# usage: cli_test.sh BUILD_DIR SOURCE_DIR
set -u
BIN="$1/bin/aurora-mcp"
FIX="$1/bin/aur-fixture-server"
PLUG="$1/plugins"
SRC="$2"
pass=0 fail=0
T=$(mktemp -d /tmp/aur-test-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
expect_eq() { if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1' want '$2'"; fi; }
expect_has() { case "$1" in *"$2"*) ok ;; *) bad "$3: '$2' not in: $1" ;; esac; }

mkcfg() { # dir, then app specs "file pkg timeout args..."
    local d="$1"
    mkdir -p "$d/apps.d"
    printf '[host]\nplugins = transport-stdio\nplugin_dir = %s\njournal = data/w.sqlite3\nlog_level = error\n[mcp]\nenabled = true\n' "$PLUG" >"$d/host.ini"
}
addapp() { # dir file pkg timeout args...
    local d="$1" f="$2" p="$3" t="$4"
    shift 4
    {
        printf '[app]\npackage = %s\nenabled = true\ntransport = stdio\ntimeout_seconds = %s\n[stdio]\ncommand = %s\nworking_dir = .\n' "$p" "$t" "$FIX"
        printf 'arg = --log\narg = %s/server.log\n' "$d"
        for a in "$@"; do printf 'arg = %s\n' "$a"; done
    } >"$d/apps.d/$f"
}
leftover() { pgrep -f -- "$1/server.log" | wc -l; }

# --- check / usage -------------------------------------------------------
"$BIN" --version >/dev/null; expect_eq $? 0 "--version"
"$BIN" >/dev/null 2>&1; expect_eq $? 2 "no command"
"$BIN" check -c "$T/none" >"$T/out" 2>/dev/null; expect_eq $? 2 "check missing dir"
expect_has "$(cat "$T/out")" '"code":"config_invalid"' "check error code"
mkcfg "$T/a"
addapp "$T/a" a.ini org.test.cli 5 --era modern --tools 2
"$BIN" check -c "$T/a" >"$T/out"; expect_eq $? 0 "check ok"
printf '[app]\npackage = Bad\n' >"$T/a/apps.d/z.ini"
"$BIN" check -c "$T/a" >"$T/out" 2>/dev/null; expect_eq $? 2 "check bad app"
expect_has "$(cat "$T/out")" 'apps.d/z.ini' "error names the file"
rm "$T/a/apps.d/z.ini"

# --- discover -----------------------------------------------------------
out=$("$BIN" discover -c "$T/a" 2>/dev/null); expect_eq $? 0 "discover"
expect_has "$out" '"negotiated_version":"2026-07-28"' "discover version"
expect_has "$out" '"id":"aur.mcp.org.test.cli.t0000"' "discover tool id"
expect_has "$out" '"state":"ready"' "discover state"
expect_eq "$(leftover "$T/a")" 0 "no child after discover"

mkcfg "$T/b"
addapp "$T/b" a.ini org.test.bad 5 --tool-name bad.name
out=$("$BIN" discover -c "$T/b" 2>/dev/null); expect_eq $? 1 "discover failure exit"
expect_has "$out" '"phase":"tools/list"' "failure phase"
expect_has "$out" '"app":"org.test.bad"' "failure app"

# --- call ---------------------------------------------------------------
out=$("$BIN" call -c "$T/a" aur.mcp.org.test.cli.t0000 '{"text":"hey"}' 2>/dev/null); expect_eq $? 0 "call ok"
expect_has "$out" '"status":"succeeded"' "call status"
expect_has "$out" '"content":"hey"' "call content"
expect_has "$out" '"observe":["aurora:mcp:org.test.cli"]' "call scopes"
out=$(echo '{"text":"stdin"}' | "$BIN" call -c "$T/a" aur.mcp.org.test.cli.t0000 - 2>/dev/null); expect_eq $? 0 "call stdin"
expect_has "$out" '"content":"stdin"' "call stdin content"
"$BIN" call -c "$T/a" aur.mcp.org.test.cli.t0000 '[1]' >/dev/null 2>&1; expect_eq $? 2 "call non-object args"
"$BIN" call -c "$T/a" aur.mcp.org.test.cli.nope >/dev/null 2>&1; expect_eq $? 3 "call unknown tool"
mkcfg "$T/c"
addapp "$T/c" a.ini org.test.cli 5 --era modern --call-result '{"content":[],"isError":true}'
"$BIN" call -c "$T/c" aur.mcp.org.test.cli.t0000 >/dev/null 2>&1; expect_eq $? 4 "call unknown exit"
mkcfg "$T/d"
addapp "$T/d" a.ini org.test.cli 5 --era modern --call-error -32602
"$BIN" call -c "$T/d" aur.mcp.org.test.cli.t0000 >/dev/null 2>&1; expect_eq $? 3 "call rejected exit"

# --- serve ---------------------------------------------------------------
mkcfg "$T/s"
# The slow answer is 1.5 s away: the fast one overtakes it even on a
# loaded machine.
addapp "$T/s" 1-slow.ini org.test.slow 5 --era modern --call-delay-ms 1500
addapp "$T/s" 2-fast.ini org.test.fast 5 --era modern
out=$(
    {
        echo '{"id":1,"op":"call","tool":"aur.mcp.org.test.slow.t0000","arguments":{"text":"slow"}}'
        sleep 0.2
        echo '{"id":2,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"fast"}}'
        echo 'not json'
        echo '{"id":3,"op":"nope"}'
        echo '{"id":"s","op":"status"}'
        echo '{"id":4,"op":"tools"}'
    } | "$BIN" serve -c "$T/s" 2>/dev/null
)
expect_eq $? 0 "serve exit on EOF"
expect_eq "$(echo "$out" | head -1)" '{"ready":true,"tools":2}' "ready line"
expect_eq "$(echo "$out" | wc -l)" 7 "one line per request"
first_call=$(echo "$out" | grep -n '"content":"' | head -1)
expect_has "$first_call" '"id":2' "fast answer comes first"
expect_has "$out" '{"id":1,"result":{"status":"succeeded","content":"slow"' "slow answer"
expect_has "$out" '{"id":null,"error":{"code":"bad_request"' "bad line"
expect_has "$out" '{"id":3,"error":{"code":"unknown_op"' "unknown op"
expect_has "$out" '{"id":"s","result":{"platform_enabled":true' "status op"
expect_has "$out" '{"id":4,"result":{"tools":[' "tools op"
expect_eq "$(leftover "$T/s")" 0 "no child after serve EOF"

out=$(printf '%s\n' '{"id":9,"op":"shutdown"}' '{"id":10,"op":"status"}' | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_eq $? 0 "shutdown op exit"
expect_has "$out" '{"id":9,"result":{}}' "shutdown answer"
case "$out" in *'"id":10'*) bad "request after shutdown answered" ;; *) ok ;; esac

# A burst of calls in one write, from a pipe and from a regular file
# (which epoll cannot watch): each request answered exactly once.
for i in $(seq 300); do
    echo '{"id":'"$i"',"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"n'"$i"'"}}'
done >"$T/burst"
for how in pipe file; do
    if [ $how = pipe ]; then
        out=$(cat "$T/burst" | "$BIN" serve -c "$T/s" 2>/dev/null)
    else
        out=$("$BIN" serve -c "$T/s" <"$T/burst" 2>/dev/null)
    fi
    expect_eq $? 0 "serve burst from a $how"
    expect_eq "$(echo "$out" | grep -c '"status":"succeeded"')" 300 "$how: every call answered"
    expect_eq "$(echo "$out" | sed -n 's/^{"id":\([0-9]*\),"result":{"status":"succeeded","content":"n\1".*/\1/p' | sort -un | wc -l)" 300 "$how: each id once, with its own answer"
done
# serve writes its answer lines itself: the same bytes as `call` prints,
# escapes included.
args='{"text":"q\"b\\s\n\t\u0001/\u00e9\u007f end"}'
want=$("$BIN" call -c "$T/s" aur.mcp.org.test.fast.t0000 "$args" 2>/dev/null)
out=$(echo '{"id":"x\"1","op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":'"$args"'}' | "$BIN" serve -c "$T/s" 2>/dev/null | tail -1)
expect_eq "$out" '{"id":"x\"1","result":'"$want"'}' "serve answer bytes = call output"

# SIGTERM while a call is in flight: it answers unknown, exit 0, no child.
# The call is certainly in flight: the App has logged it (waited for, not
# slept for) and answers only 3 s later.
mkcfg "$T/t"
addapp "$T/t" a.ini org.test.slow 5 --era modern --call-delay-ms 3000
mkfifo "$T/in"
"$BIN" serve -c "$T/t" <"$T/in" >"$T/serve.out" 2>/dev/null &
pid=$!
exec 7>"$T/in"
for _ in $(seq 300); do grep -q ready "$T/serve.out" 2>/dev/null && break; sleep 0.1; done
echo '{"id":5,"op":"call","tool":"aur.mcp.org.test.slow.t0000","arguments":{}}' >&7
for _ in $(seq 300); do grep -q '^tools/call ' "$T/t/server.log" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$pid"
wait "$pid"; expect_eq $? 0 "serve SIGTERM exit"
exec 7>&-
expect_has "$(cat "$T/serve.out")" '{"id":5,"result":{"status":"unknown"' "in-flight call unknown on SIGTERM"
expect_eq "$(leftover "$T/t")" 0 "no child after SIGTERM"

# Calls that cannot be served or queued are answered busy, the rest wait.
mkcfg "$T/q"
addapp "$T/q" a.ini org.test.hang 30 --era modern --hang-at call
for i in $(seq 6000); do
    echo '{"id":'"$i"',"op":"call","tool":"aur.mcp.org.test.hang.t0000","arguments":{}}'
done >"$T/q/calls"
mkfifo "$T/q/in"
"$BIN" serve -c "$T/q" <"$T/q/in" >"$T/q/out" 2>/dev/null &
pid=$!
exec 8>"$T/q/in"
cat "$T/q/calls" >&8
for _ in $(seq 200); do grep -q '"code":"busy"' "$T/q/out" 2>/dev/null && break; sleep 0.1; done
expect_has "$(grep -m1 '"code":"busy"' "$T/q/out")" '"error":{"code":"busy"' "busy when the queue is full"
kill -TERM "$pid"
wait "$pid"; expect_eq $? 0 "serve exit after busy"
exec 8>&-
expect_eq "$(leftover "$T/q")" 0 "no child after busy"

# --- journal ---------------------------------------------------------------
out=$("$BIN" journal -c "$T/a" --scope aurora:mcp:org.test.cli)
expect_has "$out" '"kind":"mcp.app.starting"' "journal lists commits"
n=$(echo "$out" | wc -l)
last=$(echo "$out" | tail -1 | sed 's/^{"seq":\([0-9]*\).*/\1/')
expect_eq "$("$BIN" journal -c "$T/a" --after "$last" | wc -l)" 0 "journal --after"
[ "$n" -ge 3 ] && ok || bad "journal has $n lines"

# A journal that cannot be opened: code journal_error, exit 1, no child.
mkcfg "$T/j"
addapp "$T/j" a.ini org.test.jerr 5 --era modern
printf 'not a directory\n' >"$T/j/data"
out=$("$BIN" discover -c "$T/j" 2>/dev/null); expect_eq $? 1 "journal error exit"
expect_has "$out" '"code":"journal_error"' "journal error code"
expect_eq "$(leftover "$T/j")" 0 "no child after a journal error"

# --- plugin-info ---------------------------------------------------------------
out=$("$BIN" plugin-info "$PLUG/transport-stdio.so"); expect_eq $? 0 "plugin-info"
expect_has "$out" '"name":"transport-stdio"' "plugin-info name"
"$BIN" plugin-info "$SRC/README.md" >/dev/null 2>&1; expect_eq $? 2 "plugin-info rejects"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
