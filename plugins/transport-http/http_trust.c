/*
 * http_trust.c - what an App with ca_file trusts: the system bundle and
 * ca_file, in one OpenSSL certificate store built once at open and handed
 * to every TLS connection of the App from curl's SSL context callback.
 *
 * Not CURLOPT_CAINFO = ca_file: that replaces the system bundle instead
 * of adding to it.  Not CURLOPT_CAINFO_BLOB (the system bundle and
 * ca_file concatenated, as before): libcurl copies a transfer's TLS
 * settings for every transfer and compares them with each cached
 * connection's to find one it may reuse, blob included, so a keep-alive
 * call paid a 220 KB malloc, memcpy and memcmp; and every new connection
 * parsed the bundle's ~140 certificates again (about 20 ms of CPU, two or
 * three times per App at startup).  With the callback curl compares no
 * blob and loads no file (CAINFO and CAPATH are NULL): the system bundle
 * is parsed once per process, and each connection only takes a reference
 * to the App's store.
 */
#define _GNU_SOURCE
#include "http_int.h"

#include <limits.h>
#include <pthread.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#define SYSTEM_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

static pthread_once_t system_once = PTHREAD_ONCE_INIT;
static STACK_OF(X509_INFO) *system_certs; /* never freed: see below */

/* PEM certificates and CRLs of a memory buffer or a file. */
static STACK_OF(X509_INFO) *read_pem(BIO *b)
{
    STACK_OF(X509_INFO) *sk = b ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL)
                                : NULL;
    BIO_free(b);
    ERR_clear_error(); /* the end of the input reads as an error */
    return sk;
}

/* Verification fills in each certificate's cache of its extensions (key
 * identifiers, constraints, purposes) on first use, and the certificates
 * of a store are shared by every TLS connection of the App, each on a
 * thread of its own.  Filled in here, before any connection can see
 * them, they are only read afterwards.  (CI's ThreadSanitizer run once
 * saw two first handshakes at once race on the test CA's key identifier,
 * inside OpenSSL.)  X509_check_purpose with -1 only fills the cache. */
static void fill_caches(STACK_OF(X509_INFO) *sk)
{
    for (int i = 0; sk && i < sk_X509_INFO_num(sk); i++) {
        X509_INFO *in = sk_X509_INFO_value(sk, i);
        if (in->x509)
            (void)X509_check_purpose(in->x509, -1, 0);
    }
    ERR_clear_error(); /* a certificate it cannot use fails later, named */
}

/* Once per process; this module is never unloaded (http_front.c), so
 * the parsed bundle lives as long as the process.  A system without the
 * bundle trusts ca_file alone, as it did before. */
static void load_system(void)
{
    system_certs = read_pem(BIO_new_file(SYSTEM_BUNDLE, "r"));
    fill_caches(system_certs);
}

static bool add_all(X509_STORE *s, STACK_OF(X509_INFO) *sk)
{
    for (int i = 0; sk && i < sk_X509_INFO_num(sk); i++) {
        X509_INFO *in = sk_X509_INFO_value(sk, i);
        if ((in->x509 && !X509_STORE_add_cert(s, in->x509)) ||
            (in->crl && !X509_STORE_add_crl(s, in->crl)))
            return false;
    }
    return true;
}

void *http_trust_new(const char *pem, size_t len)
{
    STACK_OF(X509_INFO) *own;
    X509_STORE *s;
    bool ok;

    if (len > INT_MAX)
        return NULL;
    pthread_once(&system_once, load_system);
    own = read_pem(BIO_new_mem_buf(pem, (int)len));
    fill_caches(own);
    s = X509_STORE_new();
    /* What curl sets on the store it would have filled itself. */
    ok = s && X509_STORE_set_flags(s, X509_V_FLAG_PARTIAL_CHAIN |
                                          X509_V_FLAG_TRUSTED_FIRST) &&
         add_all(s, system_certs) && add_all(s, own);
    sk_X509_INFO_pop_free(own, X509_INFO_free);
    ERR_clear_error(); /* a duplicate certificate is not a failure */
    if (!ok) {
        X509_STORE_free(s);
        return NULL;
    }
    return s;
}

void http_trust_free(void *store)
{
    X509_STORE_free(store);
}

CURLcode http_trust_ctx(CURL *e, void *ssl_ctx, void *store)
{
    (void)e;
    SSL_CTX_set1_cert_store(ssl_ctx, store); /* a reference, no copy */
    return CURLE_OK;
}
