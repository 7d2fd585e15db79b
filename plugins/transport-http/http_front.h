/*
 * http_front.h - what transport-http.so (the front, no libcurl) and
 * transport-http-libcurl.so (the backend) share: the plugin state and
 * the backend's one entry point (http_front.c says why there are two).
 * Threads: the state is read-only after init.
 */
#ifndef HTTP_FRONT_H
#define HTTP_FRONT_H

#include <aurora/aur_plugin.h>

#include <stddef.h>

/* Settings from [transport-http], made by the front's init (read-only
 * afterwards); the backend's open, check and preflight get it as their
 * state. */
struct http_state {
    const struct aur_host *host;
    struct aur_self *self;
    size_t max_body;    /* max_body_bytes: one JSON body, one request */
    size_t max_event;   /* max_event_bytes: one SSE event */
    int max_workers;    /* max_concurrent: request/notification POSTs */
    size_t max_queued;  /* max_queued: POSTs waiting for a worker */
};

/* `transport =` words and the [http] keys (http_keys.c). */
extern const char *const http_words[];
extern const struct aur_cfg_key http_keys[];

/* The backend module's file, next to the front's, and its entry: the
 * transport's operations once libcurl is initialised, or NULL when
 * curl_global_init failed.  Called once per process. */
#define HTTP_BACKEND_FILE "transport-http-libcurl.so"
#define HTTP_BACKEND_ENTRY "aur_http_backend_entry"
typedef const struct aur_transport_ops *http_backend_entry_fn(void);
http_backend_entry_fn aur_http_backend_entry;

#endif
