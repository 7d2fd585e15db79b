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
. "$(dirname "$0")/support/expect.sh"
T=$(mktemp -d /tmp/aur-test-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT


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
# check starts nothing: an enabled App is not_started, never "disabled"
expect_has "$(cat "$T/out")" '{"active":true,"enabled":true,"extensions":{},"last_error":null,"negotiated_version":null,"not_callable_tool_ids":[],"package":"org.test.cli","restart_required":false,"state":"not_started","tool_ids":[],"transport":"stdio"}' "check: enabled App not_started"
addapp "$T/a" y.ini org.test.off 5
sed -i 's/^enabled = true/enabled = false/' "$T/a/apps.d/y.ini"
"$BIN" check -c "$T/a" >"$T/out"; expect_eq $? 0 "check with a disabled App"
expect_has "$(cat "$T/out")" '{"active":false,"enabled":false,"extensions":{},"last_error":null,"negotiated_version":null,"not_callable_tool_ids":[],"package":"org.test.off","restart_required":false,"state":"disabled","tool_ids":[],"transport":"stdio"}' "check: disabled App"
rm "$T/a/apps.d/y.ini"
printf '[app]\npackage = Bad\n' >"$T/a/apps.d/z.ini"
"$BIN" check -c "$T/a" >"$T/out" 2>/dev/null; expect_eq $? 2 "check bad app"
expect_has "$(cat "$T/out")" 'apps.d/z.ini' "error names the file"
rm "$T/a/apps.d/z.ini"

# "Did you mean": commands, keys, sections, tool ids.
out=$("$BIN" discovr -c "$T/a" 2>&1); expect_eq $? 2 "misspelt command"
expect_has "$out" "unknown command 'discovr' (did you mean discover?)" "command suggestion"
cp "$T/a/apps.d/a.ini" "$T/a.ini.keep"
sed -i 's/^working_dir = /workign_dir = /' "$T/a/apps.d/a.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "misspelt key"
expect_has "$out" 'unknown key in [stdio] (did you mean working_dir?)' "key suggestion"
cp "$T/a.ini.keep" "$T/a/apps.d/a.ini"
sed -i 's/^\[stdio\]/[stido]/' "$T/a/apps.d/a.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "misspelt section"
expect_has "$out" 'did you mean [stdio]?' "section suggestion"
cp "$T/a.ini.keep" "$T/a/apps.d/a.ini"
# A plugin's host.ini settings are its declared keys (ABI 1.4): a misspelt
# one is an error at its line, not a silent default.
cp "$T/a/host.ini" "$T/host.ini.keep"
printf '[transport-stdio]\nmax_line_bytez = 4096\n' >>"$T/a/host.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "misspelt plugin setting"
expect_has "$out" 'host.ini:9: max_line_bytez: unknown key in [transport-stdio] (did you mean max_line_bytes?)' "plugin setting suggestion"
cp "$T/host.ini.keep" "$T/a/host.ini"
# A value out of its range is said at its line too.
printf '[transport-stdio]\nterm_grace_ms = 700000\n' >>"$T/a/host.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "plugin setting out of range"
expect_has "$out" 'host.ini:9: term_grace_ms: must be between 0 and 600000 in [transport-stdio]' "plugin setting range: named"
cp "$T/host.ini.keep" "$T/a/host.ini"
# transport = names a plugin; one not deployed is said before its section.
sed -i 's/^transport = stdio/transport = streamable_http/' "$T/a/apps.d/a.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "transport not deployed"
expect_has "$out" "apps.d/a.ini:4: transport: no transport plugin in host.ini plugins takes 'streamable_http' (loaded: stdio)" "transport not deployed: named"
cp "$T/a.ini.keep" "$T/a/apps.d/a.ini"
sed -i 's/^transport = stdio/transport = transport-stdio/' "$T/a/apps.d/a.ini"
"$BIN" check -c "$T/a" >"$T/out"; expect_eq $? 0 "transport by plugin name"
expect_has "$(cat "$T/out")" '"transport":"stdio"' "transport by plugin name: its word"
cp "$T/a.ini.keep" "$T/a/apps.d/a.ini"
# Two loaded transports claiming one word: refused, never a silent pick.
mkdir -p "$T/plug2"
cp "$PLUG/transport-stdio.so" "$1/fixture-plugins/fx-word-thief.so" "$T/plug2/"
sed -e "s|^plugin_dir = .*|plugin_dir = $T/plug2|" \
    -e 's/^plugins = transport-stdio$/plugins = transport-stdio fx-word-thief/' \
    "$T/host.ini.keep" >"$T/a/host.ini"
out=$("$BIN" check -c "$T/a" 2>/dev/null); expect_eq $? 2 "two transports, one word"
expect_has "$out" 'transports transport-stdio and fx-word-thief both take transport = stdio' "two transports, one word: named"
cp "$T/host.ini.keep" "$T/a/host.ini"
# The plugin without its supervisor program (only the .so installed):
# config still checks, and an App's start fails naming what is missing.
mkdir -p "$T/plug3"
cp "$PLUG/transport-stdio.so" "$T/plug3/"
sed -e "s|^plugin_dir = .*|plugin_dir = $T/plug3|" "$T/host.ini.keep" >"$T/a/host.ini"
"$BIN" check -c "$T/a" >/dev/null 2>&1; expect_eq $? 0 "no supervisor: check passes"
out=$("$BIN" discover -c "$T/a" 2>/dev/null); expect_eq $? 1 "no supervisor: discover fails"
expect_has "$out" "the supervisor program $T/plug3/aur-contain is missing" "no supervisor: named"
cp "$T/host.ini.keep" "$T/a/host.ini"

# transport-http loads libcurl only for an HTTP App: the default plugin
# set with stdio Apps alone never maps it (the dynamic loader names every
# object it loads).
mkcfg "$T/lazy"
addapp "$T/lazy" a.ini org.test.lazy 5 --tools 1
sed -i 's/^plugins = transport-stdio$/plugins = transport-stdio transport-http ext-tool-contract ext-world-events/' "$T/lazy/host.ini"
LD_DEBUG=files "$BIN" discover -c "$T/lazy" >"$T/lazy.out" 2>"$T/lazy.ld"
expect_eq $? 0 "default plugins, stdio App: discover"
expect_eq "$(grep -c 'file=.*libcurl' "$T/lazy.ld")" 0 "no HTTP App: libcurl not loaded"
expect_has "$(grep 'file=' "$T/lazy.ld")" "transport-http.so" "transport-http itself loaded"
# A file journal never maps the PostgreSQL backend or libpq.
expect_eq "$(grep -c 'file=.*\(libpq\|journal-postgresql\)' "$T/lazy.ld")" 0 "file journal: libpq not loaded"
printf '[app]\npackage = org.test.web\nenabled = false\ntransport = streamable_http\ntimeout_seconds = 5\n[http]\nurl = https://127.0.0.1:9/mcp\n' >"$T/lazy/apps.d/web.ini"
LD_DEBUG=files "$BIN" check -c "$T/lazy" >"$T/lazy.out" 2>"$T/lazy.ld"
expect_eq $? 0 "an HTTP App: check"
expect_has "$(cat "$T/lazy.ld")" "transport-http-libcurl.so" "an HTTP App: the backend loaded"
# ... and without the backend file, that App's config fails naming it,
# while a host without HTTP Apps is untouched.
mkdir -p "$T/plug4"
cp "$PLUG/transport-stdio.so" "$PLUG/aur-contain" "$PLUG/transport-http.so" "$T/plug4/"
sed -i -e "s|^plugin_dir = .*|plugin_dir = $T/plug4|" \
    -e 's/^plugins = .*/plugins = transport-stdio transport-http/' "$T/lazy/host.ini"
out=$("$BIN" check -c "$T/lazy" 2>/dev/null); expect_eq $? 2 "no backend: check fails"
expect_has "$out" "cannot load $T/plug4/transport-http-libcurl.so" "no backend: named"
rm "$T/lazy/apps.d/web.ini"
"$BIN" discover -c "$T/lazy" >/dev/null 2>&1; expect_eq $? 0 "no backend, no HTTP App: discover"

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
out=$("$BIN" call -c "$T/a" aur.mcp.org.test.cli.t00000 2>/dev/null); expect_eq $? 3 "call misspelt tool"
expect_has "$out" 'unknown tool id: aur.mcp.org.test.cli.t00000 (did you mean aur.mcp.org.test.cli.t0000?)' "tool id suggestion"
mkcfg "$T/c"
addapp "$T/c" a.ini org.test.cli 5 --era modern --call-result '{"content":[],"isError":true}'
"$BIN" call -c "$T/c" aur.mcp.org.test.cli.t0000 >/dev/null 2>&1; expect_eq $? 4 "call unknown exit"
mkcfg "$T/d"
addapp "$T/d" a.ini org.test.cli 5 --era modern --call-error -32602
"$BIN" call -c "$T/d" aur.mcp.org.test.cli.t0000 >/dev/null 2>&1; expect_eq $? 3 "call rejected exit"
# A tool's text keeps every byte: U+0000 is escaped, never a cut, in call
# and in serve.
mkcfg "$T/z"
addapp "$T/z" a.ini org.test.cli 5 --era modern --call-result '{"content":[{"type":"text","text":"ab\u0000cd"}]}'
out=$("$BIN" call -c "$T/z" aur.mcp.org.test.cli.t0000 2>/dev/null); expect_eq $? 0 "call U+0000 text"
expect_has "$out" '"content":"ab\u0000cd"' "call keeps U+0000"
out=$(printf '%s\n' '{"id":1,"op":"call","tool":"aur.mcp.org.test.cli.t0000"}' | "$BIN" serve -c "$T/z" 2>/dev/null)
expect_has "$out" '"content":"ab\u0000cd"' "serve keeps U+0000"

# --- call records ----------------------------------------------------------
# record_calls = on: one mcp.tool.called commit per call (tool, status,
# duration), never its arguments or content; with_data adds them.
mkcfg "$T/rc"
addapp "$T/rc" a.ini org.test.rec 5 --era modern --tools 1
sed -i 's/^enabled = true$/enabled = true\nrecord_calls = on/' "$T/rc/host.ini"
"$BIN" call -c "$T/rc" aur.mcp.org.test.rec.t0000 '{"text":"rec-canary-1"}' >/dev/null 2>&1; expect_eq $? 0 "recorded call"
out=$("$BIN" journal -c "$T/rc" 2>/dev/null)
expect_has "$out" '"kind":"mcp.tool.called","source":"mcp:org.test.rec","summary":"MCP tool call succeeded: aur.mcp.org.test.rec.t0000"' "call record"
expect_has "$out" '"data":{"tool_id":"aur.mcp.org.test.rec.t0000","status":"succeeded","duration_ms":' "call record data"
case $out in *rec-canary-1*) bad "record_calls = on recorded the arguments" ;; *) ok ;; esac
sed -i 's/^record_calls = on/record_calls = with_data/' "$T/rc/host.ini"
"$BIN" call -c "$T/rc" aur.mcp.org.test.rec.t0000 '{"text":"rec-canary-2"}' >/dev/null 2>&1
out=$("$BIN" journal -c "$T/rc" 2>/dev/null)
expect_has "$out" '"arguments":{"text":"rec-canary-2"},"content":"rec-canary-2"' "call record with data"
sed -i 's/^record_calls = with_data/record_calls = always/' "$T/rc/host.ini"
out=$("$BIN" check -c "$T/rc" 2>/dev/null); expect_eq $? 2 "record_calls bad value"
expect_has "$out" 'host.ini:' "record_calls error names the file"
expect_has "$out" 'record_calls: must be off, on or with_data' "record_calls error names the key"

