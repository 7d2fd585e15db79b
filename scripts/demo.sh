#!/usr/bin/env bash
# Build, then run the main job on the bundled demo App: discover its
# catalog and call one of its tools.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build
export PATH="$PWD/build/bin:$PATH"
aurora-mcp check -c examples/demo >/dev/null
aurora-mcp discover -c examples/demo
aurora-mcp call -c examples/demo aur.mcp.org.aurora.demo.echo '{"text":"hello from aurora-mcp"}'
