#!/usr/bin/env bash
# Install end-to-end: install an already built tree into a temporary
# prefix, then use it the way a third party would: the CLI runs from the
# prefix without LD_LIBRARY_PATH, pkg-config describes it, the example
# plugin examples/ext-audit builds out of tree against it alone, installs
# into its plugindir, and the installed CLI finds it (and the bundled
# plugins) with no plugin_dir in host.ini.
# usage: install_test.sh BUILD_DIR SOURCE_DIR
# Writes only under its mktemp directory (plus the install manifest that
# `cmake --install` always leaves in BUILD_DIR).
set -u
BUILD="$1"
SRC="$2"
. "$(dirname "$0")/support/expect.sh"
T=$(mktemp -d /tmp/aur-test-install-XXXXXX)
trap '[ -n "${AUR_KEEP:-}" ] || rm -rf "$T"' EXIT
P="$T/prefix"
TOOL=aur.mcp.org.aurora.demo.echo


# --- install ---------------------------------------------------------------
if ! cmake --install "$BUILD" --prefix "$P" >"$T/install.log" 2>&1; then
    bad "cmake --install: $(tail -n 5 "$T/install.log")"
    finish
fi
ok
for f in bin/aurora-mcp bin/aurora-mcp-demo-server include/aurora/aur_host.h \
         include/aurora/aur_plugin.h share/man/man1/aurora-mcp.1; do
    if [ -f "$P/$f" ]; then ok; else bad "not installed: $f"; fi
done
LIB=$(cd "$P" && ls -d lib*/libaurora-mcp.so.*.*.* 2>/dev/null | head -n 1)
LIBDIR="$P/${LIB%/*}"
if [ -n "$LIB" ]; then ok; else bad "libaurora-mcp.so.X.Y.Z not installed"; finish; fi
PLUGDIR="$LIBDIR/aurora-mcp/plugins"
# Every plugin the build made (fixtures live elsewhere), and no other.
built=$(cd "$BUILD/plugins" && ls -- *.so 2>/dev/null | sort | tr '\n' ' ')
inst=$(cd "$PLUGDIR" 2>/dev/null && ls -- *.so 2>/dev/null | sort | tr '\n' ' ')
expect_eq "$inst" "$built" "installed plugins"
expect_has "$inst" "transport-stdio.so" "transport-stdio installed"
# The programs plugins start (transport-stdio's supervisor) sit beside them.
if [ -x "$PLUGDIR/aur-contain" ]; then ok
else bad "not installed: $PLUGDIR/aur-contain (transport-stdio's supervisor)"; fi
soname=$(readelf -d "$P/$LIB" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
expect_has "$soname" "libaurora-mcp.so." "soname"
if [ -e "$LIBDIR/$soname" ] && [ -e "$LIBDIR/libaurora-mcp.so" ]; then ok
else bad "soname or dev symlink missing in $LIBDIR"; fi
# The installed library exports aur_host.h's functions and nothing else,
# and the static core some tests link is not installed.
if bash "$SRC/tests/exports_test.sh" "$P/$LIB" "$SRC" >"$T/exports.log" 2>&1
then ok
else bad "installed library's exports: $(grep FAIL "$T/exports.log" | head -c 600)"
fi
if find "$P" -name 'libaurora-mcp-internal*' | grep -q .; then
    bad "libaurora-mcp-internal installed"
else ok; fi

# --- the CLI runs from the prefix without LD_LIBRARY_PATH ----------------------
out=$(env -u LD_LIBRARY_PATH "$P/bin/aurora-mcp" --version 2>&1)
expect_eq "$?" 0 "installed --version"
expect_has "$out" "plugin ABI 1." "--version text"
lib_used=$(env -u LD_LIBRARY_PATH ldd "$P/bin/aurora-mcp" |
           sed -n 's/.*libaurora-mcp[^ ]* => \([^ ]*\) .*/\1/p')
expect_eq "$(realpath "${lib_used:-/nonexistent}" 2>&1)" "$(realpath "$P/$LIB")" \
    "CLI resolves the installed library"

# --- pkg-config ------------------------------------------------------------
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
pkg-config --exists aurora-mcp aurora-mcp-plugin; expect_eq $? 0 "pkg-config --exists"
pkg-config --exists 'aurora-mcp-plugin >= 1.0'; expect_eq $? 0 "plugin ABI >= 1.0"
# The .pc states the header's ABI version (one source: aur_plugin.h).
hdr_abi=$(sed -n 's/^#define AUR_ABI_MAJOR \([0-9]*\)$/\1/p' "$P/include/aurora/aur_plugin.h").$(sed -n 's/^#define AUR_ABI_MINOR \([0-9]*\)$/\1/p' "$P/include/aurora/aur_plugin.h")
expect_eq "$(pkg-config --modversion aurora-mcp-plugin)" "$hdr_abi" "plugin .pc version = header ABI"
expect_eq "$(pkg-config --variable=plugindir aurora-mcp-plugin)" "$PLUGDIR" "plugindir"
expect_has "$(pkg-config --libs aurora-mcp)" "-laurora-mcp" "aurora-mcp Libs"
libs=$(pkg-config --libs-only-l aurora-mcp-plugin)
case "$libs" in *aurora*) bad "aurora-mcp-plugin has core Libs: $libs" ;; *) ok ;; esac
expect_has "$(pkg-config --cflags aurora-mcp-plugin)" "-I$P/include" "plugin Cflags"

