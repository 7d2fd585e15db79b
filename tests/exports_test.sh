#!/usr/bin/env bash
# What libaurora-mcp exports is its embedding API and nothing else:
#  1. the functions declared in aur_host.h and aur_host_jsonc.h are
#     exactly the names the
#     version script (lib/libaurora-mcp.map) makes global;
#  2. the library's defined dynamic symbols are exactly those functions
#     (no internal aur__* function or global, nothing else), each under
#     the version node the map gives it (AURORA_MCP_1.0, or the node of
#     the release that added it);
#  3. with BUILD_DIR and INTERNAL_LIB (the static aurora-mcp-internal): no
#     program of the build that loads the shared library also carries a
#     copy of the core (that library or the object libraries): two copies
#     of the core's global state.
# usage: exports_test.sh LIBRARY SOURCE_DIR [BUILD_DIR INTERNAL_LIB]
set -u
LIB="$1"
SRC="$2"
BUILD="${3:-}"
INTERNAL="${4:-}"
HDR="$SRC/include/aurora/aur_host.h"
HDR_JSONC="$SRC/include/aurora/aur_host_jsonc.h"
MAP="$SRC/lib/libaurora-mcp.map"
. "$(dirname "$0")/support/expect.sh"
# "what: only in A: ... only in B: ..." when two sorted lists differ.
same() {
    if [ "$1" = "$2" ]; then ok; return; fi
    bad "$3: only in $4: $(comm -23 <(echo "$1") <(echo "$2") | tr '\n' ' ')" \
        "| only in $5: $(comm -13 <(echo "$1") <(echo "$2") | tr '\n' ' ')"
}
for f in "$LIB" "$HDR" "$HDR_JSONC" "$MAP"; do
    [ -f "$f" ] || { bad "missing: $f"; finish; }
done

# Function declarations start at column 0 (comments and struct members
# do not); typedefs of function types are not functions.
declared=$(cat "$HDR" "$HDR_JSONC" |
    grep -E '^[A-Za-z_].*[ *](aur_[a-z0-9_]+)\(' |
    grep -v '^typedef' |
    sed -E 's/^[^(]*[ *](aur_[a-z0-9_]+)\(.*/\1/' | LC_ALL=C sort -u)
[ "$(echo "$declared" | wc -w)" -ge 10 ] && ok ||
    bad "aur_host.h: found only [$declared] (did its layout change?)"

# The map: one "NODE name" line per global name of each version node
# (AURORA_MCP_1.0, then a node per release that added functions),
# comments removed.
script=$(perl -0777 -pe 's{/\*.*?\*/}{}gs; s/#[^\n]*//g; s/\s+/ /g' "$MAP")
pairs=$(echo "$script" | perl -ne '
    while (/([A-Za-z0-9_.]+)\s*\{\s*global:(.*?)(?:local:[^}]*)?\}/g) {
        my ($n, $g) = ($1, $2);
        print "$n $_\n" for grep { length } map { s/\s+//gr } split /;/, $g;
    }' | LC_ALL=C sort -u)
nodes=$(echo "$pairs" | cut -d' ' -f1 | LC_ALL=C sort -u)
mapped=$(echo "$pairs" | cut -d' ' -f2 | LC_ALL=C sort -u)
case "$mapped" in
*'*'* | *'?'* | *'['*) bad "the map globs (aur_* matches aur__ too): $(echo $mapped)" ;;
*) ok ;;
esac
same "$declared" "$mapped" "the API headers vs libaurora-mcp.map" \
    "the headers" "the map"
echo "$nodes" | grep -qx AURORA_MCP_1.0 && ok ||
    bad "no version node AURORA_MCP_1.0 in $MAP"
[ "$(echo "$mapped" | wc -l)" = "$(echo "$pairs" | wc -l)" ] && ok ||
    bad "a name is in two version nodes of $MAP"

# Defined dynamic symbols; each version node itself shows as an ABS symbol.
syms=$(readelf --dyn-syms -W "$LIB" |
    awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $5 != "LOCAL" { print $8 }')
[ -n "$syms" ] && ok || bad "readelf --dyn-syms $LIB: no defined symbols"
names=$(echo "$syms" | sed 's/@.*//' | grep -vxF "$nodes" | LC_ALL=C sort -u)
internal=$(echo "$names" | grep -E '^aur__' | tr '\n' ' ')
[ -z "$internal" ] && ok ||
    bad "internal symbols exported ($(echo "$internal" | wc -w)): $internal"
same "$declared" "$names" "aur_host.h vs exported" aur_host.h "the library"
# Each function under the node the map gives it, as the default version.
versioned=$(echo "$syms" | grep -vxF "$nodes" |
    sed -nE 's/^([^@]+)@@(.+)$/\2 \1/p' | LC_ALL=C sort -u)
same "$pairs" "$versioned" "version nodes: the map vs the library" \
    "the map" "the library"

# --- no program with both cores -------------------------------------------
# A copy of the core is any external symbol of the static core's objects
# (hidden ones included: in a program they are local, still there).
if [ -n "$BUILD" ] && [ -n "$INTERNAL" ]; then
    core=$(nm -g --defined-only "$INTERNAL" 2>/dev/null |
        awk 'NF == 3 && $3 ~ /^aur_/ { print $3 }' | LC_ALL=C sort -u)
    [ "$(echo "$core" | wc -w)" -gt "$(echo "$declared" | wc -w)" ] && ok ||
        bad "nm $INTERNAL: too few symbols"
    soname=$(readelf -d "$LIB" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    n=0
    while IFS= read -r -d '' f; do
        [ "$(head -c 4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] ||
            continue
        readelf -d "$f" 2>/dev/null | grep -qF "Shared library: [$soname]" ||
            continue
        n=$((n + 1))
        copy=$(nm --defined-only "$f" 2>/dev/null | awk 'NF == 3 { print $3 }' |
            grep -xF "$core" | head -n 5 | tr '\n' ' ')
        [ -z "$copy" ] && ok ||
            bad "${f#"$BUILD"/} loads $soname and has a core of its own: $copy..."
    done < <(find "$BUILD" -name CMakeFiles -prune -o -type f -perm -u+x \
        ! -name '*.so*' -print0)
    # The CLI at least is such a program.
    [ "$n" -gt 0 ] && ok || bad "no program in $BUILD loads $soname"
fi
finish
