#!/bin/sh
# A throwaway PostgreSQL for tests: loopback TCP and a unix socket, no
# fsync, nothing installed or changed outside DIR (but see "reaching DIR").
#
#   pg.sh start DIR [--tls CERTDIR] [--password PW]
#       Make a cluster in DIR/data (first start only) and start it on a
#       free port of 127.0.0.1 (another is picked if the port is taken)
#       and on a unix socket in DIR.  Role "aurora" (with password PW when
#       given) owns database "aurora".  TCP needs scram-sha-256 with
#       --password, else trust; the socket is trust.  --tls: ssl=on with a
#       server certificate from mkcerts.sh, CA at CERTDIR/ca.pem.  Prints
#       postgresql://aurora@127.0.0.1:PORT/aurora and writes it to DIR/uri
#       (the port to DIR/port).  A later start reuses the cluster and its
#       settings; starting a running server just prints its URI.
#   pg.sh stop DIR       immediate shutdown (crash-like); removes nothing
#   pg.sh restart DIR    fast shutdown (sessions are terminated), then
#                        start again on the same port
#   pg.sh psql DIR SQL [DB]
#       Run SQL as the superuser "postgres" over the socket (database
#       aurora unless DB), print the rows unaligned.
#
# Run as root (CI), the server runs as the user postgres (runuser), DIR is
# given to it, and each directory above DIR that postgres cannot search
# gets o+x (said on stderr).  Run as anyone else, it runs as that user.
# AUR_PG_OWNER=PID: a watcher stops the server when PID exits, so a test
# that is killed leaves no server behind.  Every wait is bounded (pg_ctl
# -t 30).  Exit status 77: no PostgreSQL server binaries found.
set -eu

usage() {
    echo "usage: pg.sh start DIR [--tls CERTDIR] [--password PW]" >&2
    echo "       pg.sh stop|restart DIR | pg.sh psql DIR SQL [DB]" >&2
    exit 2
}

die() {
    echo "pg.sh: $*" >&2
    exit 1
}

[ $# -ge 2 ] || usage
cmd=$1
[ -d "$2" ] || die "no directory $2"
dir=$(cd "$2" && pwd)
shift 2
here=$(cd "$(dirname "$0")" && pwd)
cd /

# The newest server's binaries: Debian keeps them off PATH.
bin=${PG_BINDIR:-}
if [ -z "$bin" ]; then
    # shellcheck disable=SC2012 # version-sorted, and the names are ours
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ]; then
            bin=$d
            break
        fi
    done
fi
if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then
    bin=$(dirname "$(command -v initdb)")
fi
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ]; then
    echo "pg.sh: no PostgreSQL server binaries (initdb, pg_ctl)" >&2
    exit 77
fi

if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "running as root needs the user postgres"
    as_pg() { runuser -u postgres -- "$@"; }
else
    as_pg() { "$@"; }
fi

data=$dir/data
pgctl() { as_pg "$bin/pg_ctl" -D "$data" "$@"; }
running() { pgctl status >/dev/null 2>&1; }
port() { cat "$dir/port"; }
psql_super() { # DB, then psql's own arguments
    db=$1
    shift
    as_pg "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$(port)" \
        -U postgres -d "$db" "$@"
}

uri() {
    u="postgresql://aurora@127.0.0.1:$(port)/aurora"
    echo "$u" >"$dir/uri"
    echo "$u"
}

random_port() {
    n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
    echo $((20000 + n % 30000))
}

# Settings that may change between starts (the port) live in their own
# file, included from postgresql.conf.
write_conf() {
    {
        echo "listen_addresses = '127.0.0.1'"
        echo "port = $1"
        echo "unix_socket_directories = '$dir'"
        echo "fsync = off"
        echo "full_page_writes = off"
        echo "max_connections = 60"
        echo "password_encryption = 'scram-sha-256'"
        if [ -f "$dir/server.pem" ]; then
            echo "ssl = on"
            echo "ssl_cert_file = '$dir/server.pem'"
            echo "ssl_key_file = '$dir/server.key'"
        fi
    } >"$data/aurora.conf"
    [ "$(id -u)" != 0 ] || chown postgres "$data/aurora.conf"
    echo "$1" >"$dir/port"
}

