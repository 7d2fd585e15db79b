/*
 * rfc3339.h - RFC 3339 date-times in, one stored UTC form out, written
 * once for the journal (commit times) and ext-world-events (event times).
 * The stored form is "YYYY-MM-DDTHH:MM:SSZ", or with ".ffffff" when the
 * microseconds are not zero: what Python's datetime.isoformat() writes
 * for a UTC time, so stored times compare as text.  Compiled into each
 * binary that uses it, never exported.  Pure functions; thread-safe.
 */
#ifndef AURX_RFC3339_H
#define AURX_RFC3339_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for the stored form and its NUL. */
#define AUR__UTC_SIZE 28

/*
 * date-time = full-date "T" full-time (RFC 3339 §5.6; "t" and "z" too,
 * per its note) in s[0..len), into out as UTC.  A numeric offset is
 * accepted (and applied) only with offsets, else only "Z".  At most
 * max_frac fraction digits (0: any number); they are kept to the
 * microsecond, as Python's datetime keeps them.  Refused, as by Python's
 * datetime: a leap second 60, a day the month does not have, a year
 * outside 0001..9999 before or after the shift to UTC.
 */
bool aur__rfc3339_utc(const char *s, size_t len, bool offsets, int max_frac,
                      char out[AUR__UTC_SIZE]);

/* The stored form of unix time secs + usec microseconds. */
void aur__utc_format(int64_t secs, long usec, char out[AUR__UTC_SIZE]);

#endif
