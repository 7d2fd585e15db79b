/*
 * env_rule.h - which environment variable names an App may be given:
 * the name grammar and the denylist.  One source compiled into the core
 * (config hints, `import`, aur_env_refused) and into transport-stdio
 * (the rule it enforces), never exported from either.  Pure functions,
 * thread-safe; needs only the C library.
 */
#ifndef AURX_ENV_RULE_H
#define AURX_ENV_RULE_H

#include <stdbool.h>
#include <stddef.h>

/* [A-Za-z_][A-Za-z0-9_]* */
bool aur__valid_env_name(const char *s);
/* The environment denylist: variables that make a child's loader, shell,
 * interpreter, runtime or a library it links run or load code the App
 * did not ship (docs/containment.md).  No App may be given one. */
struct aur__env_deny {
    const char *name;   /* the variable; with prefix, the family's start */
    bool prefix;        /* every name that starts with name */
    const char *family; /* who reads it: "bash", "python", "openssl" ... */
    const char *why;    /* what it makes the child do */
};
/* The whole table (static), *n rows. */
const struct aur__env_deny *aur__env_denylist(size_t *n);
/* The row that denies s, comparing ASCII case-insensitively; NULL if s
 * (or NULL) is allowed. */
const struct aur__env_deny *aur__env_deny_row(const char *s);
/* aur__env_deny_row(s) != NULL. */
bool aur__env_name_denied(const char *s);

#endif
