# Helpers shared by scripts/check-container.sh and its steps (sourced, not run).
# Debian's client: another `docker` earlier on PATH may lack what this needs.
DOCKER=${DOCKER:-/usr/bin/docker}
COMPOSE=${COMPOSE:-/usr/bin/docker-compose}

log() { printf '%s [%s] %s\n' "$(date +%H:%M:%S)" "${STEP:-check}" "$*" >&2; }
die() {
  log "FAILED: $*"
  FAILED_STEP=${STEP:-check}
  exit 1
}

# Runs "$@" and dies with its output when it fails.
run() {
  local out
  if ! out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    die "command failed: $*"
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
}

# Polls "$@" every second until it succeeds; dies after $1 seconds.
wait_for() {
  local limit=$1 what=$2
  shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    [ $((SECONDS - start)) -lt "$limit" ] || die "timed out after ${limit}s waiting for $what"
    sleep 1
  done
}

# A free TCP port on 127.0.0.1 followed by the next one (for a two-port range), e.g. "41234".
free_port_pair() {
  node -e '
    const net = require("node:net");
    const probe = (port) => new Promise((ok) => {
      const s = net.createServer().once("error", () => ok(false)).listen(port, "127.0.0.1", () => s.close(() => ok(true)));
    });
    (async () => {
      for (;;) {
        const base = 20000 + Math.floor(Math.random() * 40000);
        if ((await probe(base)) && (await probe(base + 1))) return console.log(base);
      }
    })();'
}

# Status of a container's healthcheck (starting, healthy, unhealthy) or its state when it has none.
health_of() {
  "$DOCKER" inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$1" 2>/dev/null
}

wait_healthy() {
  local container=$1 limit=$2 start=$SECONDS status
  while :; do
    status=$(health_of "$container")
    case $status in
      healthy) return 0 ;;
      unhealthy | exited | dead | '')
        "$DOCKER" logs --tail 50 "$container" >&2 || true
        die "container $container is $status"
        ;;
    esac
    [ $((SECONDS - start)) -lt "$limit" ] || die "container $container not healthy after ${limit}s ($status)"
    sleep 1
  done
}

# `GET url` answers 200.
http_ok() { node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1"; }

# A field of the JSON object on stdin: `json_field key`.
json_field() { node -e 'let s="";process.stdin.on("data",(d)=>s+=d).on("end",()=>{const v=JSON.parse(s)[process.argv[1]];if(v===undefined)process.exit(1);console.log(v)})' "$1"; }

# The size of an image in bytes.
image_size() { "$DOCKER" image inspect -f '{{.Size}}' "$1"; }

image_label() { "$DOCKER" image inspect -f "{{index .Config.Labels \"$2\"}}" "$1"; }