# --- tables ------------------------------------------------------------------
# --format table (the default on a terminal) for check, discover, call and
# journal; piped output stays the JSON above, byte for byte.
out=$("$BIN" discover -c "$T/a" --format table 2>/dev/null); expect_eq $? 0 "discover table"
expect_has "$out" "org.test.cli                     ready        stdio            2026-07-28      2" "discover table: the App row"
expect_has "$out" "aur.mcp.org.test.cli.t0000" "discover table: a tool row"
out=$("$BIN" call -c "$T/a" aur.mcp.org.test.cli.t0000 '{"text":"two\nlines"}' --format table 2>/dev/null); expect_eq $? 0 "call table"
expect_eq "$out" "$(printf 'status: succeeded\ntwo\nlines')" "call table: status, then the content as written"
out=$("$BIN" call -c "$T/c" aur.mcp.org.test.cli.t0000 --format table 2>/dev/null); expect_eq $? 4 "call table unknown"
expect_has "$out" "status: unknown  (it may or may not have had an effect)" "call table: unknown explained"
out=$("$BIN" journal -c "$T/a" --format table 2>/dev/null); expect_eq $? 0 "journal table"
expect_has "$out" "mcp.app.starting" "journal table: a row"
"$BIN" check -c "$T/a" --format yaml >/dev/null 2>&1; expect_eq $? 2 "--format yaml refused"
if command -v script >/dev/null 2>&1; then
    out=$(script -qec "$BIN check -c $T/a" /dev/null 2>&1)
    expect_has "$out" "APP                              STATE" "a table by default on a terminal"
fi

