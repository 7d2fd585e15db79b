/*
 * Scenario "kill": one App on aur-perturb-server --mode kill (either era)
 * that SIGKILLs itself at a moment chosen per seed around one tools/call:
 * before reading a byte of it, soon after the listing (whether or not the
 * call came yet), in the middle of reading it (a slow reader, a chosen
 * fraction of the line), after its effect, in the middle of its reply,
 * or after the whole reply (at once or a little later).  The arguments
 * are small (16 B), medium (2 KB) or larger than a pipe (64-300 KB), so
 * the host's write of the request may itself be cut short.  Before dying
 * the server logs how many bytes of the request it read and how much of
 * the reply it wrote (its log is the truth).
 *
 * Half the seeds make the call with aur_mcp_call_start (its outcome on
 * the thread that learns it), half with aur_mcp_call; half of the former
 * start it inside a batch (aur_mcp_batch_begin/end), so that its request
 * is held by transport-stdio and written at the batch's end (a request
 * larger than a held one may be is written at once).
 *
 * Invariant (docs/protocol.md, Calls): the call's outcome is `failed`
 * only if the server read zero bytes of that request, `succeeded` only if the full reply was
 * written (anything else is `unknown`); the call returns within its
 * timeout; no crash, no hang, no App process left behind.  Startup itself
 * may fail only when the server died right after the listing ("early").
 */
#define _GNU_SOURCE 1
#include "perturb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define PKG "org.pt.kill"

static const char *const modes[] = {"before",    "early",     "mid-read",
                                    "after-effect", "mid-reply",
                                    "after-reply"};

