#!/usr/bin/env bash
# Build and run every test: the CTest suites in a normal build, then the
# same suites again under AddressSanitizer + UndefinedBehaviorSanitizer.
# Both with -DAUR_WERROR=ON: a warning fails our builds (not users').
set -euo pipefail
cd "$(dirname "$0")/.."
# The ABI check (abi_test) needs abidiff; without it CTest would leave the
# test out and pass.
command -v abidiff >/dev/null || {
    echo "abidiff not found: run scripts/setup-debian.sh (abigail-tools)"
    exit 1
}
# The PostgreSQL journal tests start their own server; without its
# binaries they would be skipped (exit 77) and CTest would pass.
compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null ||
    command -v pg_ctl >/dev/null || {
    echo "PostgreSQL server not found: run scripts/setup-debian.sh (postgresql)"
    exit 1
}
bash scripts/build.sh build -DAUR_WERROR=ON
ctest --test-dir build --output-on-failure -j2
bash scripts/build.sh build-asan -DAUR_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
    -DAUR_PERTURB=ON \
    -DAUR_WERROR=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j2
