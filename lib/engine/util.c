#include "aur_setup.h"

#include "engine.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

char *aur__strdup_printf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

void aur__set_str(char **slot, const char *v)
{
    free(*slot);
    *slot = v ? strdup(v) : NULL;
}

bool aur__is_blank_n(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && (s[i] < '\t' || s[i] > '\r'))
            return false;
    return true;
}

bool aur__is_blank(const char *s)
{
    return !s || aur__is_blank_n(s, strlen(s));
}
