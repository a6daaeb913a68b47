# Steps 2 and 3 of scripts/check-container.sh (sourced): build the image and inspect it, then run it
# on SQLite with a volume.

IMAGE_CONTAINERS=
IMAGE_VOLUME=

image_cleanup() {
  for c in $IMAGE_CONTAINERS; do "$DOCKER" rm -f "$c" >/dev/null 2>&1; done
  [ -z "$IMAGE_VOLUME" ] || "$DOCKER" volume rm -f "$IMAGE_VOLUME" >/dev/null 2>&1
}

# Runs a command in a throw-away container of the image, without its entrypoint.
in_image() {
  local entry=$1
  shift
  "$DOCKER" run --rm --entrypoint "$entry" "$IMAGE" "$@"
}

build_and_inspect_image() {
  log "building $IMAGE from the Dockerfile (base $BASE_IMAGE)"
  local started=$SECONDS
  DOCKER_BUILDKIT=1 "$DOCKER" build --progress=plain -t "$IMAGE" "$ROOT" >"$WORK/build.log" 2>&1 ||
    { tail -n 40 "$WORK/build.log" >&2; die 'docker build failed'; }
  log "built in $((SECONDS - started))s"

  local size base growth
  size=$(image_size "$IMAGE")
  base=$(image_size "$BASE_IMAGE")
  growth=$((size - base))
  GROWTH_MB=$((growth / 1000000))
  log "size: $((size / 1000000)) MB, $GROWTH_MB MB over $BASE_IMAGE"
  [ "$growth" -le "$MAX_GROWTH_BYTES" ] || die "the image adds $growth bytes to its base (at most $MAX_GROWTH_BYTES)"

  local user uid
  user=$("$DOCKER" image inspect -f '{{.Config.User}}' "$IMAGE")
  uid=$(in_image id -u)
  [ -n "$user" ] && [ "$uid" != 0 ] || die "the image runs as uid $uid (user '$user'), not a non-root user"

  local version
  version=$(node -p "require('$ROOT/package.json').version")
  [ "$(image_label "$IMAGE" org.opencontainers.image.version)" = "$version" ] ||
    die "label org.opencontainers.image.version is not package.json's $version"
  [ "$(image_label "$IMAGE" org.opencontainers.image.licenses)" = "$(node -p "require('$ROOT/package.json').license")" ] ||
    die 'label org.opencontainers.image.licenses is not package.json license'
  case $(image_label "$IMAGE" org.opencontainers.image.source) in
    http*://*) ;;
    *) die 'label org.opencontainers.image.source is not an address' ;;
  esac

  # Only what runs: no sources, tests, repository, local data or compiler.
  local top strays
  top=$(in_image ls -A /app | tr '\n' ' ')
  [ "$top" = 'LICENSE dist node_modules package.json vendor ' ] || die "/app holds: $top"
  strays=$(in_image find /app /data \( -name '*.ts' ! -name '*.d.ts' -o -name '*.test.*' -o -name '.git' \
    -o -name '*.sqlite' -o -name '.env' \) -not -path '/app/node_modules/*' -print)
  [ -z "$strays" ] || die "the image holds source, test or data files: $strays"
  in_image sh -c '! command -v gcc && ! command -v g++ && ! command -v make && ! command -v python3' >/dev/null ||
    die 'the runtime image holds a compiler'
  [ "$(in_image sh -c 'command -v taskhook')" = /usr/local/bin/taskhook ] || die 'taskhook is not on PATH'

  # Node.js as PID 1 with the flags of `npm start`, no shell in between.
  local entry start
  entry=$("$DOCKER" image inspect -f '{{join .Config.Entrypoint " "}} {{join .Config.Cmd " "}}' "$IMAGE")
  start=$(node -p "require('$ROOT/package.json').scripts.start")
  [ "$entry" = "${start/dist\//\/app\/dist\/}" ] || die "entrypoint '$entry' is not npm start's '$start'"
  SUMMARY_FACTS="uid $uid, labels, contents"
}

