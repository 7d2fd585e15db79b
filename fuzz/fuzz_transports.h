/* fuzz_transports.h - transport-stdio's and transport-http's App-file
 * rules as loader defs (fuzz_transports.c).  Static storage. */
#ifndef AUR_FUZZ_TRANSPORTS_H
#define AUR_FUZZ_TRANSPORTS_H

#include "config.h"

const struct aur__transport_def *fuzz_transports(size_t *n);

/* Inside: the host vtable the checks see, and the HTTP half. */
extern struct aur_host fuzz_host;
void fuzz_transport_http(struct aur__transport_def *d);

#endif
