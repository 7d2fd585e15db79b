#!/bin/sh
# Wire smoke test of the stand-alone MCP servers: pipes scripted JSON-RPC
# lines into each server and checks the replies.
# usage: servers_smoke.sh DEMO_SERVER FIXTURE_SERVER
set -u

DEMO=$1
FIXTURE=$2
TMP=$(mktemp -d /tmp/servers-smoke.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM
FAILS=0
CHECKS=0

ENV_META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"smoke","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}'
BAD_META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}'

fail() {
    FAILS=$((FAILS + 1))
    echo "FAIL: $*" >&2
}

# has FILE STRING: FILE contains STRING (fixed string).
has() {
    CHECKS=$((CHECKS + 1))
    grep -F -q -- "$2" "$1" || fail "$1 lacks: $2"
}

# lacks FILE STRING
lacks() {
    CHECKS=$((CHECKS + 1))
    if grep -F -q -- "$2" "$1"; then fail "$1 has: $2"; fi
}

# line FILE N STRING: line N of FILE contains STRING.
line() {
    CHECKS=$((CHECKS + 1))
    sed -n "$2p" "$1" | grep -F -q -- "$3" || fail "$1 line $2 lacks: $3"
}

# lines FILE N: FILE has exactly N lines.
lines() {
    CHECKS=$((CHECKS + 1))
    n=$(wc -l < "$1" | tr -d ' ')
    [ "$n" = "$2" ] || fail "$1 has $n lines, expected $2"
}

# status NAME GOT WANT
status() {
    CHECKS=$((CHECKS + 1))
    [ "$2" = "$3" ] || fail "$1 exited $2, expected $3"
}

# run OUT INPUT CMD...: feeds INPUT (a file) to CMD, stdout to OUT; the
# exit status lands in $RC.  timeout bounds a server that fails to exit.
run() {
    out=$1
    in=$2
    shift 2
    timeout 10 "$@" < "$in" > "$out" 2> "$out.err"
    RC=$?
}

# --- demo server, modern era --------------------------------------------
cat > "$TMP/modern.in" <<EOF
{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{$ENV_META}}
{"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{$ENV_META,"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}
{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{$ENV_META}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},$ENV_META}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2},$ENV_META}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{},$ENV_META}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"WordCount","arguments":{"text":"one two  three"},$ENV_META}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"now",$ENV_META}}
{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{},$ENV_META}}
{"jsonrpc":"2.0","id":7,"method":"tools/list"}
{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}
{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{$BAD_META}}
{"jsonrpc":"2.0","id":10,"method":"foo/bar","params":{$ENV_META}}
{"jsonrpc":"2.0","id":11,"method":"ping","params":{$ENV_META}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:0"}}
{"jsonrpc":"2.0","id":12,"method":"subscriptions/listen","params":{$ENV_META,"notifications":{}}}
{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}
EOF
O=$TMP/demo-modern.out
run "$O" "$TMP/modern.in" "$DEMO"
status demo-modern "$RC" 0
lines "$O" 16
line "$O" 1 '"id":"server-discover-probe-1","result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"extensions":{"org.aurorabot/tool-contract":{"version":1}}},"instructions":'
line "$O" 1 '"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"aurora-mcp-demo-server","version":'
line "$O" 2 '{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}}'
line "$O" 3 '"id":0,"result":{"tools":[{"name":"echo",'
line "$O" 3 '{"name":"WordCount","description":"Count the whitespace-separated words of a text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}],"resultType":"complete","ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":'
for t in echo add now fail WordCount; do line "$O" 3 "{\"name\":\"$t\""; done
lacks "$O" nextCursor
line "$O" 4 '"id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":'
line "$O" 5 '"id":2,"result":{"content":[{"type":"text","text":"42"}],"structuredContent":{"sum":42},"resultType":"complete"'
line "$O" 6 '"id":3,"result":{"content":[{"type":"text","text":"fail: this demo tool always fails"}],"isError":true,"resultType":"complete"'
line "$O" 7 '"id":4,"result":{"content":[{"type":"text","text":"3"}],"structuredContent":{"words":3}'
CHECKS=$((CHECKS + 1))
sed -n 8p "$O" | grep -E -q '"id":5,"result":\{"content":\[\{"type":"text","text":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"\}\]' \
    || fail "now: bad time text"
line "$O" 9 '{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Tool nope not found"}}'
line "$O" 10 '"id":7,"error":{"code":-32602,"message":"Request is missing the required _meta envelope'
line "$O" 11 '"id":8,"error":{"code":-32602,"message":"Invalid _meta envelope'
line "$O" 12 '"id":9,"error":{"code":-32022,"message":"Unsupported protocol version: 2099-01-01","data":{"supported":["2026-07-28"],"requested":"2099-01-01"}}'
line "$O" 13 '"id":10,"error":{"code":-32601,"message":"Method not found"}'
line "$O" 14 '"id":11,"error":{"code":-32601'
line "$O" 15 '{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":12}}'
line "$O" 16 '"id":13,"error":{"code":-32022,"message":"Unsupported protocol version: 2025-11-25","data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}'

# --- demo server, legacy era --------------------------------------------
cat > "$TMP/legacy.in" <<EOF
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"ping"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"legacy hi"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":"2"}}}
{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{$ENV_META}}
{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{$ENV_META}}
{"jsonrpc":"2.0","id":7,"method":"nope"}
{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{}}}
EOF
O=$TMP/demo-legacy.out
run "$O" "$TMP/legacy.in" "$DEMO"
status demo-legacy "$RC" 0
lines "$O" 9
line "$O" 1 '"id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}'
line "$O" 1 '"serverInfo":{"name":"aurora-mcp-demo-server"'
line "$O" 2 '{"jsonrpc":"2.0","id":1,"result":{}}'
line "$O" 3 '"id":2,"result":{"tools":[{"name":"echo"'
line "$O" 4 '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"legacy hi"}]}}'
line "$O" 5 '"id":4,"result":{"content":[{"type":"text","text":"add: arguments'
line "$O" 5 '"isError":true}}'
line "$O" 6 '"id":5,"error":{"code":-32601'
line "$O" 7 '"id":6,"error":{"code":-32600'
line "$O" 8 '"id":7,"error":{"code":-32601,"message":"Method not found"}'
line "$O" 9 '"id":8,"result":{"protocolVersion":"2025-11-25"'
lacks "$O" resultType
lacks "$O" notifications/initialized

