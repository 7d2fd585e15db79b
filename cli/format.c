/*
 * format.c - what a person reads on a terminal: the status document, a
 * call's outcome and journal lines as tables (--format table, the default
 * when stdout is a terminal).  JSON (--format json, the default otherwise)
 * is printed elsewhere, byte for byte as always: scripts never see a
 * table unless they ask for one.
 *
 * Text from servers (descriptions, errors, content) may hold anything:
 * control characters are shown as '?' so nothing a terminal acts on gets
 * through.
 */
#define _GNU_SOURCE 1
#include "cli.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum cli_format cli_format = CLI_FORMAT_AUTO;

bool cli_table(void)
{
    return cli_format == CLI_FORMAT_TABLE ||
           (cli_format == CLI_FORMAT_AUTO && isatty(STDOUT_FILENO));
}

/* s on one line, at most max bytes (0: all), controls as '?'. */
static void put_clean(const char *s, size_t len, size_t max)
{
    size_t n = max && len > max ? max : len;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        putchar(c < 0x20 || c == 0x7f ? '?' : c);
    }
    if (n < len)
        fputs("...", stdout);
}

static const char *str(struct json_object *o, const char *key)
{
    struct json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !v)
        return "-";
    return json_object_get_string(v);
}

void cli_print_status_table(struct json_object *doc)
{
    struct json_object *apps, *tools;

    printf("%-32s %-12s %-16s %-11s %5s  %s\n", "APP", "STATE", "TRANSPORT",
           "VERSION", "TOOLS", "LAST ERROR");
    if (json_object_object_get_ex(doc, "apps", &apps))
        for (size_t i = 0; i < json_object_array_length(apps); i++) {
            struct json_object *a = json_object_array_get_idx(apps, i), *ids;
            const char *err = str(a, "last_error");
            json_object_object_get_ex(a, "tool_ids", &ids);
            printf("%-32s %-12s %-16s %-11s %5zu  ", str(a, "package"),
                   str(a, "state"), str(a, "transport"),
                   str(a, "negotiated_version"),
                   json_object_array_length(ids));
            put_clean(err, strlen(err), 200);
            putchar('\n');
        }
    if (json_object_object_get_ex(doc, "tools", &tools) &&
        json_object_array_length(tools)) {
        printf("\n%-56s %s\n", "TOOL", "DESCRIPTION");
        for (size_t i = 0; i < json_object_array_length(tools); i++) {
            struct json_object *t = json_object_array_get_idx(tools, i), *c;
            const char *d = str(t, "description");
            size_t dl = strcspn(d, "\n");
            printf("%-56s ", str(t, "id"));
            if (json_object_object_get_ex(t, "callable", &c) &&
                !json_object_get_boolean(c))
                fputs("(not callable: needs tasks) ", stdout);
            put_clean(d, dl, 100);
            putchar('\n');
        }
    }
    fflush(stdout);
}

void cli_print_call_table(const struct aur_tool_output *o)
{
    static const char *const why[] = {
        [AUR_CALL_SUCCEEDED] = "",
        [AUR_CALL_FAILED] = "  (no effect: safe to retry)",
        [AUR_CALL_UNKNOWN] = "  (it may or may not have had an effect)"};
    printf("status: %s%s\n", aur_call_status_word(o->status),
           (unsigned)o->status < 3 ? why[o->status] : "");
    if (o->content && o->content_len) {
        /* the content as the server wrote it, line breaks kept */
        for (size_t i = 0; i < o->content_len; i++) {
            unsigned char c = (unsigned char)o->content[i];
            putchar((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?'
                                                                      : c);
        }
        if (o->content[o->content_len - 1] != '\n')
            putchar('\n');
    }
    fflush(stdout);
}

void cli_print_journal_row(struct json_object *row)
{
    const char *summary = str(row, "summary");
    printf("%6s  %-27s  %-22s  %-28s  ", str(row, "seq"),
           str(row, "occurred_at"), str(row, "kind"), str(row, "source"));
    put_clean(summary, strlen(summary), 120);
    putchar('\n');
}
