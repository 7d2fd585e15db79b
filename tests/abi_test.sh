#!/usr/bin/env bash
# The ABI of libaurora-mcp against the one recorded for this major release
# (abi/libaurora-mcp.abi, scripts/abi-record.sh), with libabigail's abidiff:
# a removed or changed function, or a changed type behind one (a field
# moved or retyped, a size changed), fails; an added function only prints
# what was added (it belongs in a new version node, lib/libaurora-mcp.map).
# abidiff's own verdict is not enough: it calls a field that changed from
# size_t to uint32_t inside the same struct size "compatible", so any
# function or variable it counts as removed or changed fails here.
#
# First the check itself is shown to fail: against a copy of the record
# that claims one more function, the build must count as incompatible.
#
# Usage: abi_test.sh LIB SRC_DIR;  abi_test.sh --dump LIB SRC_DIR prints
# LIB's ABI in the recorded form.
set -euo pipefail
dump=0
if [ "${1:-}" = --dump ]; then dump=1; shift; fi
lib="$1" src="$2"

abi_of() {
    # Only what the public headers declare, and nothing that changes when
    # a line moves or the tree is built elsewhere.
    abidw --headers-dir "$src/include/aurora" --drop-private-types \
          --no-corpus-path --no-comp-dir-path --no-show-locs "$1"
}
if [ "$dump" = 1 ]; then
    abi_of "$lib"
    exit 0
fi
command -v abidiff >/dev/null || {
    echo "abidiff not found: install abigail-tools (scripts/setup-debian.sh)"
    exit 1
}
base="$src/abi/libaurora-mcp.abi"
[ -s "$base" ] || { echo "no recorded ABI at $base"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
abi_of "$lib" > "$T/now.abi"

# abidiff's exit status is a bit set: 4 = the ABI changed, 8 = and the
# change is incompatible, 1/2 = it could not compare.
compare() {
    local rc=0
    abidiff "$1" "$2" > "$T/report" 2>&1 || rc=$?
    echo "$rc"
}

# The check can fail: a record with one function more (a copy of
# aur_free's entries under another name) makes this build look as if it
# had removed a function.
awk '
/<elf-symbol name=.aur_free./ {
    print; l = $0; gsub(/aur_free/, "aur_abi_probe", l); print l; next
}
/<function-decl name=.aur_free./ { copy = 1; buf = "" }
copy {
    print; buf = buf $0 "\n"
    if (/<\/function-decl>/) {
        copy = 0; gsub(/aur_free/, "aur_abi_probe", buf); printf "%s", buf
    }
    next
}
{ print }' "$base" > "$T/probe.abi"
grep -q "aur_abi_probe" "$T/probe.abi" || { echo "probe not made"; exit 1; }
rc=$(compare "$T/probe.abi" "$T/now.abi")
if [ $((rc & 8)) = 0 ] || ! grep -q "1 Removed" "$T/report"; then
    echo "FAIL: a removed function was not reported as incompatible (rc $rc)"
    cat "$T/report"
    exit 1
fi

rc=$(compare "$base" "$T/now.abi")
if [ $((rc & 3)) != 0 ]; then
    echo "FAIL: abidiff could not compare (rc $rc)"
    cat "$T/report"
    exit 1
fi
if [ $((rc & 8)) != 0 ] ||
   grep -Eq '(^|[^0-9])[1-9][0-9]* (Removed|Changed)' "$T/report"; then
    echo "FAIL: the ABI changed incompatibly against $base:"
    cat "$T/report"
    exit 1
fi
if [ $((rc & 4)) != 0 ]; then
    echo "compatible ABI change (additions) against $base:"
    cat "$T/report"
fi
echo "PASS: the ABI of $(basename "$lib") keeps $base"
