#!/usr/bin/env bash
# Transports are plugins in fact: install an already built tree into a
# temporary prefix, build the out-of-tree example examples/transport-unix
# (MCP over a Unix domain socket) against that prefix with pkg-config
# alone, install it into the plugindir, and run the installed CLI on an
# App file that says `transport = unix`, against a real MCP server (the
# official SDK's, tests/peers/unix-server.mjs) listening on a socket:
# check, discover, call, doctor, and the config errors the plugin's ABI 1.4
# declarations (words, section, keys, check) give the host.
# usage: unix_transport_test.sh BUILD_DIR SOURCE_DIR
# Exit 77 (SKIP) only when node or the MCP SDK is missing.  Writes only
# under its mktemp directory (plus the install manifest that
# `cmake --install` always leaves in BUILD_DIR).
set -u
BUILD="$1"
SRC="$2"
PEERS="$SRC/tests/peers"

if ! command -v node >/dev/null 2>&1; then
    echo "SKIP: node not installed"
    exit 77
fi
if [ ! -f "$PEERS/node_modules/@modelcontextprotocol/sdk/package.json" ] ||
   [ ! -d "$PEERS/node_modules/zod" ]; then
    echo "SKIP: the MCP SDK is not installed (cd tests/peers && npm ci)"
    exit 77
fi

. "$(dirname "$0")/support/expect.sh"
T=$(mktemp -d /tmp/aur-test-unix-XXXXXX)
SERVER_PID= SILENT_PID=
cleanup() {
    for pid in $SERVER_PID $SILENT_PID; do
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    [ -n "${AUR_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
P="$T/prefix"
PKG=org.example.sock
ECHO=aur.mcp.$PKG.echo
ADD=aur.mcp.$PKG.add

# The CLI prints JSON; json-c may write "/" as "\/".
unslash() { sed 's#\\/#/#g' "$@"; }
# run NAME ARGS...: the installed CLI, bounded; stdout in $T/NAME.out,
# stderr in $T/NAME.err, the exit status in $rc.
run() {
    local name="$1"
    shift
    timeout 120 aurora-mcp "$@" >"$T/$name.out" 2>"$T/$name.err"
    rc=$?
}
show() { head -c 600 "$T/$1.out" "$T/$1.err" | tr '\n' ' '; }

# --- install ---------------------------------------------------------------
if ! cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1; then
    bad "cmake --install: $(tail -n 5 "$T/install.log")"
    finish
fi
ok
LIB=$(cd "$P" && ls -d lib*/libaurora-mcp.so.*.*.* 2>/dev/null | head -n 1)
if [ -n "$LIB" ]; then ok; else bad "libaurora-mcp.so.X.Y.Z not installed"; finish; fi
LIBDIR="$P/${LIB%/*}"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
PLUGDIR=$(pkg-config --variable=plugindir aurora-mcp-plugin)
expect_eq "$PLUGDIR" "$LIBDIR/aurora-mcp/plugins" "plugindir"
pkg-config --exists 'aurora-mcp-plugin >= 1.4'
expect_eq $? 0 "the installed plugin ABI is 1.4 or later"

# --- the out-of-tree transport ---------------------------------------------
# Plain flags (a third party does not build with our sanitizers); our own
# check keeps its warnings fatal.  Nothing but pkg-config says where the
# install is: no include path into the source tree, no core library.
if env -u CFLAGS -u LDFLAGS cmake -S "$SRC/examples/transport-unix" \
        -B "$T/unix-build" -DAUR_WERROR=ON >"$T/unix.log" 2>&1 &&
   cmake --build "$T/unix-build" >>"$T/unix.log" 2>&1 &&
   cmake --install "$T/unix-build" >>"$T/unix.log" 2>&1; then
    ok
else
    bad "transport-unix out-of-tree build: $(tail -n 15 "$T/unix.log")"
    finish
fi
if grep -q -- "$SRC/include\|$SRC/lib" "$T/unix-build/CMakeFiles/transport-unix.dir/flags.make" 2>/dev/null; then
    bad "the example was compiled against the source tree"
else ok; fi
SO="$PLUGDIR/transport-unix.so"
if [ -f "$SO" ]; then ok; else bad "transport-unix.so not in plugindir"; finish; fi
syms=$(nm -D --defined-only "$SO" | awk '{print $NF}' | sort | tr '\n' ' ')
expect_eq "$syms" "aur_plugin_entry " "transport-unix exports only the entry"
if readelf -d "$SO" | grep NEEDED | grep -q aurora; then
    bad "transport-unix links the core"
else ok; fi

export PATH="$P/bin:$PATH"
unset LD_LIBRARY_PATH
cd "$T"

run info plugin-info "$SO"
expect_eq "$rc" 0 "plugin-info: $(show info)"
info=$(unslash "$T/info.out")
expect_has "$info" '"name":"transport-unix"' "plugin-info name"
expect_has "$info" '"kind":"transport"' "plugin-info kind"
expect_has "$info" '"minor":4' "plugin-info: needs ABI 1.4"
expect_has "$info" '"words":["unix"]' "plugin-info words"
expect_has "$info" '"section":"unix"' "plugin-info section"
expect_has "$info" '"stream"' "plugin-info caps"
expect_has "$info" '"preflight"' "plugin-info hooks"

# --- the real server on a socket ---------------------------------------------
CFG="$T/cfg"
mkdir -p "$CFG/apps.d" "$CFG/data" "$CFG/run"
SOCK="$CFG/run/app.sock"
node "$PEERS/unix-server.mjs" "$SOCK" >"$T/server.out" 2>"$T/server.err" &
SERVER_PID=$!
for _ in $(seq 1 200); do
    grep -q '^ready$' "$T/server.out" 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
done
if grep -q '^ready$' "$T/server.out" && [ -S "$SOCK" ]; then ok
else bad "unix-server did not start: $(cat "$T/server.err")"; finish; fi

cat >"$CFG/host.ini" <<'EOF'
[host]
plugins   = transport-unix
journal   = data/world.sqlite3
log_level = info
EOF
# The path is relative: the plugin reads it against the config directory
# (the endpoint's "config_dir"), so the run does not depend on the cwd.
write_app() {
    cat >"$CFG/apps.d/sock.ini" <<EOF
; An App behind a Unix socket (examples/transport-unix).
[app]
package         = $PKG
enabled         = ${2:-true}
transport       = ${1:-unix}
timeout_seconds = 20

[unix]
path = run/app.sock
EOF
}
write_app

run check check -c "$CFG"
expect_eq "$rc" 0 "check: $(show check)"
out=$(unslash "$T/check.out")
expect_has "$out" "\"package\":\"$PKG\"" "check lists the App"
expect_has "$out" '"transport":"unix"' "the App's transport word is unix"

run discover discover -c "$CFG"
expect_eq "$rc" 0 "discover: $(show discover)"
out=$(unslash "$T/discover.out")
expect_has "$out" "\"id\":\"$ECHO\"" "discover lists echo"
expect_has "$out" "\"id\":\"$ADD\"" "discover lists add"
expect_has "$out" '"negotiated_version":"2025-11-25"' "legacy SDK negotiated by initialize"
grep -o "\"id\":\"aur\.mcp\.$PKG\.[a-z]*\"" "$T/discover.out" | sed 's/^/  tool: /'

run call call -c "$CFG" "$ECHO" '{"text":"hello over a socket"}'
expect_eq "$rc" 0 "call echo: $(show call)"
out=$(unslash "$T/call.out")
expect_has "$out" '"status":"succeeded"' "echo status"
expect_has "$out" 'hello over a socket' "echo text"
echo "  call echo: $(head -c 300 "$T/call.out")"

run add call -c "$CFG" "$ADD" '{"a":2,"b":40}'
expect_eq "$rc" 0 "call add: $(show add)"
expect_has "$(cat "$T/add.out")" '"status":"succeeded"' "add status"
expect_has "$(cat "$T/add.out")" 'sum' "add result"
case "$(cat "$T/add.out")" in *42*) ok ;; *) bad "add: 42 not in $(show add)" ;; esac

