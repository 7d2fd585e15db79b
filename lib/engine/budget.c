/*
 * budget.c - the per-tool and per-result budgets of an App
 * (docs/budgets.md): schema depth and size and description size when a
 * tool is discovered, content size when a call's result is mapped.  The
 * notification budget is counted where messages come in (rpc.c).
 *
 * The values come from the App's frozen config (struct aur__budgets), so
 * these functions only read shared state.  The tool check runs on the
 * App's startup thread, the result check on the caller's thread.
 */
#include "aur_setup.h"

#include "engine.h"
#include "jsonx.h"

#include <json-c/json.h>

/* Container depth of v ({} is 1, [[1]] is 2), counted no further than
 * limit + 1.  Inbound JSON is at most 128 deep, so recursion is bounded. */
static int64_t depth_of(struct json_object *v, int64_t limit)
{
    int64_t best = 0;

    if (limit < 0)
        return 1;
    if (json_object_is_type(v, json_type_array)) {
        size_t n = json_object_array_length(v);
        for (size_t i = 0; i < n && best <= limit; i++) {
            int64_t d = depth_of(json_object_array_get_idx(v, i), limit - 1);
            if (d > best)
                best = d;
        }
        return best + 1;
    }
    if (json_object_is_type(v, json_type_object)) {
        json_object_object_foreach(v, key, val) {
            int64_t d;
            (void)key;
            if (best > limit)
                break;
            d = depth_of(val, limit - 1);
            if (d > best)
                best = d;
        }
        return best + 1;
    }
    return 0;
}

/* One schema member (inputSchema or outputSchema) of a tool. */
static int schema_check(const struct aur__budgets *b, const char *id,
                        const char *member, struct json_object *schema,
                        char **keep, size_t *keep_len, struct aur_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int64_t d = depth_of(schema, b->schema_depth);
    int rc;

    if (d > b->schema_depth)
        return aur_fail(err, AUR_E_LIMIT, 0,
                        "tool %s: %s nests deeper than max_schema_depth = "
                        "%lld",
                        id, member, (long long)b->schema_depth);
    /* Size is that of the canonical text: what the server's formatting
     * does not change.  The copy is bounded by the frame it came in. */
    rc = aur__json_canonical(schema, &text, &len, err);
    if (rc == AUR_E_NOMEM)
        return rc;
    if (rc != AUR_OK)
        return aur_fail(err, AUR_E_CATALOG, 0, "tool %s: %s cannot be "
                        "serialised", id, member);
    if ((int64_t)len > b->schema_bytes) {
        free(text);
        return aur_fail(err, AUR_E_LIMIT, 0,
                        "tool %s: %s is %zu bytes, over max_schema_bytes = "
                        "%lld",
                        id, member, len, (long long)b->schema_bytes);
    }
    if (keep) {
        *keep = text;
        *keep_len = len;
    } else {
        free(text);
    }
    return AUR_OK;
}

int aur__tool_budget_check(const struct aur__app *app, const char *id,
                           struct json_object *tj, char **schema_text,
                           size_t *schema_len, struct aur_error *err)
{
    const struct aur__budgets *b = &app->cfg->budgets;
    static const char *const schemas[] = {"inputSchema", "outputSchema"};
    struct json_object *v;
    int rc;

    if (json_object_object_get_ex(tj, "description", &v) &&
        json_object_is_type(v, json_type_string) &&
        (int64_t)json_object_get_string_len(v) > b->desc_bytes)
        return aur_fail(err, AUR_E_LIMIT, 0,
                        "tool %s: description is %d bytes, over "
                        "max_description_bytes = %lld",
                        id, json_object_get_string_len(v),
                        (long long)b->desc_bytes);
    for (size_t i = 0; i < AUR__ARRAY_LEN(schemas); i++) {
        if (!json_object_object_get_ex(tj, schemas[i], &v) || !v)
            continue;
        rc = schema_check(b, id, schemas[i], v, i ? NULL : schema_text,
                          schema_len, err);
        if (rc != AUR_OK) {
            free(*schema_text);
            *schema_text = NULL;
            return rc;
        }
    }
    return AUR_OK;
}

/*
 * A result the host will not hand on.  The server answered, so the call
 * ran: it is not "failed" (that needs an explicit rejection or proof of no
 * effect), and it is not "succeeded" either, because the confirmed output
 * never reaches the caller (cutting it would change the tool's answer and
 * break structured JSON).  So it is "unknown", as any other client-side
 * failure after the request went out (docs/protocol.md, Calls).  A result
 * that is already "failed" stays failed: its lack of effect was proven by
 * other means; only its text is withheld.
 */
void aur__call_result_budget(const struct aur__app *app,
                             struct aur_tool_output *out)
{
    int64_t max = app->cfg->budgets.result_bytes;
    size_t len = out->content ? out->content_len : 0;
    char *text = NULL;
    int n;

    if ((int64_t)len <= max)
        return;
    if (out->status == AUR_CALL_FAILED)
        n = asprintf(&text, "MCP tool failed; its error text (%zu bytes) is "
                     "over max_result_bytes = %lld and is withheld",
                     len, (long long)max);
    else
        n = asprintf(&text, "MCP tool result (%zu bytes) is over "
                     "max_result_bytes = %lld and is withheld; the effect "
                     "of the call cannot be confirmed",
                     len, (long long)max);
    if (out->status != AUR_CALL_FAILED)
        out->status = AUR_CALL_UNKNOWN;
    free(out->content);
    out->content = n >= 0 ? text : NULL;
    if (!out->content)
        out->content = strdup("MCP tool result is over max_result_bytes");
    out->content_len = out->content ? strlen(out->content) : 0;
}
