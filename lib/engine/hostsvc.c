/*
 * hostsvc.c - the struct aur_host vtable handed to plugins, and the world
 * writer behind it (the journal, or the runtime's own).
 */
#include "aur_setup.h"

#include "clock.h"
#include "engine.h"
#include "journal.h"
#include "journal_backend.h"
#include "jsonx.h"
#include "log.h"

#include <stdarg.h>

static void host_log(struct aur_self *self, int level, const char *fmt, ...)
    AUR_PRINTF(3, 4);
static void host_log(struct aur_self *self, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    aur__vlog(self && self->mcp ? self->mcp->log : NULL, level,
              self ? self->tag : "plugin", fmt, ap);
    va_end(ap);
}

static int host_world_write(struct aur_self *self, const struct aur_commit *c,
                            struct aur_error *err)
{
    if (!self || !self->mcp)
        return aur_fail(err, AUR_E_STATE, 0, "no world writer");
    return aur__world_append(self->mcp, c, err);
}

static int host_json_parse(const char *buf, size_t len,
                           struct json_object **out, struct aur_error *err)
{
    return aur__json_parse(buf, len, AUR__JSON_MAX_DEPTH, out, err);
}

/*
 * A journal's backend has no log of its own, so the writes that notice a
 * change of its connection log it: once per change, whichever thread
 * sees it first ("lost", with the backend's last error, and "back").
 * The state read is a copy under the journal's lock, once per write or
 * batch.
 */
static void journal_watch(struct aur_mcp *mcp)
{
    struct aur__jstate st;
    const char *was;
    uint64_t back;

    aur__journal_state(mcp->journal, &st);
    if (!st.state)
        return;
    pthread_mutex_lock(&mcp->jwatch_mu);
    was = mcp->jwatch_state;
    back = st.reconnects - mcp->jwatch_reconnects;
    mcp->jwatch_state = st.state;
    mcp->jwatch_reconnects = st.reconnects;
    pthread_mutex_unlock(&mcp->jwatch_mu);
    if (back)
        aur__log(mcp->log, AUR_LOG_WARN, "journal",
                 "%s: reconnected (%llu reconnects in all; it was lost: %s)",
                 st.target, (unsigned long long)st.reconnects,
                 st.last_error[0] ? st.last_error : "unknown");
    if (strcmp(was ? was : "connected", st.state) != 0 &&
        strcmp(st.state, "connected") != 0 && strcmp(st.state, "open") != 0)
        aur__log(mcp->log, AUR_LOG_WARN, "journal",
                 "%s: %s for %lld ms, writes wait up to journal_wait_ms: %s",
                 st.target, st.state, (long long)st.down_ms, st.last_error);
}

int aur__world_append(struct aur_mcp *mcp, const struct aur_commit *c,
                      struct aur_error *err)
{
    int rc;
    if (mcp->have_writer)
        return mcp->writer.append(mcp->writer.ud, c, err);
    if (!mcp->journal)
        return aur_fail(err, AUR_E_STATE, 0, "the world journal is not open");
    rc = aur__journal_append(mcp->journal, c, NULL, NULL, err);
    journal_watch(mcp);
    return rc;
}

int aur__world_append_batch(struct aur_mcp *mcp,
                            const struct aur_commit *const *v, size_t n,
                            int *results, struct aur_error *err)
{
    int rc;

    /* Only the journal batches: with a runtime writer (which cannot tell
     * "present" from "written") the service is not offered at all. */
    if (!mcp || !mcp->journal) {
        rc = aur_fail(err, AUR_E_STATE, 0, "the world journal is not open");
        for (size_t i = 0; i < n; i++)
            results[i] = rc;
        return rc;
    }
    rc = aur__journal_append_batch(mcp->journal, v, n, results, err);
    journal_watch(mcp);
    return rc;
}

static int host_world_write_batch(struct aur_self *self,
                                  const struct aur_commit *const *v, size_t n,
                                  int *results, struct aur_error *err)
{
    if (n && (!v || !results))
        return aur_fail(err, AUR_E_INVAL, 0, "world write: bad arguments");
    return aur__world_append_batch(self ? self->mcp : NULL, v, n, results,
                                   err);
}

void aur__host_vtable_init(struct aur_mcp *mcp)
{
    struct aur_host *h = &mcp->host;
    memset(h, 0, sizeof *h);
    h->struct_size = sizeof *h;
    h->abi_version = AUR_ABI_VERSION;
    h->log = host_log;
    h->now_ms = aur__now_ms;
    aur__cfg_services(h);
    h->world_write = host_world_write;
    h->json_parse = host_json_parse;
    h->json_integer_text = aur__json_integer_text;
    h->world_write_batch = host_world_write_batch;
}