# Starts container $RUN_ID-sqlite-$1 on the volume, published on 127.0.0.1:$2, and waits until the
# image's healthcheck (polled every 2 s here instead of 30 s) says healthy. Further arguments go to
# `docker run`.
sqlite_container() {
  local name=$RUN_ID-sqlite-$1 port=$2
  shift 2
  IMAGE_CONTAINERS="$IMAGE_CONTAINERS $name"
  "$DOCKER" run -d --name "$name" --read-only --cap-drop ALL --security-opt no-new-privileges \
    --health-interval 2s -v "$IMAGE_VOLUME:/data" -p "127.0.0.1:$port:8080" "$@" "$IMAGE" >/dev/null
  wait_healthy "$name" 120
}

run_sqlite_container() {
  local port first second
  port=$(free_port_pair)
  IMAGE_VOLUME=$RUN_ID-data
  "$DOCKER" volume create "$IMAGE_VOLUME" >/dev/null
  first=$RUN_ID-sqlite-1
  second=$RUN_ID-sqlite-2
  sqlite_container 1 "$port" -e TASKHOOK_LOG_LEVEL=debug
  log "$first is healthy (read-only root, volume $IMAGE_VOLUME at /data)"

  local email=check-$$@example.com key task
  run "$DOCKER" exec "$first" taskhook user create --email "$email" --password 'container check password' --verified >/dev/null
  key=$("$DOCKER" exec "$first" taskhook key create --email "$email" --name check | json_field key) ||
    die 'taskhook key create through docker exec failed'
  task=$(node "$ROOT/scripts/container/task.mjs" run "http://127.0.0.1:$port" "http://127.0.0.1:$port" "$key") ||
    die 'the task did not run end to end'
  log "task end to end through 127.0.0.1:$port: $task"
  local agent_uuid task_uuid
  agent_uuid=$(printf '%s' "$task" | json_field agent)
  task_uuid=$(printf '%s' "$task" | json_field task)

  # SIGTERM while a worker's long poll is open: the poll is answered, the process exits 0, in time.
  node "$ROOT/scripts/container/task.mjs" wait-claim "http://127.0.0.1:$port" "$key" "$agent_uuid" 30 \
    >"$WORK/drain.json" 2>&1 &
  local poller=$! started code
  # The first claim was the task's; the second is this long poll (requests are logged at debug).
  wait_for 60 'the long poll to reach the server' sh -c \
    "[ \$('$DOCKER' logs '$first' 2>&1 | grep -c '\"url\":\"/agent/$agent_uuid/tasks/claim\"') -ge 2 ]"
  started=$SECONDS
  "$DOCKER" stop -t $((SHUTDOWN_GRACE_SECONDS + 10)) "$first" >/dev/null
  local took=$((SECONDS - started))
  code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$first")
  wait "$poller" || die "the long poll open during docker stop failed: $(cat "$WORK/drain.json")"
  [ "$code" = 0 ] || die "docker stop: exit code $code, not 0"
  [ "$took" -lt "$SHUTDOWN_GRACE_SECONDS" ] || die "docker stop took ${took}s (grace ${SHUTDOWN_GRACE_SECONDS}s)"
  "$DOCKER" logs "$first" 2>&1 | grep -q '"signal":"SIGTERM"' || die 'the log does not show the SIGTERM drain'
  log "docker stop: exit 0 after ${took}s; the open long poll was answered: $(cat "$WORK/drain.json")"

  sqlite_container 2 "$port"
  node "$ROOT/scripts/container/task.mjs" read "http://127.0.0.1:$port" "$key" "$agent_uuid" "$task_uuid" ||
    die 'the task is gone after a new container on the same volume'
  log "$second on the same volume still has task $task_uuid"
  "$DOCKER" stop "$second" >/dev/null
}
