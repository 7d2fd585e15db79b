#!/usr/bin/env bash
# Python call overhead over the C API, measured in one invocation: the
# same config (our C fixture server, one tool, over stdio) driven by
# bench_host (the C API: sequential, and 16 threads in flight) and by
# bench_python.py (Host sequentially, AsyncHost with 16 awaited at once),
# rounds interleaved so background load hits all alike.  Prints medians
# and the ratios Python / C API as a Markdown table.  Not a test.
# usage: bench/python.sh [BUILD_DIR] [ROUNDS] [CALLS]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
ROUNDS=${2:-5}
N=${3:-2000}
PY=${PYTHON:-python3}
T=$(mktemp -d /tmp/aurora-bench-python.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/cfg/apps.d" "$T/cfg/data"
cat >"$T/cfg/host.ini" <<INI
[host]
plugins = transport-stdio
plugin_dir = $BUILD/plugins
journal = data/world.sqlite3
log_level = warn
[mcp]
enabled = true
INI
cat >"$T/cfg/apps.d/bench.ini" <<INI
[app]
package = org.bench.py
enabled = true
transport = stdio
timeout_seconds = 30
[stdio]
command = $BUILD/bin/aur-fixture-server
working_dir = .
arg = --era
arg = modern
arg = --tools
arg = 1
INI
TOOL=aur.mcp.org.bench.py.t0000
export AURORA_MCP_LIB="$BUILD/lib/libaurora-mcp.so.1"
export PYTHONPATH="$SRC/bindings/python"
for r in $(seq "$ROUNDS"); do
    "$BUILD/bench/bench_host" -c "$T/cfg" -t "$TOOL" -n "$N" -k 1 |
        sed 's/"client":"capi"/"client":"capi-k1"/'
    "$BUILD/bench/bench_host" -c "$T/cfg" -t "$TOOL" -n "$N" -k 16 |
        sed 's/"client":"capi"/"client":"capi-k16"/'
    "$PY" "$SRC/bench/bench_python.py" -c "$T/cfg" -t "$TOOL" -n "$N"
    "$PY" "$SRC/bench/bench_python.py" -c "$T/cfg" -t "$TOOL" -n "$N" \
        -k 16 --async
done >"$T/results.jsonl"
"$PY" - "$T/results.jsonl" "$N" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
if any(r["failed"] for r in rows):
    sys.exit("a call failed: " + json.dumps([r for r in rows if r["failed"]]))
med = {}
for r in rows:
    med.setdefault(r["client"], []).append(r)
def m(c, k):
    return statistics.median(x[k] for x in med[c])
print(f"| client | µs per call (wall) | CPU µs per call | ratio to C API (wall) |")
print("|---|---|---|---|")
for c, ref in [("capi-k1", "capi-k1"), ("python-sync", "capi-k1"),
               ("capi-k16", "capi-k16"), ("python-async-k16", "capi-k16")]:
    w = m(c, "call_ms") * 1000 / n
    cpu = m(c, "cpu_ms") * 1000 / n
    ratio = m(c, "call_ms") / m(ref, "call_ms")
    print(f"| {c} | {w:.1f} | {cpu:.1f} | {ratio:.2f} |")
PYEOF