# --- doctor --------------------------------------------------------------------
# Every enabled App alone, side by side: one broken App does not hide the
# others; its row names the phase, the exit and its stderr; nothing is
# written to the World; exit 1 unless all are healthy.  JSON when stdout
# is not a terminal, a table on one.
mkcfg "$T/dr"
addapp "$T/dr" 1.ini org.test.good 5 --era modern --tools 3
addapp "$T/dr" 2.ini org.test.bad 5 --era modern --stderr-lines 1 --stderr-text "cannot open config.yaml" --exit-at list
addapp "$T/dr" 3.ini org.test.off 5
sed -i 's/^enabled = true/enabled = false/' "$T/dr/apps.d/3.ini"
out=$("$BIN" doctor -c "$T/dr" 2>/dev/null); expect_eq $? 1 "doctor with a broken App"
expect_has "$out" '{"package":"org.test.good","result":"ok","negotiated_version":"2026-07-28","tools":3,' "doctor: the good App"
expect_has "$out" '{"package":"org.test.bad","result":"failed","negotiated_version":null,"tools":null,"phase":"tools/list","error":"connection closed: org.test.bad: App process exited with status 3; its stderr ended: \"cannot open config.yaml\"' "doctor: the broken App, with why"
expect_has "$out" '{"package":"org.test.off","result":"disabled"' "doctor: the disabled App"
expect_has "$out" '"healthy":false' "doctor: not healthy"
[ -e "$T/dr/data/w.sqlite3" ]; expect_eq $? 1 "doctor writes nothing to the World"
rm "$T/dr/apps.d/2.ini"
out=$("$BIN" doctor -c "$T/dr" --json 2>/dev/null); expect_eq $? 0 "doctor all healthy"
expect_has "$out" '"healthy":true' "doctor: healthy"
if command -v script >/dev/null 2>&1; then
    out=$(script -qec "$BIN doctor -c $T/dr" /dev/null 2>&1)
    expect_has "$out" "org.test.good                    ok      2026-07-28       3" "doctor: a table on a terminal"
fi
expect_eq "$(leftover "$T/dr")" 0 "no child after doctor"
# Preflight checks, before each start: the command, each whitelisted
# variable (named, never its value), an HTTP server's TCP port.
printf 'env = AUR_DOC_UNSET_VAR\nenv = AUR_DOC_SET_VAR\n' >>"$T/dr/apps.d/1.ini"
addapp "$T/dr" 4.ini org.test.nocmd 5
sed -i 's|^command = .*|command = bin/not-there|' "$T/dr/apps.d/4.ini"
printf '[app]\npackage = org.test.web\nenabled = true\ntransport = streamable_http\ntimeout_seconds = 5\n[http]\nurl = https://127.0.0.1:1/mcp?key=doc-canary\n' >"$T/dr/apps.d/5.ini"
sed -i 's/^plugins = transport-stdio$/plugins = transport-stdio transport-http/' "$T/dr/host.ini"
out=$(unset AUR_DOC_UNSET_VAR; AUR_DOC_SET_VAR=doc-canary "$BIN" doctor -c "$T/dr" 2>/dev/null); expect_eq $? 1 "doctor with preflight problems"
expect_has "$out" '{"check":"env AUR_DOC_UNSET_VAR","ok":false,"problem":"not set in this environment"}' "doctor: unset variable"
expect_has "$out" '{"check":"env AUR_DOC_SET_VAR","ok":true,"problem":null}' "doctor: set variable"
expect_has "$out" '{"check":"command","ok":false,"problem":"'"$(cd "$T/dr" && pwd -P)"'/bin/not-there: No such file or directory"}' "doctor: missing command"
expect_has "$out" '{"check":"server reachable (TCP)","ok":false,"problem":"127.0.0.1 port 1 does not answer: Connection refused"}' "doctor: closed port"
case $out in *doc-canary*) bad "doctor printed a value or a URL's query" ;; *) ok ;; esac

# --- import ------------------------------------------------------------------
# The mcpServers JSON of other hosts becomes apps.d/*.ini: values of env
# and bearer tokens are never written nor printed (the summary lists the
# variables to export), what cannot be said is listed (exit 1), and an
# existing file is never overwritten (exit 2, nothing written).  Shapes:
# Claude Desktop / Cursor ("mcpServers"), VS Code mcp.json ("servers",
# "type"), VS Code settings.json ("mcp"."servers").
mkdir -p "$T/imp"
cat >"$T/imp/desktop.json" <<JSON
{"mcpServers": {
  "Fixture Server": {"command": "$FIX", "args": ["--era", "modern", "--tools", "2"], "env": {"AUR_IMP_KEY": "imp-canary-55", "LD_PRELOAD": "/x.so"}, "autoApprove": []},
  "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer imp-canary-66"}},
  "old": {"type": "sse", "url": "https://old.example.com/sse"}
}}
JSON
out=$("$BIN" import "$T/imp/desktop.json" -o "$T/imp/a" 2>&1); expect_eq $? 1 "import with a server left out"
expect_has "$out" '"written":["apps.d/fixture-server.ini","apps.d/remote.ini"]' "import: files"
expect_has "$out" '{"app":"local.fixture-server","variable":"AUR_IMP_KEY"' "import: env to export"
expect_has "$out" '{"app":"local.remote","variable":"REMOTE_TOKEN"' "import: token to export"
expect_has "$out" '"not_imported":[{"server":"old","why":"type \"sse\" is the old HTTP+SSE transport' "import: sse listed"
expect_has "$out" 'env LD_PRELOAD left out' "import: denied env listed"
expect_has "$out" '"autoApprove\" has no equivalent' "import: unknown key listed"
case "$out$(cat "$T"/imp/a/apps.d/*.ini)" in *imp-canary*) bad "import wrote or printed a secret" ;; *) ok ;; esac
sed -i "s|^plugins = .*|plugins = transport-stdio transport-http\nplugin_dir = $PLUG|" "$T/imp/a/host.ini"
out=$(AUR_IMP_KEY=k REMOTE_TOKEN=t "$BIN" discover -c "$T/imp/a" --app local.fixture-server 2>/dev/null); expect_eq $? 0 "imported App starts"
expect_has "$out" '"id":"aur.mcp.local.fixture-server.t0001"' "imported App's tools"
cp "$T/imp/a/apps.d/remote.ini" "$T/imp/keep.ini"
out=$("$BIN" import "$T/imp/desktop.json" -o "$T/imp/a" 2>&1); expect_eq $? 2 "import over existing files"
expect_has "$out" 'fixture-server.ini exists; nothing was written' "import: refuses to overwrite"
cmp -s "$T/imp/keep.ini" "$T/imp/a/apps.d/remote.ini"; expect_eq $? 0 "import: existing file untouched"
printf '{"servers": {"fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}, "web": {"type": "http", "url": "https://w.example/mcp"}}}' >"$T/imp/vscode.json"
out=$("$BIN" import "$T/imp/vscode.json" -o "$T/imp/b" 2>&1); expect_eq $? 0 "import VS Code mcp.json"
expect_has "$out" '"written":["apps.d/fs.ini","apps.d/web.ini"]' "import VS Code: files"
expect_has "$(cat "$T/imp/b/apps.d/fs.ini")" 'arg = @modelcontextprotocol/server-filesystem' "import VS Code: args"
printf '{"editor.fontSize": 12, "mcp": {"servers": {"a": {"command": "uvx", "args": ["mcp-server-time"]}, "A": {"command": "uvx"}}}}' >"$T/imp/settings.json"
out=$("$BIN" import "$T/imp/settings.json" -o "$T/imp/c" 2>&1); expect_eq $? 0 "import VS Code settings.json"
expect_has "$out" '"written":["apps.d/a.ini","apps.d/a-2.ini"]' "import: names that clean up alike are numbered"
out=$("$BIN" import "$T/imp/none.json" 2>&1); expect_eq $? 2 "import a missing file"
printf '{"x": 1}' >"$T/imp/empty.json"
out=$("$BIN" import "$T/imp/empty.json" -o "$T/imp/d" 2>&1); expect_eq $? 2 "import without servers"
expect_has "$out" 'no "mcpServers", "servers" or "mcp"."servers" object' "import: says what it looked for"

