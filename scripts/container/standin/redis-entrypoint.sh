#!/bin/sh
# Stand-in for the official redis image's entrypoint: `redis-server [options]` runs as user redis in
# /data, listening on every interface on 6379 with protected mode off (the official image is built
# with that default), as PID 1.
set -eu
if [ "${1:-}" = redis-server ] || [ "${1#-}" != "${1:-}" ]; then
  [ "$1" = redis-server ] && shift
  if [ "$(id -u)" = 0 ]; then chown -R redis:redis /data; fi
  exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no --bind '* -::*' --dir /data "$@"
fi
exec "$@"