void pt_scen_kill(struct pt_run *r)
{
    bool modern = pt_chance(r, 50);
    const char *mode = modes[pt_below(r, 6)];
    unsigned extra = pt_below(r, 3), page_size = pt_below(r, 2), param = 0;
    size_t arg_len;
    switch (pt_below(r, 3)) {
    case 0:
        arg_len = 16;
        break;
    case 1:
        arg_len = 2000;
        break;
    default:
        arg_len = 65536 + pt_below(r, 240000);
        break;
    }
    /* Drawn last, so the draws before it are those of older seeds. */
    bool started;
    if (strcmp(mode, "mid-read") == 0)
        param = 1 + pt_below(r, 999); /* per mille of the line */
    else if (strcmp(mode, "early") == 0)
        param = pt_below(r, 3000); /* us after the last page */
    else if (strcmp(mode, "after-reply") == 0 && pt_chance(r, 50))
        param = pt_below(r, 2000); /* us after the reply */
    started = pt_chance(r, 50);
    bool batched = started && pt_chance(r, 50); /* drawn after the rest */
    char *server = pt_bin("bin/aur-perturb-server"), *logpath, *text;
    char seed[32], ts[16], pss[16], pms[16], kl[32], plan[256];
    const char *args[28], *sizeword;
    struct aur_startup_error serr = {.struct_size = sizeof serr};
    struct aur_mcp *h;
    int64_t ms;
    int rc;
    size_t n = 0;

    sizeword = arg_len <= 16 ? "small" : arg_len <= 2000 ? "medium" : "large";
    pt_mkconfig(r, "transport-stdio", NULL);
    logpath = pt_path(r, "server.log");
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)r->seed);
    snprintf(ts, sizeof ts, "%u", 1 + extra);
    snprintf(pss, sizeof pss, "%u", page_size);
    snprintf(pms, sizeof pms, "%u", param);
    /* a lower bound of the call line: the arguments are inside it */
    snprintf(kl, sizeof kl, "%zu", arg_len + 40);
    args[n++] = "--mode";
    args[n++] = "kill";
    args[n++] = "--era";
    args[n++] = modern ? "modern" : "legacy";
    args[n++] = "--seed";
    args[n++] = seed;
    args[n++] = "--log";
    args[n++] = logpath;
    args[n++] = "--tools";
    args[n++] = ts;
    args[n++] = "--page-size";
    args[n++] = pss;
    args[n++] = "--kill";
    args[n++] = mode;
    args[n++] = "--kill-param";
    args[n++] = pms;
    args[n++] = "--kill-len";
    args[n++] = kl;
    args[n] = NULL;
    pt_add_app(r, "a.ini", PKG, 10, NULL, server, args);
    snprintf(plan, sizeof plan, "%s kill=%s param=%u args=%zuB(%s) %s",
             modern ? "modern" : "legacy", mode, param, arg_len, sizeword,
             started ? (batched ? "call_start+batch" : "call_start")
                     : "call");

    rc = pt_start(r, &h, &serr, &ms);
    if (rc != AUR_OK) {
        if (strcmp(mode, "early") == 0)
            pt_allowed(r, "early-death-failed-startup", "[%s] %s in %s: %s",
                       plan, aur_rc_word(rc), serr.phase, serr.message);
        else
            pt_violation(r, "startup-failed", "[%s] %s in %s: %s", plan,
                         aur_rc_word(rc), serr.phase, serr.message);
        aur_mcp_destroy(h);
        pt_no_leftovers(r);
        goto out;
    }
    struct json_object *a = json_object_new_object();
    char *big = malloc(arg_len + 1);
    if (!big)
        exit(3);
    memset(big, 'x', arg_len);
    big[arg_len] = '\0';
    json_object_object_add(a, "text", json_object_new_string(big));
    free(big);
    struct aur_tool_output out = {.struct_size = sizeof out};
    int64_t t0 = pt_now_ms();
    if (started)
        pt_call_started(r, h, "aur.mcp." PKG ".effect", a, batched, &out);
    else
        aur_mcp_call_jsonc(h, "aur.mcp." PKG ".effect", a, -1, &out);
    int64_t took = pt_now_ms() - t0;
    json_object_put(a);
    enum aur_call_status status = out.status;
    char content[200];
    snprintf(content, sizeof content, "%s", out.content ? out.content : "");
    aur_tool_output_clear(&out);
    aur_mcp_destroy(h);
    if (started && pt_call_started_times() != 1)
        pt_violation(r, "call-start-callbacks", "[%s] the callback ran %d "
                     "times", plan, pt_call_started_times());
    bool clean = pt_no_leftovers(r);

    text = pt_slurp(logpath);
    char *died = text ? strstr(text, "died ") : NULL;
    char dmode[32] = "", reply[16] = "";
    unsigned long long read_bytes = 0;
    bool parsed = died && sscanf(died, "died %31s read %llu reply %15s", dmode,
                                 &read_bytes, reply) == 3;
    free(text);
    char facts[700];
    snprintf(facts, sizeof facts,
             "[%s] outcome %s after %lld ms (%s); server %s: read %llu "
             "bytes of the request, reply %s",
             plan, aur_call_status_word(status), (long long)took, content,
             parsed ? "died" : "did not die", read_bytes,
             parsed ? reply : "none");
    char cat[96];
    snprintf(cat, sizeof cat, "%s/%s%s:%s", mode, sizeword,
             batched ? "/batch" : started ? "/start" : "",
             aur_call_status_word(status));

    if (!parsed && strcmp(mode, "before") != 0) {
        /* only "before" may outlive a call that was never sent */
        pt_violation(r, "server-log", "%s: no death logged", facts);
    } else if (status == AUR_CALL_FAILED && read_bytes > 0) {
        char vcat[96];
        snprintf(vcat, sizeof vcat, "failed-after-read:%s/%s", mode, sizeword);
        pt_violation(r, vcat,
                     "%s: `failed` although the server read %llu byte(s) of "
                     "the request",
                     facts, read_bytes);
    } else if (status == AUR_CALL_SUCCEEDED && strcmp(reply, "full") != 0) {
        char vcat[96];
        snprintf(vcat, sizeof vcat, "succeeded-without-reply:%s", mode);
        pt_violation(r, vcat, "%s: `succeeded` without a full reply", facts);
    } else if (took > 10000 + 5000) {
        pt_violation(r, "call-too-slow", "%s: the call took longer than its "
                     "10 s timeout", facts);
    }
    if (clean)
        pt_ok(r, cat, "%s", facts);
out:
    free(server);
    free(logpath);
}