# --- demo server, pagination (argument and environment) -----------------
cat > "$TMP/pages.in" <<EOF
{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{$ENV_META,"notifications":{"toolsListChanged":true}}}
{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{$ENV_META}}
{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{$ENV_META,"cursor":"o:2"}}
{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{$ENV_META,"cursor":"o:4"}}
{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{$ENV_META,"cursor":"bogus"}}
EOF
O=$TMP/demo-pages.out
run "$O" "$TMP/pages.in" "$DEMO" --page-size 2
status demo-pages "$RC" 0
line "$O" 2 '"id":1,"result":{"tools":[{"name":"echo"'
line "$O" 2 '{"name":"add"'
line "$O" 2 '"nextCursor":"o:2"'
line "$O" 3 '"id":2,"result":{"tools":[{"name":"now"'
line "$O" 3 '"nextCursor":"o:4"'
line "$O" 4 '"id":3,"result":{"tools":[{"name":"WordCount"'
CHECKS=$((CHECKS + 1))
sed -n 4p "$O" | grep -F -q nextCursor && fail "last page has a nextCursor"
line "$O" 5 '"id":4,"error":{"code":-32602,"message":"Invalid cursor"}'
O=$TMP/demo-pages-env.out
run "$O" "$TMP/pages.in" env AURORA_DEMO_PAGE_SIZE=4 "$DEMO"
line "$O" 2 '"nextCursor":"o:4"'

# --- demo server: malformed input, stdin EOF while listening -------------
printf '%s\n' 'not json' '[{"jsonrpc":"2.0","id":1,"method":"ping"}]' \
    '{"jsonrpc":"2.0","id":null,"method":"ping"}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' > "$TMP/bad.in"
O=$TMP/demo-bad.out
run "$O" "$TMP/bad.in" "$DEMO"
status demo-bad "$RC" 0
lines "$O" 3
line "$O" 1 '{"jsonrpc":"2.0","id":null,"error":{"code":-32700'
line "$O" 2 '{"jsonrpc":"2.0","id":null,"error":{"code":-32600'
line "$O" 3 '{"jsonrpc":"2.0","id":null,"error":{"code":-32600'

# --- fixture server: modern pagination, log order -----------------------
cat > "$TMP/fx.in" <<EOF
{"jsonrpc":"2.0","id":"p1","method":"server/discover","params":{$ENV_META}}
{"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{$ENV_META,"notifications":{"toolsListChanged":true}}}
{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{$ENV_META}}
{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{$ENV_META,"cursor":"p2"}}
{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{$ENV_META,"cursor":"p3"}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t0004","arguments":{"text":"x"},$ENV_META}}
EOF
O=$TMP/fx.out
run "$O" "$TMP/fx.in" "$FIXTURE" --tools 5 --page-size 2 \
    --change-during-list 2 --log "$TMP/fx.log" \
    --extensions '{"org.aurorabot/tool-contract":{"version":1}}'
status fixture "$RC" 0
lines "$O" 7
line "$O" 1 '"capabilities":{"tools":{"listChanged":true},"extensions":{"org.aurorabot/tool-contract":{"version":1}}}'
line "$O" 2 '"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}'
line "$O" 3 '"id":0,"result":{"tools":[{"name":"t0000"'
line "$O" 3 '"nextCursor":"p2"'
line "$O" 4 '"id":1,"result":{"tools":[{"name":"t0002"'
line "$O" 5 '{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}}'
line "$O" 6 '"id":2,"result":{"tools":[{"name":"t0004"'
line "$O" 7 '"id":3,"result":{"content":[{"type":"text","text":"x"}],"resultType":"complete"'
line "$TMP/fx.log" 1 'start '
line "$TMP/fx.log" 2 'server/discover "p1"'
line "$TMP/fx.log" 3 'subscriptions/listen "listen:0"'
line "$TMP/fx.log" 4 'tools/list 0'
line "$TMP/fx.log" 8 'eof '

# --- fixture server: legacy era faults ----------------------------------
cat > "$TMP/fxl.in" <<EOF
{"jsonrpc":"2.0","id":"p1","method":"server/discover","params":{$ENV_META}}
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/list"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bad.name"}}
EOF
O=$TMP/fxl.out
run "$O" "$TMP/fxl.in" "$FIXTURE" --era legacy --tool-name bad.name \
    --call-error -32603
status fixture-legacy "$RC" 0
line "$O" 1 '"id":"p1","error":{"code":-32601'
line "$O" 2 '"id":0,"result":{"protocolVersion":"2025-11-25"'
line "$O" 3 '"id":1,"result":{"tools":[{"name":"bad.name"'
line "$O" 4 '"id":2,"error":{"code":-32603'
run "$O" "$TMP/fxl.in" "$FIXTURE" --era legacy --probe-exit
status fixture-probe-exit "$RC" 1
lines "$O" 0
run "$O" "$TMP/fxl.in" "$FIXTURE" --exit-at list:1
status fixture-exit-at "$RC" 3
lines "$O" 2

echo "servers_smoke: $CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
