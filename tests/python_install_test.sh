#!/usr/bin/env bash
# The Python binding the way a user installs it: `pip install
# ./bindings/python` into a fresh venv with no package index at all, and
# the installed copy (not the source tree) finding libaurora-mcp next to
# an installed aurora-mcp on PATH, with no AURORA_MCP_LIB, and calling
# the demo App.
# usage: python_install_test.sh BUILD_DIR SOURCE_DIR PYTHON
# Writes only under its mktemp directory (plus the install manifest that
# `cmake --install` always leaves in BUILD_DIR).
set -u
BUILD="$1"
SRC="$2"
PY="$3"
. "$(dirname "$0")/support/expect.sh"
T=$(mktemp -d /tmp/aur-test-python-XXXXXX)
trap '[ -n "${AUR_KEEP:-}" ] || rm -rf "$T"' EXIT
P="$T/prefix"

if ! cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1; then
    bad "cmake --install: $(tail -n 5 "$T/install.log")"
    finish
fi
if ! "$PY" -m venv "$T/venv" >"$T/venv.log" 2>&1; then
    bad "$PY -m venv (apt-get install python3-venv): $(tail -n 3 "$T/venv.log")"
    finish
fi
ok
# No index: the in-tree build backend needs nothing to be downloaded.
if "$T/venv/bin/pip" install --no-index --no-cache-dir -q \
        "$SRC/bindings/python" >"$T/pip.log" 2>&1; then
    ok
else
    bad "pip install: $(tail -n 5 "$T/pip.log")"
    finish
fi
site=$("$T/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for f in aurora_mcp/__init__.py aurora_mcp/host.py aurora_mcp/_lib.py \
         aurora_mcp/py.typed; do
    if [ -f "$site/$f" ]; then ok; else bad "not installed: $f"; fi
done
mkdir "$T/demo"  # without a data/ the demo may have left here
cp -r "$SRC/examples/demo/host.ini" "$SRC/examples/demo/agents.ini" \
      "$SRC/examples/demo/apps.d" "$T/demo/"
out=$(cd "$T" && env -u AURORA_MCP_LIB PATH="$P/bin:$PATH" \
      "$T/venv/bin/python" - "$T/demo" 2>"$T/run.log" <<'PYEOF'
import sys
import aurora_mcp
assert "site-packages" in aurora_mcp.__file__, aurora_mcp.__file__
print(aurora_mcp.library()._name)
with aurora_mcp.Host(sys.argv[1]) as host:
    out = host.call("aur.mcp.org.aurora.demo.add", {"a": 2, "b": 40})
    print(out.status, out.text)
PYEOF
)
expect_has "$out" "$P/" "the library next to the installed CLI"
expect_has "$out" 'succeeded {"sum":42}' "a call through the installed package"
[ "$fail" -eq 0 ] || cat "$T/run.log" >&2
finish
