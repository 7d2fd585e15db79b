/*
 * we_int.h - ext-world-events internals shared by its two files:
 * we_plugin.c (descriptor, negotiation, sessions, commits) and
 * we_validate.c (the payload rules of aurora-semantics §8.2, §1.5-§1.7).
 *
 * Threads: every function here is pure (no globals) and reentrant.
 * Ownership: struct we_event only borrows from the payload it came from.
 */
#ifndef AUR_WE_INT_H
#define AUR_WE_INT_H

#include <aurora/aur_plugin.h>

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#define WE_CAP_KEY "org.aurorabot/world-events"
#define WE_METHOD_EVENT "notifications/org.aurorabot/world-events/event"
#define WE_METHOD_MESSAGE "notifications/message"
#define WE_LEGACY_LOGGER "aurora/event"

/* Holds "YYYY-MM-DDTHH:MM:SS.ffffffZ" (28 bytes); sized for what the
 * compiler can prove about the snprintf, not for what is written. */
#define WE_UTC_SIZE 128

/* A validated event.  Strings and data borrowed from the payload; data
 * is NULL when the payload had none (= {}). */
struct we_event {
    const char *event_id;
    const char *scope;
    const char *kind;
    const char *summary;
    struct json_object *data;
    char occurred_at[WE_UTC_SIZE]; /* converted to UTC */
};

/*
 * Validate payload (borrowed) strictly, in the order of §8.2/§8.4, and
 * fill *ev.  AUR_E_EVENT with err->msg naming the field (never a value)
 * on the first violation.
 */
int we_event_parse(struct json_object *payload, struct we_event *ev,
                   struct aur_error *err);

#endif /* AUR_WE_INT_H */
