/*
 * fuzz_json.c - libFuzzer target for the strict JSON parser and the
 * canonical serializer (core/json_*.c).
 *
 * For every input: parse it; if it parses, canonicalise it; the canonical
 * text must parse again and canonicalise to the very same bytes (the
 * differential check).  Any violation aborts.
 *
 * Fuzzing build (from the source root, clang needed):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *       -Icore -Icore/include $(pkg-config --cflags json-c) \
 *       fuzz/fuzz_json.c core/json_*.c $(pkg-config --libs json-c) -lm \
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
#include <dirent.h>
#include <sys/stat.h>

#define MAX_FILES 10000
#define MAX_BYTES (1024 * 1024)

/* The input goes into a buffer of exactly its size, so ASan catches any
 * read past its end. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    size_t n;

    if (!f) {
        fprintf(stderr, "fuzz_json: cannot open %s\n", path);
        return -1;
    }
    buf = malloc(MAX_BYTES);
    if (!buf) {
        fclose(f);
        return -1;
    }
    n = fread(buf, 1, MAX_BYTES, f);
    fclose(f);
    if (n == 0) {
        LLVMFuzzerTestOneInput(buf, 0);
    } else {
        unsigned char *exact = malloc(n);

        if (!exact) {
            free(buf);
            return -1;
        }
        memcpy(exact, buf, n);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
    }
    free(buf);
    return 0;
}

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    struct stat st;

    if (!d) {
        fprintf(stderr, "fuzz_json: cannot open %s\n", dir);
        return -1;
    }
    while (*count < MAX_FILES && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (run_file(path) != 0) {
            closedir(d);
            return -1;
        }
        (*count)++;
    }
    closedir(d);
    return 0;
}

int main(int argc, char **argv)
{
    struct stat st;
    int i, count = 0;

    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_json: no such file %s\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) != 0
                                : run_file(argv[i]) != 0)
            return 1;
        if (!S_ISDIR(st.st_mode))
            count++;
    }
    printf("fuzz_json: %d inputs replayed\n", count);
    /* An empty corpus would make the CTest pass without testing. */
    return count > 0 ? 0 : 1;
}
#endif