# An embedder compiles and links against the installed API alone.
cat >"$T/embed.c" <<'EOF'
#include <aurora/aur_host.h>
#include <stdio.h>
int main(void)
{
    puts(aur_rc_word(AUR_E_CONFIG));
    return 0;
}
EOF
# An instrumented library (AUR_SANITIZE, AUR_TSAN) needs an instrumented
# program.
# gcc records its runtime as NEEDED; clang leaves the runtime's symbols
# undefined for the program to provide.
san=
undef=$(nm -D --undefined-only "$P/$LIB" 2>/dev/null)
if readelf -d "$P/$LIB" | grep NEEDED | grep -q libasan ||
   grep -q ' __asan_' <<<"$undef"; then
    san=-fsanitize=address,undefined
elif readelf -d "$P/$LIB" | grep NEEDED | grep -q libtsan ||
     grep -q ' __tsan_' <<<"$undef"; then
    san=-fsanitize=thread
fi
if ${CC:-cc} $san -o "$T/embed" "$T/embed.c" \
        $(pkg-config --cflags --libs aurora-mcp) >"$T/embed.log" 2>&1; then
    expect_eq "$(LD_LIBRARY_PATH="$LIBDIR" "$T/embed")" "config_invalid" "embedder"
else
    bad "embedder build: $(head -n 5 "$T/embed.log")"
fi

# --- the out-of-tree plugin ------------------------------------------------
# Plain flags on purpose: a third party does not build with our sanitizers,
# and an uninstrumented plugin must load into an instrumented host too.
# (Our own check keeps its warnings fatal: -DAUR_WERROR=ON.)
if env -u CFLAGS -u LDFLAGS cmake -S "$SRC/examples/ext-audit" \
        -B "$T/audit-build" -DAUR_WERROR=ON >"$T/audit.log" 2>&1 &&
   cmake --build "$T/audit-build" >>"$T/audit.log" 2>&1 &&
   cmake --install "$T/audit-build" >>"$T/audit.log" 2>&1; then
    ok
else
    bad "ext-audit out-of-tree build: $(tail -n 15 "$T/audit.log")"
    finish
fi
AUDIT="$PLUGDIR/ext-audit.so"
if [ -f "$AUDIT" ]; then ok; else bad "ext-audit.so not in plugindir"; finish; fi
syms=$(nm -D --defined-only "$AUDIT" | awk '{print $NF}' | sort | tr '\n' ' ')
expect_eq "$syms" "aur_plugin_entry " "ext-audit exports only the entry"
if readelf -d "$AUDIT" | grep NEEDED | grep -q aurora; then
    bad "ext-audit links the core"
else ok; fi

info=$(env -u LD_LIBRARY_PATH "$P/bin/aurora-mcp" plugin-info "$AUDIT" 2>"$T/info.err")
expect_eq "$?" 0 "plugin-info ext-audit"
expect_has "$info" '"name":"ext-audit"' "plugin-info name"
expect_has "$info" '"classify"' "plugin-info hooks"