# --- choosing Apps for one run ----------------------------------------------
# --app starts only the named Apps, --disable leaves one out; the others
# show "disabled" with why; an unknown package is a usage error naming the
# closest one; an agent's exact reference to a left-out App's tool warns.
mkcfg "$T/k"
addapp "$T/k" 1.ini org.test.one 5 --era modern --tools 1
addapp "$T/k" 2.ini org.test.two 5 --era modern --tools 1
printf '[agent root]\ntools = aur.mcp.org.test.two.t0000\ntools = aur.mcp.org.test.one.*\n' >"$T/k/agents.ini"
out=$("$BIN" discover -v -c "$T/k" --app org.test.one 2>"$T/err"); expect_eq $? 0 "--app one"
expect_has "$out" '"id":"aur.mcp.org.test.one.t0000"' "--app: its tools"
case $out in *aur.mcp.org.test.two.t0000*) bad "--app: another App's tool listed" ;; *) ok ;; esac
expect_has "$out" '{"active":false,"enabled":true,"extensions":{},"last_error":"left out of this run","negotiated_version":null,"not_callable_tool_ids":[],"package":"org.test.two","restart_required":false,"state":"disabled","tool_ids":[],"transport":"stdio"}' "--app: the other is disabled"
expect_has "$(cat "$T/err")" "references aur.mcp.org.test.two.t0000, of an App left out of this run" "--app: agents reference warns"
out=$("$BIN" discover -c "$T/k" --disable org.test.one 2>/dev/null); expect_eq $? 0 "--disable one"
expect_has "$out" '"id":"aur.mcp.org.test.two.t0000"' "--disable: the other's tools"
expect_has "$out" '{"active":false,"enabled":true,"extensions":{},"last_error":"left out of this run","negotiated_version":null,"not_callable_tool_ids":[],"package":"org.test.one","restart_required":false,"state":"disabled","tool_ids":[],"transport":"stdio"}' "--disable: left out, with why"
out=$("$BIN" check -c "$T/k" --app org.test.thre 2>/dev/null); expect_eq $? 2 "--app unknown package"
expect_has "$out" 'no App has package org.test.thre' "--app unknown: named"
out=$("$BIN" check -c "$T/k" --app org.test.tw 2>/dev/null); expect_eq $? 2 "--app near package"
expect_has "$out" '(did you mean org.test.two?)' "--app unknown: suggestion"

# --- paths in the config ------------------------------------------------
# A command with a '/' is relative to the config directory, wherever the
# host runs from; a decoy of the same relative path under the caller's
# directory must not be the one run.
mkcfg "$T/p"
addapp "$T/p" a.ini org.test.path 5 --era modern --tools 1
mkdir -p "$T/p/bin" "$T/elsewhere/bin"
ln -s "$FIX" "$T/p/bin/srv"
printf '#!/bin/sh\nexit 7\n' >"$T/elsewhere/bin/srv"
chmod +x "$T/elsewhere/bin/srv"
sed -i "s|^command = .*|command = bin/srv|" "$T/p/apps.d/a.ini"
for from in / "$T/elsewhere" "$T/p"; do
    out=$(cd "$from" && "$BIN" discover -c "$T/p" 2>&1); expect_eq $? 0 "relative command from $from"
    expect_has "$out" '"id":"aur.mcp.org.test.path.t0000"' "relative command from $from: tools"
done
sed -i "s|^command = .*|command = ./bin/srv|" "$T/p/apps.d/a.ini"
out=$(cd "$T/elsewhere" && "$BIN" discover -c "$T/p" 2>&1); expect_eq $? 0 "./ command from elsewhere"
sed -i "s|^command = .*|command = bin/missing|" "$T/p/apps.d/a.ini"
out=$(cd "$T/elsewhere" && "$BIN" discover -c "$T/p" 2>&1); expect_eq $? 1 "missing relative command"
expect_has "$out" "$(cd "$T/p" && pwd -P)/bin/missing" "missing command named with its resolved path"

# --- environment ----------------------------------------------------------
# A whitelisted variable that is not set is said (by name), not skipped in
# silence; one that is set is not mentioned.
mkcfg "$T/e"
addapp "$T/e" a.ini org.test.env 5 --era modern --tools 1
sed -i 's/^log_level = error/log_level = warn/' "$T/e/host.ini"
printf 'env = AUR_CLI_UNSET_VAR\nenv = AUR_CLI_SET_VAR\n' >>"$T/e/apps.d/a.ini"
out=$(unset AUR_CLI_UNSET_VAR; AUR_CLI_SET_VAR=v "$BIN" discover -c "$T/e" 2>&1 >/dev/null); expect_eq $? 0 "discover with an unset whitelisted variable"
expect_has "$out" "org.test.env: env AUR_CLI_UNSET_VAR is whitelisted but not set" "unset whitelisted variable named"
case $out in *AUR_CLI_SET_VAR*) bad "a set variable is mentioned: $out" ;; *) ok ;; esac
# -q takes the warning away (warn -> error), -v adds INFO lines, -vv DEBUG.
out=$(unset AUR_CLI_UNSET_VAR; "$BIN" -q discover -c "$T/e" 2>&1 >/dev/null); expect_eq "$out" "" "-q: no warning"
out=$(unset AUR_CLI_UNSET_VAR; "$BIN" discover -c "$T/e" -v 2>&1 >/dev/null)
expect_has "$out" "INFO app org.test.env: ready with 1 tools" "-v: info lines"
case $out in *" DEBUG "*) bad "-v shows debug lines" ;; *) ok ;; esac
out=$(unset AUR_CLI_UNSET_VAR; "$BIN" discover --verbose -v -c "$T/e" 2>&1 >/dev/null)
expect_has "$out" " DEBUG app org.test.env:" "-vv: debug lines"

