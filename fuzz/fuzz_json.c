/*
 * fuzz_json.c - libFuzzer target for the strict JSON parser and the
 * canonical serializer (lib/jsonx/jsonx_*.c).
 *
 * For every input: parse it; if it parses, canonicalise it; the canonical
 * text must parse again and canonicalise to the very same bytes (the
 * differential check).  Any violation aborts.
 *
 * Fuzzing build (from the source root, clang needed):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Iinclude -Ilib/base -Ilib/jsonx $(pkg-config --cflags json-c) \
 *       fuzz/fuzz_json.c lib/jsonx/jsonx_*.c $(pkg-config --libs json-c) -lm \
 *       -o fuzz_json
 *   ./fuzz_json -max_len=4096 fuzz/corpus/json
 *
 * Built with -DAUR_FUZZ_REPLAY instead (CMake target fuzz_json_replay,
 * CTest fuzz_json_corpus), main() feeds every file of the directories or
 * files named on the command line through the same entry point.
 */
#include "aur_setup.h"

#include <stdio.h>

#include <json-c/json.h>

#include "jsonx.h"

#define FUZZ_DEPTH 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct aur_error err;
    struct json_object *v = NULL, *w = NULL;
    char *c1 = NULL, *c2 = NULL, *compact, num[64];
    size_t n1 = 0, n2 = 0;
    int rc;

    aur_error_clear(&err);
    rc = aur__json_parse((const char *)data, size, FUZZ_DEPTH, &v, &err);
    if (rc != AUR_OK) {
        if ((rc != AUR_E_PROTOCOL && rc != AUR_E_NOMEM) || err.code != rc ||
            err.msg[0] == '\0')
            abort();
        return 0;
    }
    compact = aur__json_compact(v);
    if (!compact)
        abort();
    free(compact);
    rc = aur__json_integer_text(v, num, sizeof num);
    if (rc == AUR_OK && json_object_get_type(v) != json_type_int &&
        json_object_get_type(v) != json_type_double)
        abort();
    rc = aur__json_canonical(v, &c1, &n1, &err);
    if (rc != AUR_OK) {
        /* Only a value the parser made +-inf (e.g. 1e400) has no form. */
        if (rc != AUR_E_INVAL)
            abort();
        goto out;
    }
    if (strlen(c1) != n1)
        abort();
    if (aur__json_parse(c1, n1, FUZZ_DEPTH, &w, &err) != AUR_OK)
        abort();
    if (aur__json_canonical(w, &c2, &n2, &err) != AUR_OK)
        abort();
    if (n1 != n2 || memcmp(c1, c2, n1) != 0)
        abort();
out:
    free(c1);
    free(c2);
    json_object_put(v);
    json_object_put(w);
    return 0;
}

#ifdef AUR_FUZZ_REPLAY
#define FUZZ_NAME "fuzz_json"
#include "fuzz_replay.h"
#endif
