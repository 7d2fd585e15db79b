/*
 * config_agents.c - agents.ini (optional): [agent <id>] sections with
 * repeatable `tools = <pattern>` keys (README: Configuration).
 *
 * Patterns are kept verbatim, '!' included; whether they name registered
 * tools is decided after discovery, by the engine.  Here only their syntax
 * is checked, so a typo fails at load with its file and line.
 */
#include "aur_setup.h"

#include <stdio.h>

#include "config_int.h"

#define AGENTS_FILE "agents.ini"

static bool id_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* Syntax of one pattern segment s[0..n); NULL when fine. */
static const char *segment_problem(const char *s, size_t n)
{
    size_t i = 0;

    if (n == 0)
        return "has an empty segment";
    while (i < n) {
        size_t j;
        if (s[i] != '[') {
            i++;
            continue;
        }
        j = i + 1;
        if (j < n && (s[j] == '!' || s[j] == '^'))
            j++;
        if (j < n && s[j] == ']')
            j++; /* a leading ']' is a member, as in fnmatch */
        for (; j < n && s[j] != ']'; j++)
            if (j + 2 < n && s[j + 1] == '-' && s[j + 2] != ']') {
                if ((unsigned char)s[j + 2] < (unsigned char)s[j])
                    return "has a character range running backwards";
                j += 2;
            }
        if (j >= n)
            return "has an unterminated [ class";
        i = j + 1;
    }
    return NULL;
}

static const char *pattern_problem(const char *pat)
{
    const char *seg, *why;

    if (*pat == '!')
        pat++;
    if (*pat == '\0')
        return "is an empty pattern";
    for (seg = pat;; ) {
        const char *dot = strchr(seg, '.');
        size_t n = dot ? (size_t)(dot - seg) : strlen(seg);
        if ((why = segment_problem(seg, n)))
            return why;
        if (!dot)
            return NULL;
        seg = dot + 1;
    }
}

/* "agent <id>" -> id (pointer into name), or NULL. */
static const char *agent_id(const char *name)
{
    const char *p;

    if (strncmp(name, "agent", 5) != 0 || (name[5] != ' ' && name[5] != '\t'))
        return NULL;
    for (p = name + 5; *p == ' ' || *p == '\t'; p++)
        ;
    return p;
}

static int load_agent(struct aur__cfg_ctx *ctx, struct aur__config *c,
                      struct aur__ini_sec *sec)
{
    static const struct aur_cfg_key rules[] = {{"tools", false, true}};
    struct aur__agent_cfg *ag = &c->agents[c->nagents];
    const char *id = agent_id(sec->cfg.section), *p, *why;
    char key[64];
    size_t i;
    int rc;

    snprintf(key, sizeof key, "[%.60s]", sec->cfg.section);
    if (!id)
        return aur__cfg_fail(ctx, AGENTS_FILE, sec->line, key,
                             "unknown section (want [agent <id>])");
    for (p = id; *p && id_char((unsigned char)*p); p++)
        ;
    if (p == id || *p)
        return aur__cfg_fail(ctx, AGENTS_FILE, sec->line, key,
                             "agent id must be [A-Za-z0-9_.-]+");
    for (i = 0; i < c->nagents; i++)
        if (strcmp(c->agents[i].id, id) == 0)
            return aur__cfg_fail(ctx, AGENTS_FILE, sec->line, key,
                                 "agent %s defined twice", id);
    rc = aur__check_keys(ctx, &sec->cfg, rules, AUR__ARRAY_LEN(rules));
    if (rc != AUR_OK)
        return rc;
    for (i = 0; i < sec->cfg.n; i++)
        if ((why = pattern_problem(sec->cfg.kv[i].value)))
            return aur__cfg_fail(ctx, AGENTS_FILE, sec->cfg.kv[i].line,
                                 "tools", "'%.80s' %s", sec->cfg.kv[i].value,
                                 why);

    memset(ag, 0, sizeof *ag);
    if (!(ag->id = strdup(id)))
        goto nomem;
    if (sec->cfg.n) {
        ag->tools = calloc(sec->cfg.n, sizeof *ag->tools);
        ag->tool_lines = calloc(sec->cfg.n, sizeof *ag->tool_lines);
        if (!ag->tools || !ag->tool_lines)
            goto nomem;
    }
    for (i = 0; i < sec->cfg.n; i++) {
        /* Taken over from the document. */
        ag->tools[i] = sec->cfg.kv[i].value;
        ag->tool_lines[i] = sec->cfg.kv[i].line;
        sec->cfg.kv[i].value = NULL;
        ag->ntools++;
    }
    c->nagents++;
    return AUR_OK;
nomem:
    aur__agent_cfg_release(ag);
    return aur__cfg_nomem(ctx, AGENTS_FILE);
}

int aur__config_load_agents(struct aur__cfg_ctx *ctx, struct aur__config *c)
{
    struct aur__ini *ini = NULL;
    size_t i;
    int rc;

    rc = aur__ini_load(ctx, AGENTS_FILE, true, &ini);
    if (rc == AUR_DECLINE)
        return AUR_OK;
    if (rc != AUR_OK)
        return rc;
    if (!(c->agents_file = strdup(AGENTS_FILE))) {
        rc = aur__cfg_nomem(ctx, AGENTS_FILE);
        goto out;
    }
    if (ini->nsecs) {
        c->agents = calloc(ini->nsecs, sizeof *c->agents);
        if (!c->agents) {
            rc = aur__cfg_nomem(ctx, AGENTS_FILE);
            goto out;
        }
    }
    for (i = 0; rc == AUR_OK && i < ini->nsecs; i++)
        rc = load_agent(ctx, c, &ini->secs[i]);
out:
    aur__ini_free(ini);
    return rc;
}

void aur__agent_cfg_release(struct aur__agent_cfg *ag)
{
    size_t i;

    for (i = 0; i < ag->ntools; i++)
        free(ag->tools[i]);
    free(ag->tools);
    free(ag->tool_lines);
    free(ag->id);
    memset(ag, 0, sizeof *ag);
}
