#!/bin/sh
# A throwaway test CA and server certificates signed by it, for the HTTPS
# tests, benches and the conformance proxy (loopback only, valid 2 days).
#
#   mkcerts.sh DIR [NAME SAN]...
#
# Makes DIR/ca.pem (+ ca.key) unless it exists, then for each NAME SAN pair
# DIR/NAME.pem and DIR/NAME.key for subjectAltName SAN.  With no pair:
# srv for IP:127.0.0.1,DNS:localhost.  openssl's chatter goes to
# DIR/openssl.log; the exit status is openssl's.
set -e
dir=$1
shift
[ $# -gt 0 ] || set -- srv IP:127.0.0.1,DNS:localhost
cd "$dir"
exec >>openssl.log 2>&1
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
if [ ! -f ca.pem ]; then
    # shellcheck disable=SC2086
    openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 \
        -subj /CN=aur-test-ca -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign
fi
while [ $# -ge 2 ]; do
    printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\n%s\n%s\n' "$2" \
        keyUsage=digitalSignature extendedKeyUsage=serverAuth >"$1.cnf"
    # shellcheck disable=SC2086
    openssl req $ec -keyout "$1.key" -out "$1.csr" -subj "/CN=$1"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key \
        -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.cnf"
    shift 2
done