# A server that dies during startup: the error names how it ended and
# quotes the end of its stderr, with whitelisted values blanked out.
mkcfg "$T/x"
addapp "$T/x" a.ini org.test.dies 5 --era modern --stderr-lines 3 --stderr-text "cannot open db: token=aur-canary-77" --exit-at list
printf 'env = AUR_CLI_TOKEN\n' >>"$T/x/apps.d/a.ini"
out=$(AUR_CLI_TOKEN=aur-canary-77 "$BIN" discover -c "$T/x" 2>"$T/err"); expect_eq $? 1 "server dies at startup"
expect_has "$out" 'App process exited with status 3; its stderr ended: \"' "startup error names the exit status"
expect_has "$out" 'cannot open db: token=***' "startup error quotes stderr, redacted"
case "$out$(cat "$T/err")" in *aur-canary-77*) bad "a whitelisted value reached the output or log" ;; *) ok ;; esac

# --- a log nobody reads -------------------------------------------------
# serve's stderr is a FIFO that is held open and never read: once the pipe
# is full, log lines are dropped (and counted), never waited for, so the
# host still starts, answers and stops.  Three Apps print 200 KiB of
# stderr at startup, well past the pipe's 64 KiB.
mkcfg "$T/u"
sed -i 's/^log_level = error/log_level = debug/' "$T/u/host.ini"
for i in 1 2 3; do
    addapp "$T/u" "$i.ini" "org.test.loud$i" 10 --era modern --tools 1 --stderr-lines 3000 --stderr-text "$(printf '%0100d' 0)"
done
mkfifo "$T/u/err"
exec 7<>"$T/u/err"
out=$(printf '%s\n' '{"id":1,"op":"call","tool":"aur.mcp.org.test.loud1.t0000","arguments":{"text":"still here"}}' |
    timeout -k 5 60 "$BIN" serve -c "$T/u" 2>"$T/u/err")
expect_eq $? 0 "serve with an unread stderr exits 0"
expect_has "$out" '{"id":1,"result":{"status":"succeeded","content":"still here"' "serve answers with an unread stderr"
exec 7>&-
expect_eq "$(leftover "$T/u")" 0 "no child after serve with an unread stderr"

# --- serve ---------------------------------------------------------------
mkcfg "$T/s"
# The slow App answers only once the fast answer is out (a file the test
# makes then; a fixed delay is a window a loaded machine can miss): the
# fast call, sent second, overtakes it.
addapp "$T/s" 1-slow.ini org.test.slow 5 --era modern --answer-after "$T/s/go"
addapp "$T/s" 2-fast.ini org.test.fast 5 --era modern
mkfifo "$T/s/in"
"$BIN" serve -c "$T/s" <"$T/s/in" >"$T/s/out" 2>/dev/null &
pid=$!
exec 7>"$T/s/in"
echo '{"id":1,"op":"call","tool":"aur.mcp.org.test.slow.t0000","arguments":{"text":"slow"}}' >&7
for _ in $(seq 300); do grep -q '^tools/call ' "$T/s/server.log" 2>/dev/null && break; sleep 0.05; done
printf '%s\n' \
    '{"id":2,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"fast"}}' \
    'not json' '{"id":3,"op":"nope"}' '{"id":"s","op":"status"}' \
    '{"id":4,"op":"tools"}' >&7
for _ in $(seq 300); do grep -q '"content":"fast"' "$T/s/out" 2>/dev/null && break; sleep 0.05; done
touch "$T/s/go"
exec 7>&-
wait "$pid"; expect_eq $? 0 "serve exit on EOF"
out=$(cat "$T/s/out")
expect_eq "$(echo "$out" | head -1)" '{"ready":true,"tools":2}' "ready line"
expect_eq "$(echo "$out" | wc -l)" 7 "one line per request"
first_call=$(echo "$out" | grep -n '"content":"' | head -1)
expect_has "$first_call" '"id":2' "fast answer comes first"
expect_has "$out" '{"id":1,"result":{"status":"succeeded","content":"slow"' "slow answer"
expect_has "$out" '{"id":null,"error":{"code":"bad_request"' "bad line"
expect_has "$out" '{"id":3,"error":{"code":"unknown_op"' "unknown op"
expect_has "$out" '{"id":"s","result":{"apps":[{"active":true' "status op"
expect_has "$out" '{"id":4,"result":{"tools":[' "tools op"
expect_eq "$(leftover "$T/s")" 0 "no child after serve EOF"
# A misspelt field is refused naming it, never ignored (a call without its
# arguments would run); on every op.
out=$(printf '%s\n' '{"id":1,"op":"call","tool":"aur.mcp.org.test.fast.t0000","argumnts":{"text":"x"}}' \
    '{"id":2,"op":"status","verbose":true}' \
    '{"id":3,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"ok"}}' |
    "$BIN" serve -c "$T/s" 2>/dev/null)
expect_has "$out" '{"id":1,"error":{"code":"bad_request","message":"unknown field \"argumnts\" in a call request (it takes id, op, tool, arguments)"}}' "serve: misspelt call field"
expect_has "$out" '{"id":2,"error":{"code":"bad_request","message":"unknown field \"verbose\" in a status request (it takes id, op)"}}' "serve: unknown status field"
expect_has "$out" '{"id":3,"result":{"status":"succeeded","content":"ok"' "serve: a correct call still runs"

# Requests after the shutdown op are still answered, each once, with
# shutting_down (a line that is no request still gets bad_request), from a
# pipe and from a regular file; a last line without LF is a request too.
printf '%s\n' '{"id":9,"op":"shutdown"}' '{"id":10,"op":"status"}' \
    '{"id":11,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{}}' \
    'not json' '{"id":12,"op":"shutdown"}' >"$T/after-shutdown"
printf '{"id":13,"op":"tools"}' >>"$T/after-shutdown"
for how in pipe file; do
    if [ $how = pipe ]; then
        out=$(cat "$T/after-shutdown" | "$BIN" serve -c "$T/s" 2>/dev/null)
    else
        out=$("$BIN" serve -c "$T/s" <"$T/after-shutdown" 2>/dev/null)
    fi
    expect_eq $? 0 "shutdown op exit ($how)"
    expect_has "$out" '{"id":9,"result":{}}' "shutdown answer ($how)"
    for id in 10 11 12 13; do
        expect_has "$out" '{"id":'$id',"error":{"code":"shutting_down"' "request $id after shutdown ($how)"
    done
    expect_has "$out" '{"id":null,"error":{"code":"bad_request"' "bad line after shutdown ($how)"
    expect_eq "$(echo "$out" | wc -l)" 7 "one answer per line after shutdown ($how)"
