#!/usr/bin/env bash
# Install what aurora-mcp needs to build and test on Debian (run as root,
# or through sudo), and the pinned npm test peers.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config ca-certificates openssl \
    libcurl4-openssl-dev libjson-c-dev libssl-dev libinih-dev check \
    libsqlite3-dev procps binutils clang libclang-rt-14-dev man-db valgrind \
    python3 python3-pytest python3-venv abigail-tools postgresql libpq-dev \
    >/dev/null
# The SDK peers need Node >= 20; keep a newer system Node if there is one.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
if [ "${1:-}" != "--no-peers" ]; then
    (cd tests/peers && npm ci --no-audit --no-fund --loglevel=error)
    # The official conformance suite and the Node 24 it needs.
    (cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error)
fi
