/*
 * check_transport_stdio_cork.c - ABI 1.6 cork: requests a thread sends
 * while it corks a connection are held and written together when it
 * uncorks; every held request that is not written whole ends through the
 * sink's on_request_end, "not delivered" exactly when none of its bytes
 * reached the App's stdin.  The byte count the App's pipe holds is the
 * truth each end is checked against.
 */
#define _GNU_SOURCE
#include "fixtures/stdio_host.h"

#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

Suite *stdio_cork_suite(void);

/* {"jsonrpc":"2.0","id":ID,"method":"x","params":{"pad":"ppp"}} with the
 * line's length near len (at least the head): the shape the core sends. */
static char *request(int id, size_t len, size_t *out_len)
{
    char head[96];
    int hn = snprintf(head, sizeof head,
                      "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"x\","
                      "\"params\":{\"pad\":\"", id);
    size_t pad = len > (size_t)hn + 4 ? len - (size_t)hn - 4 : 0;
    char *s = malloc((size_t)hn + pad + 5);

    ck_assert_ptr_nonnull(s);
    memcpy(s, head, (size_t)hn);
    memset(s + hn, 'p', pad);
    memcpy(s + hn + pad, "\"}}", 4);
    *out_len = (size_t)hn + pad + 3;
    return s;
}

static void send_req(struct aur_conn *c, int id, size_t len, int64_t dl,
                     size_t *out_len)
{
    struct aur_error err;
    size_t n;
    char *s = request(id, len, &n);

    ck_assert_int_eq(OPS->send_text(c, s, n, dl, &err), AUR_OK);
    free(s);
    if (out_len)
        *out_len = n;
}

static int id_of(struct json_object *m)
{
    struct json_object *v;
    return json_object_object_get_ex(m, "id", &v) ? json_object_get_int(v)
                                                  : -1;
}

/* The request end recorded for a message, or NULL. */
static struct json_object *end_of(struct json_object *m)
{
    struct json_object *e;
    return json_object_object_get_ex(m, "_end", &e) ? e : NULL;
}

static bool end_delivered(struct json_object *e)
{
    struct json_object *d;
    return json_object_object_get_ex(e, "delivered", &d) &&
           json_object_get_boolean(d);
}

/* A connection to stdio_child in mode, its hello read (*h, optional). */
static struct aur_conn *open_child(const char *mode, struct hello *h)
{
    struct aur_conn *c;
    struct hello got;

    up();
    ep_child(mode, NULL);
    c = open_ok();
    got = wait_hello();
    if (h)
        *h = got;
    return c;
}

/* The next message is the App's echo of request id. */
static void expect_echo(int id)
{
    struct json_object *m = next_msg(3000);

    ck_assert_ptr_nonnull(m);
    ck_assert_ptr_null(end_of(m));
    ck_assert_int_eq(id_of(m), id);
    json_object_put(m);
}

/* Held requests are not written before the uncork, then all of them in
 * the order sent. */
START_TEST(test_cork_holds_then_writes_in_order)
{
    struct json_object *m;
    struct aur_conn *c;

    c = open_child("echo", NULL);
    OPS->cork(c, 1);
    for (int i = 1; i <= 5; i++)
        send_req(c, i, 200, t_now() + 5000, NULL);
    /* The echo child would have sent the first back by now. */
    m = next_msg(300);
    ck_assert_msg(m == NULL, "a held request reached the App");
    OPS->cork(c, 0);
    for (int i = 1; i <= 5; i++)
        expect_echo(i);
    /* Uncorked: the next request goes at once. */
    send_req(c, 6, 100, t_now() + 5000, NULL);
    expect_echo(6);
    OPS->close(c, t_now() + 3000);
}
END_TEST

struct other {
    struct aur_conn *c;
    int rc;
};

static void *other_main(void *arg)
{
    struct other *o = arg;
    struct aur_error err;
    size_t n;
    char *s = request(9, 100, &n);

    o->rc = OPS->send_text(o->c, s, n, t_now() + 5000, &err);
    free(s);
    return NULL;
}

/* A thread that does not cork writes at once, and what another thread
 * holds goes first: requests keep the order they were accepted in.  A
 * message without an integer id is never held, and takes what is held
 * with it. */
