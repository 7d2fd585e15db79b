/*
 * fuzz_transports_http.c - transport-http's App-file rules as a loader
 * def (see fuzz_transports.c).
 */
#define _GNU_SOURCE
#include "http_int.h"

#include "config.h"
#include "fuzz_transports.h"

void fuzz_transport_http(struct aur__transport_def *d)
{
    static struct http_state st;
    static const struct aur_transport_ops ops = {
        .struct_size = sizeof ops,
        .caps = AUR_TCAP_SERVER_PUSH | AUR_TCAP_SESSION,
        .words = http_words,
        .section = "http",
        .keys = http_keys,
        .check = http_check,
    };

    st.host = &fuzz_host;
    aur__transport_def_init(d, "transport-http", &ops, &st);
}