# --- the installed CLI runs the demo with the audit plugin -------------------
cp -R "$SRC/examples/demo" "$T/demo"
rm -rf "$T/demo/data"/*.sqlite3*
# Append to the value, before any "; comment".
sed -i -E '/^plugins *=/s/^([^;]*[^; ])( *;.*)?$/\1 ext-audit\2/' "$T/demo/host.ini"
expect_has "$(grep '^plugins' "$T/demo/host.ini")" "ext-audit" "host.ini edited"
if grep -q '^plugin_dir' "$T/demo/host.ini"; then bad "demo sets plugin_dir"; else ok; fi
export PATH="$P/bin:$PATH"
unset LD_LIBRARY_PATH

cd "$T"
aurora-mcp discover -c "$T/demo" >"$T/discover.out" 2>"$T/discover.err"
expect_eq "$?" 0 "discover: $(head -c 400 "$T/discover.out" "$T/discover.err")"
expect_has "$(cat "$T/discover.out")" "\"id\":\"$TOOL\"" "discover lists echo"

aurora-mcp call -c "$T/demo" "$TOOL" '{"text":"x"}' >"$T/call.out" 2>"$T/call.err"
expect_eq "$?" 0 "call: $(head -c 400 "$T/call.out" "$T/call.err")"
expect_has "$(cat "$T/call.out")" '"status":"succeeded"' "call status"
err=$(cat "$T/call.err")
expect_has "$err" "$TOOL result seen" "audit log line"
expect_has "$err" "1 call results seen" "audit summary"
case "$err" in *'"text"'*|*'"x"'*) bad "arguments leaked into the log" ;; *) ok ;; esac

# The plugin's own host.ini section reaches its init.
printf '[ext-audit]\nsummary = false\n' >>"$T/demo/host.ini"
aurora-mcp call -c "$T/demo" "$TOOL" '{"text":"x"}' >"$T/call2.out" 2>"$T/call2.err"
expect_eq "$?" 0 "call with summary = false"
err=$(cat "$T/call2.err")
expect_has "$err" "$TOOL result seen" "audit line with summary = false"
case "$err" in *"call results seen"*) bad "summary = false ignored" ;; *) ok ;; esac
sed -i 's/^summary = false$/summary = maybe/' "$T/demo/host.ini"
out=$(aurora-mcp check -c "$T/demo" 2>/dev/null)
expect_eq "$?" 2 "bad [ext-audit] value is a config error"
expect_has "$out" "ext-audit: init failed" "init failure reported"

# --- transport-http finds its backend in the prefix --------------------------
# transport-http.so links no libcurl; the first check of an HTTP App loads
# transport-http-libcurl.so from the directory the plugin came from.
if [ -f "$PLUGDIR/transport-http-libcurl.so" ]; then ok
else bad "not installed: $PLUGDIR/transport-http-libcurl.so (transport-http's backend)"; fi
cp -R "$SRC/examples/demo" "$T/web"
rm -rf "$T/web/data"/*.sqlite3*
sed -i -E 's/^plugins *=.*/plugins = transport-stdio transport-http/' "$T/web/host.ini"
printf '[app]\npackage = org.test.web\nenabled = false\ntransport = streamable_http\ntimeout_seconds = 5\n[http]\nurl = https://127.0.0.1:9/mcp\n' \
    >"$T/web/apps.d/web.ini"
LD_DEBUG=files aurora-mcp check -c "$T/web" >"$T/web.out" 2>"$T/web.ld"
expect_eq "$?" 0 "installed: check of an HTTP App: $(head -c 400 "$T/web.out")"
expect_has "$(grep 'file=' "$T/web.ld")" "file=$PLUGDIR/transport-http-libcurl.so" \
    "installed: the backend loaded from the plugin directory"
rm "$T/web/apps.d/web.ini"
LD_DEBUG=files aurora-mcp check -c "$T/web" >"$T/web.out" 2>"$T/web.ld"
expect_eq "$?" 0 "installed: check without an HTTP App"
expect_eq "$(grep -c 'file=.*libcurl' "$T/web.ld")" 0 "installed: no HTTP App, no libcurl"

# --- the PostgreSQL journal backend beside the library --------------------
# The library loads it on the first postgresql:// journal; a file journal
# never maps it (the checks above used one).
MODDIR="$LIBDIR/aurora-mcp"
if [ -f "$MODDIR/journal-postgresql.so" ]; then ok
else bad "not installed: $MODDIR/journal-postgresql.so (the PostgreSQL journal)"; fi
expect_eq "$(grep -c 'file=.*\(libpq\|journal-postgresql\)' "$T/web.ld")" 0 "installed: file journal, no libpq"
sed -i -E 's|^journal *=.*|journal = postgresql://nobody@127.0.0.1:9/none?connect_timeout=1|' "$T/web/host.ini"
LD_DEBUG=files aurora-mcp journal -c "$T/web" >"$T/pg.out" 2>"$T/pg.ld"
expect_eq "$?" 1 "installed: journal of an unreachable database fails (runtime error)"
expect_has "$(grep 'file=' "$T/pg.ld")" "file=$MODDIR/journal-postgresql.so" \
    "installed: the PostgreSQL backend loaded from beside the library"
expect_has "$(grep -v 'file=' "$T/pg.ld" | grep 'aurora-mcp: journal')" "127.0.0.1" \
    "installed: the error names the server"

# --- the man page ----------------------------------------------------------
if command -v man >/dev/null 2>&1; then
    page=$(MANPAGER=cat MANWIDTH=80 man -l "$P/share/man/man1/aurora-mcp.1" 2>&1)
    expect_eq "$?" 0 "man -l"
    expect_has "$page" "EXIT STATUS" "man page sections"
    expect_has "$page" "plugin-info" "man page commands"
else
    echo "skip: man not installed, page not rendered"
fi

finish