START_TEST(test_cork_other_writers_take_held_first)
{
    struct json_object *m;
    struct aur_conn *c;
    struct aur_error err;
    struct other o;
    pthread_t t;
    static const char note[] =
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}";

    c = open_child("echo", NULL);
    OPS->cork(c, 1);
    send_req(c, 1, 100, t_now() + 5000, NULL);
    o.c = c;
    ck_assert_int_eq(pthread_create(&t, NULL, other_main, &o), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(o.rc, AUR_OK);
    expect_echo(1);
    expect_echo(9);
    /* Still corked: held again, then a notification takes it along. */
    send_req(c, 2, 100, t_now() + 5000, NULL);
    ck_assert_ptr_null(next_msg(200));
    ck_assert_int_eq(OPS->send_text(c, note, sizeof note - 1,
                                    t_now() + 5000, &err),
                     AUR_OK);
    expect_echo(2);
    m = next_msg(3000);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(method_of(m), "notifications/x");
    json_object_put(m);
    OPS->cork(c, 0);
    ck_assert_ptr_null(next_msg(200)); /* nothing was left to write */
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* The App closed its stdin: no byte of any held request left, and each
 * ends "not delivered", once. */
START_TEST(test_cork_stdin_closed_not_delivered)
{
    struct json_object *m;
    struct aur_conn *c;
    int seen[4] = {0};

    c = open_child("closed-stdin", NULL);
    OPS->cork(c, 1);
    for (int i = 1; i <= 3; i++)
        send_req(c, i, 300, t_now() + 5000, NULL);
    OPS->cork(c, 0);
    for (int k = 0; k < 3; k++) {
        struct json_object *e;
        m = next_msg(3000);
        ck_assert_ptr_nonnull(m);
        e = end_of(m);
        ck_assert_ptr_nonnull(e);
        ck_assert(!end_delivered(e));
        ck_assert_int_ge(id_of(m), 1);
        ck_assert_int_le(id_of(m), 3);
        seen[id_of(m)]++;
        json_object_put(m);
    }
    ck_assert(seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
    ck_assert_ptr_null(next_msg(200));
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* The bytes the App's stdin pipe holds (it never reads), or its size. */
static long pipe_in(long pid, bool size)
{
    char path[64];
    int fd, q = -1;

    snprintf(path, sizeof path, "/proc/%ld/fd/0", pid);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (size)
        q = fcntl(fd, F_GETPIPE_SZ);
    else if (ioctl(fd, FIONREAD, &q) != 0)
        q = -1;
    close(fd);
    return q;
}

/* Whether (bounded) the App's stdin pipe takes no more: within a page of
 * its size (a short write before may hold a page of its own) and not
 * growing for 100 ms, so a writer waits. */
static bool pipe_full(long pid, int ms)
{
    int64_t until = t_now() + ms;
    long size = pipe_in(pid, true), q = -1, last;

    do {
        last = q;
        sleep_ms(100);
        q = pipe_in(pid, false);
    } while ((q < size - 4096 || q != last) && t_now() < until);
    return size > 0 && q >= size - 4096 && q == last;
}

/* An App that stops reading with its pipe nearly full: the uncork writes
 * what fits until the held deadline.  Requests wholly in the pipe have no
 * end; the one the pipe cut has an end "delivered"; every later one an
 * end "not delivered"; and the pipe's own count says where the cut is. */
START_TEST(test_cork_partial_write_ends_exactly)
{
    struct aur_conn *c;
    struct hello h;
    size_t len[6], first, cut;
    long q0, q;
    int ended[6] = {0}, delivered[6] = {0};
    struct json_object *m;
    int64_t t0;

    c = open_child("noread", &h);
    /* Fill the pipe to a little under its size with one plain request. */
    ck_assert_int_gt(pipe_in(h.pid, true), 8192);
    send_req(c, 100, (size_t)pipe_in(h.pid, true) - 3000, t_now() + 3000,
             &first);
    q0 = pipe_in(h.pid, false);
    ck_assert_int_eq(q0, (long)first + 1);
    OPS->cork(c, 1);
    for (int i = 0; i < 6; i++)
        send_req(c, i, 1500, t_now() + 400, &len[i]);
    t0 = t_now();
    OPS->cork(c, 0); /* writes what fits, then waits out the deadline */
    ck_assert_int_ge(t_now() - t0, 300);
    q = pipe_in(h.pid, false);
    ck_assert_int_gt(q, q0); /* some of it fitted */
    cut = (size_t)(q - q0);  /* held bytes in the pipe */
    ck_assert_uint_lt(cut, 6 * 1501);
    while ((m = next_msg(300))) {
        struct json_object *e = end_of(m);
        int id = id_of(m);
        ck_assert_ptr_nonnull(e);
        ck_assert(id >= 0 && id < 6);
        ended[id]++;
        delivered[id] = end_delivered(e);
        json_object_put(m);
    }
    size_t start = 0;
    for (int i = 0; i < 6; start += len[i] + 1, i++) {
        if (start + len[i] + 1 <= cut) {
            ck_assert_msg(!ended[i], "request %d is in the pipe whole", i);
        } else {
            ck_assert_msg(ended[i] == 1, "request %d ended %d times", i,
                          ended[i]);
            ck_assert_msg(delivered[i] == (start < cut),
                          "request %d: delivered %d, %zu of its bytes left",
                          i, delivered[i], start < cut ? cut - start : 0);
        }
    }
    OPS->close(c, t_now() + 3000);
}
END_TEST

/* AUR_CORK_TRY to an App that does not read: what is held is written
 * at once while the pipe is empty, and else nothing is written and
 * nothing waits (with bytes queued, the kernel may find the pipe full
 * for a write much smaller than its free bytes); the uncork then writes
 * what it can. */
static void *uncork_elsewhere(void *c)
{
    OPS->cork(c, AUR_CORK_TRY);
    OPS->cork(c, AUR_CORK_OFF);
    return NULL;
}

START_TEST(test_cork_try_writes_only_what_fits)
{
    pthread_t t;
    struct aur_conn *c;
    struct hello h;
    size_t n, held = 0;
    long q1;
    int64_t t0;

    c = open_child("noread", &h);
    ck_assert_int_ge(pipe_in(h.pid, true), 65536);
    ck_assert_int_eq(pipe_in(h.pid, false), 0);
    /* An empty pipe: 4.5 KB held goes in, without a wait. */
    OPS->cork(c, AUR_CORK_ON);
    for (int i = 0; i < 3; i++, held += n + 1)
        send_req(c, i, 1500, t_now() + 3000, &n);
    ck_assert_int_eq(pipe_in(h.pid, false), 0);
    t0 = t_now();
    OPS->cork(c, AUR_CORK_TRY);
    ck_assert_int_lt(t_now() - t0, 200);
    q1 = pipe_in(h.pid, false);
    ck_assert_int_eq(q1, (long)held);
    OPS->cork(c, AUR_CORK_OFF); /* nothing left */
    ck_assert_ptr_null(next_msg(100));
    /* Bytes queued: nothing moves, nothing waits, however small. */
    OPS->cork(c, AUR_CORK_ON);
    send_req(c, 3, 100, t_now() + 3000, NULL);
    t0 = t_now();
    OPS->cork(c, AUR_CORK_TRY);
    ck_assert_int_lt(t_now() - t0, 200);
    ck_assert_int_eq(pipe_in(h.pid, false), q1);
    /* A thread that did not cork c uncorks nothing. */
    ck_assert_int_eq(pthread_create(&t, NULL, uncork_elsewhere, c), 0);
    pthread_join(t, NULL);
    ck_assert_int_eq(pipe_in(h.pid, false), q1);
    OPS->cork(c, AUR_CORK_OFF); /* room enough: written */
    ck_assert_int_gt(pipe_in(h.pid, false), q1);
    ck_assert_ptr_null(next_msg(100));
    OPS->close(c, t_now() + 3000);
}
END_TEST

struct big_sender {
    struct aur_conn *c;
    int rc;
};

static void *big_main(void *arg)
{
    struct big_sender *b = arg;
    struct aur_error err;
    size_t n;
    char *s = request(50, 4 << 20, &n);

    b->rc = OPS->send_text(b->c, s, n, t_now() + 2500, &err);
    free(s);
    return NULL;
}

/* Another thread's send wrote what this thread held, and then waits on a
 * full pipe with the token: the uncork has nothing left to write and
 * returns at once, not when that send lets go. */
START_TEST(test_uncork_after_another_wrote_it)
{
    struct big_sender b;
    struct hello h;
    pthread_t t;
    int64_t t0;

    b.c = open_child("noread", &h);
    OPS->cork(b.c, 1);
    send_req(b.c, 1, 100, t_now() + 5000, NULL);
    ck_assert_int_eq(pthread_create(&t, NULL, big_main, &b), 0);
    ck_assert(pipe_full(h.pid, 3000)); /* its write waits */
    t0 = t_now();
    OPS->cork(b.c, 0);
    ck_assert_int_lt(t_now() - t0, 1000);
    pthread_join(t, NULL);
    ck_assert_int_eq(b.rc, AUR_E_TIMEOUT); /* part of it left */
    /* Request 1 went out whole, ahead of the big one: no end for it. */
    ck_assert_ptr_null(next_msg(200));
    OPS->close(b.c, t_now() + 3000);
}
END_TEST

/* A request longer than a held one may be, or than what is left of the
 * room, is written at once, after what is held. */
START_TEST(test_cork_big_request_not_held)
{
    struct aur_conn *c;

    c = open_child("echo", NULL);
    OPS->cork(c, 1);
    send_req(c, 1, 100, t_now() + 5000, NULL);
    send_req(c, 2, 70000, t_now() + 5000, NULL);
    expect_echo(1);
    expect_echo(2);
    OPS->cork(c, 0);
    OPS->close(c, t_now() + 3000);
}
END_TEST

Suite *stdio_cork_suite(void)
{
    Suite *s = suite_create("transport_stdio_cork");
    TCase *t = stdio_tcase(s, "cork");

    tcase_add_test(t, test_cork_holds_then_writes_in_order);
    tcase_add_test(t, test_cork_other_writers_take_held_first);
    tcase_add_test(t, test_cork_stdin_closed_not_delivered);
    tcase_add_test(t, test_cork_partial_write_ends_exactly);
    tcase_add_test(t, test_cork_big_request_not_held);
    tcase_add_test(t, test_uncork_after_another_wrote_it);
    tcase_add_test(t, test_cork_try_writes_only_what_fits);
    return s;
}
