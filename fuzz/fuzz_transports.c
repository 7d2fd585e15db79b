/*
 * fuzz_transports.c - the App-file rules of transport-stdio and
 * transport-http (their *_config.c, compiled in) as config-loader defs,
 * for fuzz_config: what a config promises includes each transport's own
 * check.  The plugins are not loaded (a libFuzzer build has no plugin
 * directory); their state holds only the host vtable the checks read.
 * This file has the stdio half; fuzz_transports_http.c the other (each
 * transport's private header in its own file).
 */
#define _GNU_SOURCE
#include "stdio_int.h"

#include "config.h"
#include "fuzz_transports.h"

static int64_t f_now(void) { return 0; }

struct aur_host fuzz_host = {
    .struct_size = sizeof fuzz_host,
    .abi_version = AUR_ABI_VERSION,
    .now_ms = f_now,
};

const struct aur__transport_def *fuzz_transports(size_t *n)
{
    static struct stdio_state st;
    static struct aur__transport_def defs[2];
    static const struct aur_transport_ops ops = {
        .struct_size = sizeof ops,
        .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_CHILD_PROCESS |
                AUR_TCAP_STREAM,
        .words = stdio_words,
        .section = "stdio",
        .keys = stdio_keys,
        .check = stdio_check,
    };

    aur__cfg_services(&fuzz_host);
    st.host = &fuzz_host;
    aur__transport_def_init(&defs[0], "transport-stdio", &ops, &st);
    fuzz_transport_http(&defs[1]);
    *n = 2;
    return defs;
}
