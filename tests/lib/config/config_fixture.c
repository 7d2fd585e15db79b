/*
 * config_fixture.c - check_config's fixture (config_fixture.h).
 */
#include "aur_setup.h"

#include <check.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_fixture.h"
#include "support/transports.h"

char tmp[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *f)
{
    (void)st;
    (void)flag;
    (void)f;
    return remove(p);
}

void setup(void)
{
    strcpy(tmp, "/tmp/aur-check-config-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
}

void teardown(void)
{
    nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void path_of(char *out, size_t n, const char *rel)
{
    int k = snprintf(out, n, "%s/%s", tmp, rel);
    ck_assert(k > 0 && (size_t)k < n);
}

/* Write tmp/rel, creating its parent directories. */
void put(const char *rel, const char *text)
{
    char p[PATH_MAX], *s;
    FILE *f;

    path_of(p, sizeof p, rel);
    for (s = p + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

void mkdir_rel(const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

void unlink_rel(const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(unlink(p), 0);
}

void symlink_rel(const char *target, const char *rel)
{
    char p[PATH_MAX];

    path_of(p, sizeof p, rel);
    ck_assert_int_eq(symlink(target, p), 0);
}

const struct aur__transport_def *T(void)
{
    size_t n;
    return test_transports(&n);
}

size_t NT(void)
{
    size_t n;
    test_transports(&n);
    return n;
}

struct aur__config *load_ok(void)
{
    struct aur__config *c = NULL;
    struct aur__config_diag diag;
    struct aur_error err;
    int rc = aur__config_load(tmp, T(), NT(), &c, &diag, &err);

    ck_assert_msg(rc == AUR_OK, "load failed (%d): %s", rc, err.msg);
    ck_assert_ptr_nonnull(c);
    return c;
}
