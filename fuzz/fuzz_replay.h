/*
 * fuzz_replay.h - the main() of a fuzz target's replay build.
 *
 * Included at the end of a target, only under -DAUR_FUZZ_REPLAY, after
 * FUZZ_NAME is defined.  Feeds every regular file of the directories (not
 * recursive, dot files skipped) and every file named on the command line
 * through LLVMFuzzerTestOneInput, so CTest runs the seed corpus with gcc
 * and no libFuzzer.  Exit status 1 when nothing was replayed, so an empty
 * corpus cannot pass.
 *
 * Single-threaded; everything here is file-local.
 */
#ifndef AUR_FUZZ_REPLAY_H
#define AUR_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#define REPLAY_MAX_FILES 10000
#define REPLAY_MAX_BYTES (1024 * 1024)

/* The input goes into a buffer of exactly its size, so ASan catches any
 * read past its end. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf, *exact;
    size_t n;

    if (!f) {
        fprintf(stderr, FUZZ_NAME ": cannot open %s\n", path);
        return -1;
    }
    buf = malloc(REPLAY_MAX_BYTES);
    if (!buf) {
        fclose(f);
        return -1;
    }
    n = fread(buf, 1, REPLAY_MAX_BYTES, f);
    fclose(f);
    exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int replay_dir(const char *dirpath, int *count)
{
    DIR *d = opendir(dirpath);
    struct dirent *e;
    char path[4096];
    struct stat st;

    if (!d) {
        fprintf(stderr, FUZZ_NAME ": cannot open %s\n", dirpath);
        return -1;
    }
    while (*count < REPLAY_MAX_FILES && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dirpath, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (replay_file(path) != 0) {
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
            fprintf(stderr, FUZZ_NAME ": no such file %s\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) != 0
                                : replay_file(argv[i]) != 0)
            return 1;
        if (!S_ISDIR(st.st_mode))
            count++;
    }
    printf(FUZZ_NAME ": %d inputs replayed\n", count);
    return count > 0 ? 0 : 1;
}

#endif
