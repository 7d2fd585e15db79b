#!/usr/bin/env bash
# Record the ABI of libaurora-mcp that a release promises, into
# abi/libaurora-mcp.abi (libabigail's XML, from abigail-tools): the
# exported functions of aur_host.h and aur_host_jsonc.h and every type
# they reach.  tests/abi_test.sh compares each build against it.
#
# Run it once per major release, from a RelWithDebInfo build (the ABI is
# read from DWARF): bash scripts/abi-record.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
lib=$(ls "$build"/lib/libaurora-mcp.so.[0-9]* | grep -E '\.so\.[0-9]+$' | head -1)
mkdir -p abi
bash tests/abi_test.sh --dump "$lib" "$PWD" > abi/libaurora-mcp.abi
echo "recorded $(grep -c '<elf-symbol ' abi/libaurora-mcp.abi) symbols of $lib"
