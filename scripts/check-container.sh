#!/usr/bin/env bash
# Proves the container image, compose.yaml and deploy/kubernetes/ on this machine, with a Docker
# engine and no image registry (docs/deployment.md, "Checking the packaging"):
#   1. stand-ins for the base, postgres and redis images when the real ones are absent;
#   2. builds the image: size over its base, non-root user, labels, nothing but what runs;
#   3. runs it on SQLite with a volume and a read-only root filesystem: healthy, the CLI through
#      `docker exec`, a task end to end from this machine, `docker stop` exits 0 within the grace,
#      a new container on the same volume still has the task;
#   4. runs compose.yaml with two instances on PostgreSQL and Redis: a task submitted to one is
#      claimed through the other; after `down` the named volume and the task are still there;
#   5. validates compose.yaml (Compose v2 and docker-compose 1.29) and deploy/kubernetes/ offline;
#   6. removes what it started (containers, networks, volumes, the daemon if it started it) and prints
#      one summary line.
# Run as root on Debian (it installs docker.io, docker-compose and mmdebstrap when they are missing).
# Images are kept (stand-ins, taskhook:check and the build cache), so a second run is much faster.
#
#   scripts/check-container.sh
#
# Environment: TASKHOOK_CHECK_CACHE (default ~/.cache/taskhook-check: npm tarballs for the stand-ins),
# DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR, MACHINE_CA (the CA bundle the Node.js stand-in trusts).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${TASKHOOK_CHECK_CACHE:-$HOME/.cache/taskhook-check}
WORK=$(mktemp -d /tmp/taskhook-check.XXXXXX)
RUN_ID=taskhook-check-$$
IMAGE=taskhook:check
# What the later steps compare with (docs/deployment.md states the same figures).
MAX_GROWTH_BYTES=150000000
SHUTDOWN_GRACE_SECONDS=30
STEP=setup
FAILED_STEP=
STARTED_DOCKERD=
STARTED_AT=$SECONDS
export PATH=/usr/bin:/usr/sbin:/bin:/sbin:$PATH

. "$ROOT/scripts/container/lib.sh"
. "$ROOT/scripts/container/standins.sh"
. "$ROOT/scripts/container/image.sh"
. "$ROOT/scripts/container/compose.sh"

install_tools() {
  local missing=
  for tool in /usr/bin/docker /usr/sbin/dockerd /usr/bin/docker-compose /usr/bin/mmdebstrap; do
    [ -x "$tool" ] || missing=yes
  done
  [ -z "$missing" ] && return 0
  [ "$(id -u)" = 0 ] || die 'docker.io, docker-compose and mmdebstrap are missing, and only root can install them'
  log 'installing docker.io, docker-compose and mmdebstrap'
  run apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive run apt-get install -y -q docker.io docker-compose mmdebstrap >/dev/null
}

start_dockerd() {
  "$DOCKER" info >/dev/null 2>&1 && return 0
  log 'starting dockerd'
  dockerd >"$WORK/dockerd.log" 2>&1 &
  STARTED_DOCKERD=$!
  wait_for 60 'dockerd' "$DOCKER" info
}

cleanup() {
  local status=$?
  set +e
  STEP=cleanup
  compose_cleanup
  image_cleanup
  if [ -n "$STARTED_DOCKERD" ]; then
    log 'stopping the dockerd this check started'
    kill "$STARTED_DOCKERD" 2>/dev/null
    for _ in $(seq 1 30); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || break; sleep 1; done
  fi
  rm -rf "$WORK"
  local took=$((SECONDS - STARTED_AT)) built=${STANDINS_BUILT:-' none'}
  if [ "$status" = 0 ]; then
    echo "check-container: passed in ${took}s (stand-ins built:$built; image $GROWTH_MB MB over its base; $SUMMARY_FACTS)"
  else
    echo "check-container: FAILED at ${FAILED_STEP:-$STEP} after ${took}s (stand-ins built:$built)"
  fi
  exit "$status"
}

GROWTH_MB='?'
SUMMARY_FACTS=
trap cleanup EXIT
trap 'exit 130' INT TERM

install_tools
start_dockerd
mkdir -p "$CACHE"

STEP='1 stand-ins'
make_standins
STEP='2 image'
build_and_inspect_image
STEP='3 SQLite'
run_sqlite_container
STEP='4 compose'
run_compose
STEP='5 validation'
validate_deploy_files
STEP=done