# Start, moving to another port while the one chosen is taken.
start_server() {
    tries=0
    while :; do
        if pgctl -l "$dir/log" -w -t 30 start >/dev/null 2>&1; then
            return 0
        fi
        tries=$((tries + 1))
        if [ $tries -ge 10 ] || ! grep -q "could not bind\|could not create any TCP/IP sockets\|Address already in use" "$dir/log"; then
            tail -n 20 "$dir/log" >&2 || true
            die "the server did not start (log: $dir/log)"
        fi
        write_conf "$(random_port)"
    done
}

watch_owner() {
    [ -n "${AUR_PG_OWNER:-}" ] || return 0
    (
        while kill -0 "$AUR_PG_OWNER" 2>/dev/null; do
            sleep 1
        done
        if [ -f "$data/postmaster.pid" ]; then
            pgctl -m immediate -w -t 30 stop
        fi
    ) </dev/null >/dev/null 2>&1 &
}

# The server user must search every directory down to DIR.
reach() {
    [ "$(id -u)" = 0 ] || return 0
    chown postgres "$dir"
    chmod 700 "$dir"
    p=$dir
    while [ "$p" != / ]; do
        p=$(dirname "$p")
        if ! runuser -u postgres -- test -x "$p"; then
            chmod o+x "$p"
            echo "pg.sh: chmod o+x $p (postgres must reach $dir)" >&2
        fi
    done
}

start() {
    tls=''
    pw=''
    has_pw=0
    while [ $# -gt 0 ]; do
        case $1 in
        --tls) [ $# -ge 2 ] || usage; tls=$2; shift 2 ;;
        --password) [ $# -ge 2 ] || usage; pw=$2; has_pw=1; shift 2 ;;
        *) usage ;;
        esac
    done
    if [ -f "$data/PG_VERSION" ]; then
        if ! running; then
            start_server
            watch_owner
        fi
        uri
        return 0
    fi
    # the socket's path must fit a sockaddr_un
    [ ${#dir} -le 90 ] || die "$dir is too long for a unix socket path"
    reach
    if [ -n "$tls" ]; then
        [ -f "$tls/srv.pem" ] || sh "$here/mkcerts.sh" "$tls" ||
            die "mkcerts.sh failed (see $tls/openssl.log)"
        cp "$tls/srv.pem" "$dir/server.pem"
        cp "$tls/srv.key" "$dir/server.key"
        chmod 600 "$dir/server.key"
        [ "$(id -u)" != 0 ] || chown postgres "$dir/server.pem" "$dir/server.key"
    fi
    as_pg "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 \
        --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        as_pg "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 \
            --locale=C >"$dir/initdb.log" 2>&1 ||
        { tail -n 20 "$dir/initdb.log" >&2; die "initdb failed"; }
    echo "include = 'aurora.conf'" >>"$data/postgresql.conf"
    if [ $has_pw = 1 ]; then method=scram-sha-256; else method=trust; fi
    {
        echo "local all all trust"
        echo "host all all 127.0.0.1/32 $method"
    } >"$data/pg_hba.conf"
    write_conf "$(random_port)"
    start_server
    watch_owner
    if [ $has_pw = 1 ]; then
        # a psql variable, quoted by psql (:'pw'): any password is safe
        echo "CREATE ROLE aurora LOGIN PASSWORD :'pw';" |
            psql_super postgres -v pw="$pw" -f - >/dev/null
    else
        psql_super postgres -c "CREATE ROLE aurora LOGIN" >/dev/null
    fi
    psql_super postgres -c "CREATE DATABASE aurora OWNER aurora" >/dev/null
    uri
}

case $cmd in
start)
    start "$@"
    ;;
stop)
    [ -f "$data/PG_VERSION" ] || die "no cluster in $dir"
    if running; then
        pgctl -m immediate -w -t 30 stop >/dev/null
    fi
    ;;
restart)
    [ -f "$data/PG_VERSION" ] || die "no cluster in $dir"
    pgctl -l "$dir/log" -m fast -w -t 30 restart >/dev/null
    ;;
psql)
    [ $# -ge 1 ] || usage
    psql_super "${2:-aurora}" -At -c "$1"
    ;;
*)
    usage
    ;;
esac