done
out=$(printf '{"id":14,"op":"status"}' | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_has "$out" '{"id":14,"result":{"apps":[' "last line without LF answered"

# Ids: a string, a finite number or null, echoed as they came (integers
# digit for digit, other numbers in their shortest form); anything else,
# 1e999 included (json-c would echo Infinity, which is not JSON), is a
# bad_request with id null, on the op path and on the call path alike.
fast='"tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"i"}'
out=$(printf '%s\n' '{"id":1e999,"op":"status"}' '{"id":-1e999,"op":"call",'"$fast"'}' \
    '{"id":1E400,"op":"nope"}' '{"id":true,"op":"status"}' '{"id":[1],"op":"status"}' \
    '{"id":{"a":1},"op":"call",'"$fast"'}' \
    '{"id":0.1,"op":"status"}' '{"id":0.25,"op":"call",'"$fast"'}' '{"id":1E2,"op":"nope"}' \
    '{"id":123456789012345678901234567890,"op":"call",'"$fast"'}' '{"id":-7,"op":"nope"}' \
    '{"id":null,"op":"nope"}' '{"id":"a\u0000b","op":"nope"}' \
    '{"id":-9223372036854775808,"op":"call",'"$fast"'}' '{"id":0,"op":"call",'"$fast"'}' \
    '{"id":-70,"op":"call",'"$fast"'}' '{"id":9223372036854775806,"op":"call",'"$fast"'}' \
    | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_eq "$(echo "$out" | grep -c '^{"id":null,"error":{"code":"bad_request","message":"\\"id\\" must be')" 6 "bad ids refused"
case "$out" in *Infinity*|*NaN*) bad "an id echoed as a non-JSON number: $out" ;; *) ok ;; esac
expect_has "$out" '{"id":0.1,"result":{"apps":[' "id 0.1 (respond path)"
expect_has "$out" '{"id":0.25,"result":{"status":"succeeded"' "id 0.25 (call path)"
expect_has "$out" '{"id":100.0,"error":{"code":"unknown_op"' "id 1E2"
expect_has "$out" '{"id":123456789012345678901234567890,"result":{"status":"succeeded"' "big integer id"
expect_has "$out" '{"id":-7,"error":{"code":"unknown_op"' "negative id"
expect_has "$out" '{"id":null,"error":{"code":"unknown_op"' "null id"
expect_has "$out" '{"id":"a\u0000b","error":{"code":"unknown_op"' "string id with U+0000"
for id in -9223372036854775808 0 -70 9223372036854775806; do
    expect_has "$out" '{"id":'"$id"',"result":{"status":"succeeded"' "integer id $id (call path)"
done
expect_eq "$(echo "$out" | wc -l)" 18 "one answer per id line"

# A name that holds U+0000 is refused, never cut at the NUL into another
# name (t0000 exists: "t0000\u0000x" must not call it; "status\u0000"
# must not be status).
out=$(printf '%s\n' '{"id":1,"op":"call","tool":"aur.mcp.org.test.fast.t0000\u0000x","arguments":{}}' \
    '{"id":2,"op":"status\u0000x"}' '{"id":3,"op":"call\u0000","tool":"aur.mcp.org.test.fast.t0000"}' \
    '{"id":4,"op":"call","tool":"\u0000"}' | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_has "$out" '{"id":1,"error":{"code":"bad_request","message":"\"tool\" contains U+0000"}}' "tool with U+0000"
expect_has "$out" '{"id":2,"error":{"code":"bad_request","message":"\"op\" contains U+0000"}}' "op with U+0000"
expect_has "$out" '{"id":3,"error":{"code":"bad_request","message":"\"op\" contains U+0000"}}' "call op with U+0000"
expect_has "$out" '{"id":4,"error":{"code":"bad_request","message":"\"tool\" contains U+0000"}}' "tool U+0000 only"
case "$out" in *succeeded*|*platform_enabled*) bad "a name cut at U+0000 was served: $out" ;; *) ok ;; esac

