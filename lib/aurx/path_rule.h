/*
 * path_rule.h - the rule for a path written in an App file (working_dir,
 * ca_file, a socket path ...): relative to the config directory, never
 * out of it.  One source compiled into each transport that reads such a
 * path, never exported.  Pure functions over borrowed strings (resolve
 * reads the file system); thread-safe.
 */
#ifndef AURX_PATH_RULE_H
#define AURX_PATH_RULE_H

/*
 * Non-blank, not absolute, no drive letter, no ".." segment.  Backslashes
 * are rewritten to '/' in place.  NULL when fine, else what is wrong.
 */
const char *aur__rel_path_problem(char *path);

/*
 * root/rel with every existing component through realpath (symbolic
 * links followed) and the rest as written; it must stay inside root.
 * AUR_OK with *out (malloc'd), AUR_E_NOMEM, or AUR_E_CONFIG with *why.
 */
int aur__resolve_under(const char *root, const char *rel, char **out,
                       const char **why);

/* dir + "/" + rel, malloc'd; NULL when out of memory. */
char *aur__path_join(const char *dir, const char *rel);

#endif
