#!/usr/bin/env bash
# ThreadSanitizer: build everything (library, CLI, plugins, tests, fixture
# programs) with -fsanitize=thread into BUILD_DIR and run the whole CTest
# suite there.  Any TSan report fails the run: halt_on_error=1 stops the
# reporting process (exit 66, so its test fails), and every report is also
# written to BUILD_DIR/tsan-reports/ and printed at the end, so a report
# from a process whose exit status a test ignores still fails this script.
#
# usage: scripts/tsan.sh [BUILD_DIR]            (default build-tsan)
#   CC                   compiler (default gcc: its TSan runtime is a shared
#                        library every instrumented .so records as NEEDED)
#   AUR_TSAN_JSONC       instrumented (default) | system.  json-c on Debian
#                        is built without atomic refcounts, so get/put of an
#                        object shared by two threads is a real race -- but
#                        TSan sees only instrumented code, so by default the
#                        exact source of the installed libjson-c is fetched
#                        with `apt-get source` (private apt state, no root,
#                        no change to the system) and built with TSan.
#                        "system" uses the uninstrumented library instead
#                        (races inside json-c are then invisible).
#   AUR_TSAN_JSONC_SRC   a json-c source tree to build instead of fetching
#   AUR_TSAN_HALT        1 (default) | 0: 0 lets a process go on after its
#                        first report (to collect every report in one run;
#                        the process still exits 66 and the run still fails)
#   JOBS                 build and ctest parallelism (default 2)
#   extra arguments after BUILD_DIR are passed to ctest (e.g. -R check_calls)
#
# Node peers and npm servers are not instrumented, nor are third-party
# libraries other than json-c (libcurl, OpenSSL, SQLite, inih): their own
# locks are intercepted; tests/tsan.supp may suppress ONLY their code.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
B=${1:-build-tsan}
shift || true
case $B in /*) ;; *) B=$ROOT/$B ;; esac
export CC=${CC:-gcc}
JOBS=${JOBS:-2}
JSONC_MODE=${AUR_TSAN_JSONC:-instrumented}
t_all=$(date +%s)
log() { printf 'tsan.sh: %s\n' "$*" >&2; }

# --- 1. json-c with TSan ----------------------------------------------------
pc_path=
if [ "$JSONC_MODE" = instrumented ]; then
    J=$B/jsonc-tsan
    if [ ! -f "$J/prefix/lib/pkgconfig/json-c.pc" ]; then
        src=${AUR_TSAN_JSONC_SRC:-}
        if [ -z "$src" ]; then
            # The source of exactly the installed version, through apt with
            # a private sources list, state and cache (no root needed).
            want=$(dpkg-query -W -f='${source:Package}=${source:Version}' \
                   libjson-c-dev 2>/dev/null) || {
                log "libjson-c-dev is not installed"; exit 2; }
            . /etc/os-release
            A=$J/apt
            rm -rf "$A" "$J/src"
            mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$J/src"
            mirror=${AUR_TSAN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
            {
                echo "deb-src $mirror $VERSION_CODENAME main"
                echo "deb-src $mirror $VERSION_CODENAME-updates main"
                echo "deb-src ${mirror%/debian}/debian-security" \
                     "$VERSION_CODENAME-security main"
            } >"$A/sources.list"
            aopt=(-o "Dir::Etc::SourceList=$A/sources.list"
                  -o "Dir::Etc::SourceParts=$A/none"
                  -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache"
                  -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
            [ "$(id -u)" = 0 ] || aopt=("${aopt[@]:0:10}")
            if ! apt-get "${aopt[@]}" -qq update >"$J/apt.log" 2>&1 ||
               ! (cd "$J/src" && apt-get "${aopt[@]}" -qq source "$want") \
                    >>"$J/apt.log" 2>&1; then
                cat "$J/apt.log" >&2
                log "cannot fetch the source of $want (AUR_TSAN_JSONC_SRC=DIR" \
                    "to use a local tree, AUR_TSAN_JSONC=system to skip)"
                exit 2
            fi
            src=$(find "$J/src" -mindepth 1 -maxdepth 1 -type d | head -n 1)
        fi
        log "building instrumented json-c from $src"
        rm -rf "$J/build" "$J/prefix"
        mkdir -p "$J" # (a given AUR_TSAN_JSONC_SRC skips the fetch that made it)
        if ! { nice -n 5 cmake -S "$src" -B "$J/build" -DCMAKE_BUILD_TYPE= \
                 -DCMAKE_C_FLAGS="-g -O1 -fsanitize=thread" \
                 -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
                 -DBUILD_STATIC_LIBS=OFF -DBUILD_TESTING=OFF \
                 -DDISABLE_WERROR=ON -DCMAKE_INSTALL_PREFIX="$J/prefix" \
                 -DCMAKE_INSTALL_LIBDIR=lib &&
               nice -n 5 cmake --build "$J/build" -j"$JOBS" &&
               cmake --install "$J/build"; } >"$J/build.log" 2>&1; then
            tail -n 30 "$J/build.log" >&2
            log "building json-c failed"
            exit 2
        fi
    fi
    pc_path=$J/prefix/lib/pkgconfig
elif [ "$JSONC_MODE" = system ]; then
    log "WARNING: system json-c (not instrumented): races on json-c" \
        "refcounts are NOT detected"
else
    log "AUR_TSAN_JSONC must be instrumented or system"
    exit 2
fi
t_jsonc=$(date +%s)

# --- 2. configure and build ----------------------------------------------
# -O1: TSan's stacks stay close to the source; -O2 inlines too much.
mkdir -p "$B"
if ! PKG_CONFIG_PATH=$pc_path${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} \
     nice -n 5 cmake -S . -B "$B" -DAUR_TSAN=ON -DAUR_SANITIZE=OFF \
        -DAUR_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" >"$B/configure.log" 2>&1; then
    cat "$B/configure.log" >&2
    exit 2
fi
if ! nice -n 5 cmake --build "$B" -j"$JOBS"; then
    log "build failed"
    exit 2
fi
if [ -n "$pc_path" ]; then
    # pkg-config results are cached: make sure the instrumented one is used.
    got=$(ldd "$B/bin/aurora-mcp" | awk '/libjson-c/ {print $3}')
    case $got in
    "$J/prefix/"*) ;;
    *) log "aurora-mcp uses $got, not the instrumented json-c" \
           "(stale cache? rm -rf $B)"; exit 2 ;;
    esac
fi
t_build=$(date +%s)

# --- 3. the whole suite under TSan ------------------------------------------
R=$B/tsan-reports
rm -rf "$R"
mkdir -p "$R"
export TSAN_OPTIONS="halt_on_error=${AUR_TSAN_HALT:-1} second_deadlock_stack=1\
 suppressions=$ROOT/tests/tsan.supp print_suppressions=0 history_size=4\
 log_path=$R/report exitcode=66"
# Check's per-test timeouts and the tests' own slack (tests/support/
# harness.c h_slack) stretch under TSan; what the tests assert does not.
export CK_TIMEOUT_MULTIPLIER=${CK_TIMEOUT_MULTIPLIER:-4}
export AUR_TEST_TIME_SCALE=${AUR_TEST_TIME_SCALE:-3}
# check_killpoints: one round of its schedule (every cell; 324 trials when
# this was written) instead of 1000 trials -- 13 min under TSan otherwise.
# Here we look for races on every kill path; the statistics are the
# normal and ASan builds' job.
export AUR_KILLPOINT_TRIALS=${AUR_KILLPOINT_TRIALS:-324}
log "ctest in $B (TSAN_OPTIONS=$TSAN_OPTIONS)"
nice -n 5 ctest --test-dir "$B" --output-on-failure -j"$JOBS" "$@"
rc=$?
t_test=$(date +%s)

n=0
for f in "$R"/report.*; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    echo "----- $(basename "$f") -----"
    cat "$f"
done
# Instrumented children started with a scrubbed environment (the stdio
# transport passes no TSAN_OPTIONS) report on their stderr, which the
# host logs: CTest keeps every test's output in LastTest.log.
if grep -l 'WARNING: ThreadSanitizer' "$B"/Testing/Temporary/LastTest.log \
        >/dev/null 2>&1; then
    n=$((n + 1))
    log "TSan reports in test output ($B/Testing/Temporary/LastTest.log):"
    grep -A30 'WARNING: ThreadSanitizer' "$B"/Testing/Temporary/LastTest.log |
        head -n 200
fi
log "json-c $((t_jsonc - t_all))s, build $((t_build - t_jsonc))s," \
    "ctest $((t_test - t_build))s (rc $rc), $n process(es) with TSan reports"
if [ "$n" -gt 0 ]; then
    log "distinct reports (count, first line of SUMMARY):"
    cat "$R"/report.* 2>/dev/null | grep '^SUMMARY' | sort | uniq -c |
        sort -rn >&2
    log "FAIL: ThreadSanitizer reports above (files in $R)"
    exit 1
fi
exit $rc