# Several calls on one connection, through `serve`.
printf '%s\n' \
  "{\"id\":1,\"op\":\"call\",\"tool\":\"$ECHO\",\"arguments\":{\"text\":\"one\"}}" \
  "{\"id\":2,\"op\":\"call\",\"tool\":\"$ADD\",\"arguments\":{\"a\":1,\"b\":2}}" \
  "{\"id\":3,\"op\":\"call\",\"tool\":\"$ECHO\",\"arguments\":{\"text\":\"three\"}}" |
    timeout 120 aurora-mcp serve -c "$CFG" >"$T/serve.out" 2>"$T/serve.err"
expect_eq "$?" 0 "serve: $(show serve)"
expect_eq "$(grep -c '"status":"succeeded"' "$T/serve.out")" 3 "serve: three calls succeeded"

# The plugin's own name is a word for it as well.
write_app transport-unix
run byname check -c "$CFG"
expect_eq "$rc" 0 "transport = transport-unix: $(show byname)"
write_app

# --- doctor: the plugin's preflight ------------------------------------------
run doctor doctor -c "$CFG" --json
expect_eq "$rc" 0 "doctor: $(show doctor)"
out=$(unslash "$T/doctor.out")
expect_has "$out" "socket accepts connections" "doctor runs the socket check"
echo "  doctor: $(grep -o '[^{]*socket accepts connections[^}]*' "$T/doctor.out" | head -n 1)"

