/*
 * call_reply.h - the MCP tools/call reply read without a tree, which the
 * engine hands the JSON-RPC layer as its reply_scan (rpc.h).  Pure,
 * thread-safe.
 */
#ifndef AUR_CALL_REPLY_H
#define AUR_CALL_REPLY_H

#include "aur_setup.h"

/*
 * The reply to a tools/call read straight from its text,
 * when it is a success response of the common shape (integer id, result
 * with text blocks only, isError absent or false, no structuredContent,
 * resultType absent or "complete").  Then *id is the id and *text
 * (transfer, *text_len bytes plus a NUL) the non-blank texts joined by
 * "\n", "" when there are none: what map_result makes of the same reply.
 * false (nothing allocated): not that shape; the general path decides.
 */
bool aur__call_reply_scan(const char *buf, size_t len, int64_t *id,
                          char **text, size_t *text_len);

#endif
