#!/bin/sh
# Stand-in for the official postgres image's entrypoint, for what compose.yaml uses: POSTGRES_PASSWORD
# (required), POSTGRES_USER (default postgres), POSTGRES_DB (default: the user's name) and PGDATA. On
# an empty data directory it runs initdb with that superuser and password (scram-sha-256 over TCP,
# trust on the local socket) and creates the database; then it runs the server as PID 1, listening
# on every interface on 5432, as user postgres.
set -eu
if [ "${1:-postgres}" != postgres ]; then exec "$@"; fi
: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo 'Error: Database is uninitialized and superuser password is not specified (POSTGRES_PASSWORD).' >&2
    exit 1
  fi
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    echo "CREATE DATABASE \"$POSTGRES_DB\"" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo 'PostgreSQL init process complete; ready for start up.'
fi
shift
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