# A call's own fields: a string "tool", an object "arguments"; a line that
# is not a request at all is answered with id null.
out=$(printf '%s\n' '{"id":1,"op":"call"}' '{"id":2,"op":"call","tool":7}' \
    '{"id":3,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":[1]}' \
    '[1,2]' '{"id":5}' '{"id":6,"op":7}' 'not json' | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_has "$out" '{"id":1,"error":{"code":"bad_request","message":"call needs a string \"tool\""}}' "call without tool"
expect_has "$out" '{"id":2,"error":{"code":"bad_request","message":"call needs a string \"tool\""}}' "call with a number tool"
expect_has "$out" '{"id":3,"error":{"code":"bad_request","message":"\"arguments\" must be an object"}}' "arguments not an object"
expect_eq "$(echo "$out" | grep -c '^{"id":null,"error":{"code":"bad_request","message":"each line must be a JSON object')" 4 "non-requests refused with id null"
expect_eq "$(echo "$out" | grep -c '^{"id":')" 7 "one answer per line"

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
# A burst serve holds in a batch, in which a request too big to hold
# waits for an App that does not read (busy in a call, its stdin full):
# the held request of another App is written while that send waits, not
# after it, so it is answered within its 2 s (it used to end unknown,
# written only after its deadline).  From a file, behind a 1.5 MB line
# that grows serve's input buffer to 2 MiB: the whole burst is read at
# once, so the batch is still open when the send waits.
mkcfg "$T/v"
addapp "$T/v" a.ini org.test.va 30 --era modern
addapp "$T/v" b.ini org.test.vb 30 --era modern --call-delay-ms 4000
addapp "$T/v" c.ini org.test.vc 2 --era modern
vcall() { # id, App, text length, text character
    printf '{"id":%s,"op":"call","tool":"aur.mcp.org.test.%s.t0000","arguments":{"text":"%s"}}\n' \
        "$1" "$2" "$(head -c "$3" /dev/zero | tr '\0' "$4")"
}
{ vcall 0 va 1500000 g; vcall 1 vb 1 y; vcall 2 vb 40000 f; vcall 3 vc 3 k
  vcall 4 vb 300000 b; } >"$T/vburst"
out=$(timeout -k 5 60 "$BIN" serve -c "$T/v" <"$T/vburst" 2>/dev/null)
expect_eq $? 0 "serve burst with a blocked send"
expect_has "$out" '{"id":3,"result":{"status":"succeeded","content":"kkk"' "serve: a held request is not written behind a blocked send"
expect_eq "$(leftover "$T/v")" 0 "no child after a blocked send"
# A line over 64 MiB is answered once as bad_request and skipped to its
# end; the request after it is still answered.
out=$({ head -c $((64 * 1024 * 1024 + 10)) /dev/zero | tr '\0' 'x'; echo
        echo '{"id":7,"op":"call","tool":"aur.mcp.org.test.fast.t0000","arguments":{"text":"after"}}'
      } | "$BIN" serve -c "$T/s" 2>/dev/null)
expect_eq $? 0 "serve after a line too long"
expect_eq "$(echo "$out" | grep -c '^{"id":null,"error":{"code":"bad_request","message":"line too long"}}')" 1 "line too long answered once"
expect_has "$out" '{"id":7,"result":{"status":"succeeded","content":"after"' "the request after a line too long"
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

# SIGTERM while requests still come: the call in flight answers unknown,
# every line that arrives before serve exits answers shutting_down.  The
# lines are written once serve has taken the signal (the in-flight call
# has answered unknown, which shutdown does first), and the App ignores
# EOF and SIGTERM, so closing it takes 2 x term_grace_ms: the lines surely
# arrive while serve is still there.
mkcfg "$T/g"
addapp "$T/g" a.ini org.test.slow 5 --era modern --call-delay-ms 3000 --ignore-term
mkfifo "$T/g/in"
"$BIN" serve -c "$T/g" <"$T/g/in" >"$T/g/out" 2>/dev/null &
pid=$!
exec 7>"$T/g/in"
for _ in $(seq 300); do grep -q ready "$T/g/out" 2>/dev/null && break; sleep 0.1; done
echo '{"id":5,"op":"call","tool":"aur.mcp.org.test.slow.t0000","arguments":{}}' >&7
for _ in $(seq 300); do grep -q '^tools/call ' "$T/g/server.log" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$pid"
for _ in $(seq 300); do grep -q '"status":"unknown"' "$T/g/out" 2>/dev/null && break; sleep 0.05; done
printf '%s\n' '{"id":20,"op":"status"}' \
    '{"id":21,"op":"call","tool":"aur.mcp.org.test.slow.t0000","arguments":{}}' 'not json' >&7
wait "$pid"; expect_eq $? 0 "serve SIGTERM exit (lines after it)"
exec 7>&-
out=$(cat "$T/g/out")
expect_has "$out" '{"id":5,"result":{"status":"unknown"' "in-flight call unknown (lines after SIGTERM)"
expect_has "$out" '{"id":20,"error":{"code":"shutting_down"' "status after SIGTERM answered"
expect_has "$out" '{"id":21,"error":{"code":"shutting_down"' "call after SIGTERM answered"
expect_has "$out" '{"id":null,"error":{"code":"bad_request"' "bad line after SIGTERM answered"
expect_eq "$(echo "$out" | wc -l)" 5 "one answer per line around SIGTERM"
expect_eq "$(grep -c '^tools/call ' "$T/g/server.log")" 1 "no call sent after SIGTERM"
expect_eq "$(leftover "$T/g")" 0 "no child after SIGTERM (lines after it)"

# The in-flight limit, counted by the App: every call hangs, so each
# tools/call line the App logs is a call in flight at once.  64 run, no
# more, also once stdin has ended with calls still queued (the reader
# then becomes a worker: it used to start a 65th).  A SIGTERM while those
# drain closes the Apps at once: in flight answer unknown, queued
# shutting_down, every id once.
calls_seen() { local n; n=$(grep -c '^tools/call ' "$1/server.log" 2>/dev/null); echo "${n:-0}"; }
mkcfg "$T/l"
addapp "$T/l" a.ini org.test.hang 30 --era modern --hang-at call
for i in $(seq 100); do
    echo '{"id":'"$i"',"op":"call","tool":"aur.mcp.org.test.hang.t0000","arguments":{}}'
done >"$T/l/calls"
"$BIN" serve -c "$T/l" <"$T/l/calls" >"$T/l/out" 2>/dev/null &
pid=$!
for _ in $(seq 300); do [ "$(calls_seen "$T/l")" -ge 64 ] && break; sleep 0.1; done
sleep 1 # a 65th call would be logged by now
expect_eq "$(calls_seen "$T/l")" 64 "64 calls in flight at once after EOF"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    bad "SIGTERM while accepted calls drain did not end serve"
    kill -KILL "$pid"
fi
wait "$pid"
out=$(cat "$T/l/out")
expect_eq "$(echo "$out" | grep -c '"status":"unknown"')" 64 "in flight at SIGTERM: unknown"
expect_eq "$(echo "$out" | grep -c '"code":"shutting_down"')" 36 "queued at SIGTERM: shutting_down"
expect_eq "$(echo "$out" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | sort -un | wc -l)" 100 "each id answered once (drain)"
expect_eq "$(echo "$out" | wc -l)" 101 "one answer per call (drain)"
expect_eq "$(leftover "$T/l")" 0 "no child after SIGTERM (drain)"

# max_in_flight per App: with 2, a third hanging call waits unsent (the
# App sees two); the close answers the two unknown and the waiting one
# failed, never sent.
mkcfg "$T/m"
addapp "$T/m" a.ini org.test.hang 30 --era modern --hang-at call
sed -i 's/^timeout_seconds = 30$/timeout_seconds = 30\nmax_in_flight = 2/' "$T/m/apps.d/a.ini"
mkfifo "$T/m/in"
"$BIN" serve -c "$T/m" <"$T/m/in" >"$T/m/out" 2>/dev/null &
pid=$!
exec 8>"$T/m/in"
for i in 1 2 3; do
    echo '{"id":'"$i"',"op":"call","tool":"aur.mcp.org.test.hang.t0000","arguments":{}}' >&8
done
for _ in $(seq 300); do [ "$(calls_seen "$T/m")" -ge 2 ] && break; sleep 0.1; done
sleep 1 # a third call would be logged by now
expect_eq "$(calls_seen "$T/m")" 2 "max_in_flight = 2: two calls reach the App"
kill -TERM "$pid"
exec 8>&-
wait "$pid"
out=$(cat "$T/m/out")
expect_eq "$(echo "$out" | grep -c '"status":"unknown"')" 2 "max_in_flight: the two sent end unknown"
expect_eq "$(echo "$out" | grep -c '"status":"failed","content":"MCP call not sent: the App closed while the call waited for a slot"')" 1 "max_in_flight: the waiting one failed, not sent"
expect_eq "$(leftover "$T/m")" 0 "no child after max_in_flight"

# A call that is the only one is run by the reader, which keeps its role
# through it (cli/serve_pool.c).  kept_start DIR MS makes that call's send
# wait: the App answers call 1 and then reads nothing for MS, and call 2's
# 512 KiB of arguments fill its pipe.  serve's pid in pid, its stdin on
# fd 8.
big=$(head -c 524288 /dev/zero | tr '\0' a)
kept_start() {
    mkcfg "$1"
    addapp "$1" a.ini org.test.stall 30 --era modern --stall-after-call "$2"
    mkfifo "$1/in"
    "$BIN" serve -c "$1" <"$1/in" >"$1/out" 2>/dev/null &
    pid=$!
    exec 8>"$1/in"
    echo '{"id":1,"op":"call","tool":"aur.mcp.org.test.stall.t0000","arguments":{}}' >&8
    for _ in $(seq 100); do grep -q '^{"id":1,' "$1/out" 2>/dev/null && break; sleep 0.1; done
    printf '{"id":2,"op":"call","tool":"aur.mcp.org.test.stall.t0000","arguments":{"x":"%s"}}\n' "$big" >&8
    sleep 1 # the send is waiting on the full pipe by now (printf returned
    # once serve had read all but the last 64 KiB of the line)
}
# The role is taken from the waiting send within two ticks (2 ms each),
# so a status sent meanwhile is answered while the call still waits
# (before its answer), and the call succeeds once the App reads again.
kept_start "$T/k" 8000
echo '{"id":3,"op":"status"}' >&8
for _ in $(seq 100); do grep -q '^{"id":3,' "$T/k/out" 2>/dev/null && break; sleep 0.1; done
expect_eq "$(grep -c '^{"id":2,' "$T/k/out")" 0 "kept role: the call's send still waits"
expect_has "$(grep '^{"id":3,' "$T/k/out")" '"result":{' "kept role: status answered while the send waits"
exec 8>&-
wait "$pid"; expect_eq $? 0 "kept role: serve exit"
out=$(cat "$T/k/out")
expect_has "$(echo "$out" | grep '^{"id":2,')" '"status":"succeeded"' "kept role: the waiting call succeeds"
expect_eq "$(echo "$out" | sed -n '2,$p' | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | tr '\n' ' ')" "1 3 2 " "kept role: answers in the order they could be given"
expect_eq "$(leftover "$T/k")" 0 "no child after the kept role"
# The same wait ended by SIGTERM: serve closes the App without waiting
# for the send (which the App would let go only after 30 s, the call's
# timeout), the waiting call is answered once, and serve exits within the
# App's stop escalation.
kept_start "$T/k2" 30000
kill -TERM "$pid"
for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
    bad "kept role: SIGTERM while the send waits did not end serve in 15 s"
    kill -KILL "$pid"
fi
wait "$pid"; expect_eq $? 0 "kept role: serve exit after SIGTERM"
exec 8>&-
expect_eq "$(grep -c '^{"id":2,' "$T/k2/out")" 1 "kept role: the waiting call answered once after SIGTERM"
expect_has "$(grep '^{"id":2,' "$T/k2/out")" '"status":"unknown"' "kept role: part of the line left: unknown"
expect_eq "$(leftover "$T/k2")" 0 "no child after SIGTERM in the kept role"

# A burst of calls read in one pass is held and written to the App in one
# go once serve has read it (cli/serve_pool.c); that write may wait like
# any send.  The App reads nothing after the first call it answers until
# the test lets it (a file: no window for a slow machine to miss; a 3 s
# stall once failed under ASan and load), and the three calls of the
# burst (30 KiB of arguments each, more than its pipe holds) come right
# after the first: a status sent meanwhile is answered while the burst's
# write waits, and each call of the burst succeeds, once, as the App
# reads again.
mid=$(head -c 30720 /dev/zero | tr '\0' b)
mkcfg "$T/b"
addapp "$T/b" a.ini org.test.stall 30 --era modern --stall-until "$T/b/go"
mkfifo "$T/b/in"
"$BIN" serve -c "$T/b" <"$T/b/in" >"$T/b/out" 2>/dev/null &
pid=$!
exec 8>"$T/b/in"
echo '{"id":1,"op":"call","tool":"aur.mcp.org.test.stall.t0000","arguments":{}}' >&8
for _ in $(seq 100); do grep -q '^{"id":1,' "$T/b/out" 2>/dev/null && break; sleep 0.1; done
for i in 10 11 12; do
    printf '{"id":%d,"op":"call","tool":"aur.mcp.org.test.stall.t0000","arguments":{"x":"%s"}}\n' "$i" "$mid"
done >"$T/b/burst"
cat "$T/b/burst" >&8
sleep 0.5
echo '{"id":3,"op":"status"}' >&8
for _ in $(seq 100); do grep -q '^{"id":3,' "$T/b/out" 2>/dev/null && break; sleep 0.05; done
expect_has "$(grep '^{"id":3,' "$T/b/out")" '"result":{' "burst: status answered while the burst's write waits"
expect_eq "$(grep -c '^{"id":1[012],' "$T/b/out")" 0 "burst: its calls still wait"
touch "$T/b/go"
exec 8>&-
wait "$pid"; expect_eq $? 0 "burst: serve exit"
out=$(cat "$T/b/out")
expect_eq "$(echo "$out" | grep -c '^{"id":1[012],"result":{"status":"succeeded"')" 3 "burst: every call of it succeeds"
expect_eq "$(echo "$out" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | sort -un | wc -l)" 5 "burst: each id answered once"
expect_eq "$(grep -c '^tools/call ' "$T/b/server.log")" 4 "burst: the App got each call once"
expect_eq "$(leftover "$T/b")" 0 "no child after the burst"

# Calls that cannot be served or queued are answered busy, the rest wait:
# 64 in flight (counted by the App), up to 4096 queued, past that busy; a
# SIGTERM then answers the 64 unknown and the queued and unread ones
# shutting_down: 6000 answers, each id once.
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
for _ in $(seq 300); do [ "$(calls_seen "$T/q")" -ge 64 ] && break; sleep 0.1; done
sleep 1
expect_eq "$(calls_seen "$T/q")" 64 "64 calls in flight at once"
kill -TERM "$pid"
wait "$pid"; expect_eq $? 0 "serve exit after busy"
exec 8>&-
out=$(cat "$T/q/out")
expect_eq "$(echo "$out" | grep -c '"status":"unknown"')" 64 "busy: in flight answer unknown"
busy=$(echo "$out" | grep -c '"code":"busy"')
down=$(echo "$out" | grep -c '"code":"shutting_down"')
# (How many are busy depends on how fast the workers took their first
# calls while the queue filled; each is one or the other.)
expect_eq "$((busy + down))" 5936 "busy: the others answer busy or shutting_down"
[ "$busy" -ge 1 ] && [ "$down" -ge 1 ] && ok || bad "busy $busy, shutting_down $down"
expect_eq "$(echo "$out" | sed -n 's/^{"id":\([0-9]*\),.*/\1/p' | sort -un | wc -l)" 6000 "busy: each id answered once"
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