# --- config errors: file, line and key, exit 2, nothing started ---------------
# expect_cfg NAME WANT...: check must fail with exit 2 and a message that
# has every WANT.
expect_cfg() {
    local name="$1"
    shift
    run "$name" check -c "$CFG"
    expect_eq "$rc" 2 "$name: exit status ($(show "$name"))"
    local out
    out=$(unslash "$T/$name.out" "$T/$name.err")
    for want in "$@"; do
        expect_has "$out" "$want" "$name"
    done
    echo "  $name: $(grep -o '"message":"[^"]*"' "$T/$name.out" | head -n 1)"
}
line_of() { grep -n -- "$1" "$CFG/apps.d/sock.ini" | head -n 1 | cut -d: -f1; }

# [unix] without its required path: points at the section.
write_app
sed -i '/^path = /d' "$CFG/apps.d/sock.ini"
expect_cfg missing_path "apps.d/sock.ini:$(line_of '^\[unix\]'): path" config_invalid

# A key the transport does not declare.
write_app
echo "colour = blue" >>"$CFG/apps.d/sock.ini"
expect_cfg unknown_key "apps.d/sock.ini:$(line_of '^colour'): colour"

# A declared key written twice.
write_app
echo "path = run/other.sock" >>"$CFG/apps.d/sock.ini"
expect_cfg repeated_key "apps.d/sock.ini:" ": path"

# `transport = unix` while no loaded plugin claims the word: the word
# itself, or (the host checks sections first) the [unix] section no loaded
# plugin owns.
write_app
sed -i 's/^plugins .*/plugins   = transport-stdio/' "$CFG/host.ini"
expect_cfg not_loaded "apps.d/sock.ini:"
out=$(unslash "$T/not_loaded.out")
case "$out" in
*"sock.ini:$(line_of '^transport'): transport"* | *"sock.ini:$(line_of '^\[unix\]'): [unix]"*) ok ;;
*) bad "not_loaded names neither transport nor [unix]: $out" ;;
esac
sed -i '/^\[unix\]/,$d' "$CFG/apps.d/sock.ini"
expect_cfg not_loaded_bare "apps.d/sock.ini:$(line_of '^transport'): transport" "'unix'"
sed -i 's/^plugins .*/plugins   = transport-unix/' "$CFG/host.ini"

# The plugin's check hook: values, via host->cfg_fail.
write_app
sed -i 's#^path = .*#path = run/nothing-here.sock#' "$CFG/apps.d/sock.ini"
expect_cfg no_socket "apps.d/sock.ini:$(line_of '^path'): path" "No such file"
write_app
sed -i 's#^path = .*#path = host.ini#' "$CFG/apps.d/sock.ini"
expect_cfg not_a_socket "apps.d/sock.ini:$(line_of '^path'): path" "not a socket"
write_app
sed -i "s#^path = .*#path = $(printf 'd%.0s' $(seq 1 120))/app.sock#" "$CFG/apps.d/sock.ini"
expect_cfg too_long "apps.d/sock.ini:$(line_of '^path'): path" "at most 108"
write_app
echo "connect_timeout_ms = 0" >>"$CFG/apps.d/sock.ini"
expect_cfg bad_timeout "apps.d/sock.ini:$(line_of '^connect_timeout_ms'): connect_timeout_ms"

# A disabled App is checked as text only: a missing socket is no error.
write_app unix false
sed -i 's#^path = .*#path = run/nothing-here.sock#' "$CFG/apps.d/sock.ini"
run disabled check -c "$CFG"
expect_eq "$rc" 0 "disabled App with no socket: $(show disabled)"
write_app

# --- a server that never answers server/discover --------------------------
# On a STREAM transport silence may be a legacy server's answer: the host
# gives up on the probe (half the startup deadline), reopens, and sends
# initialize on a fresh connection.  The server counts two.
SCFG="$T/silent"
mkdir -p "$SCFG/apps.d" "$SCFG/data"
cp "$CFG/host.ini" "$SCFG/host.ini"
node "$PEERS/unix-server.mjs" --silent-discover "$SCFG/app.sock" \
    >"$T/silent-server.out" 2>"$T/silent-server.err" &
SILENT_PID=$!
for _ in $(seq 1 200); do
    grep -q '^ready$' "$T/silent-server.out" 2>/dev/null && break
    sleep 0.05
done
cat >"$SCFG/apps.d/sock.ini" <<EOF
[app]
package         = $PKG
enabled         = true
transport       = unix
timeout_seconds = 6

[unix]
path = app.sock
EOF
run silent call -c "$SCFG" "$ECHO" '{"text":"after a silent probe"}'
expect_eq "$rc" 0 "call after a silent probe: $(show silent)"
expect_has "$(cat "$T/silent.out")" '"status":"succeeded"' "silent probe: call status"
expect_eq "$(grep -c '^connection ' "$T/silent-server.out")" 2 \
    "silent probe: a fresh connection for initialize"
kill "$SILENT_PID" 2>/dev/null
wait "$SILENT_PID" 2>/dev/null
SILENT_PID=

# --- the server dies: doctor says why, startup fails, nothing hangs ----------
# SIGKILL leaves the socket file behind: check passes (it is a socket),
# but nobody accepts on it.
kill -KILL "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=
if [ -S "$SOCK" ]; then ok; else bad "stale socket file expected"; fi
run dead_doctor doctor -c "$CFG" --json
expect_eq "$rc" 1 "doctor with the server gone: $(show dead_doctor)"
out=$(unslash "$T/dead_doctor.out")
expect_has "$out" "socket accepts connections" "doctor names the check"
expect_has "$out" "Connection refused" "doctor says why"
run dead_call call -c "$CFG" "$ECHO" '{"text":"x"}'
expect_eq "$rc" 1 "call with the server gone is a startup failure: $(show dead_call)"

finish
