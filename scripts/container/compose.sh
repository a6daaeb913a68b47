# Steps 4 and 5 of scripts/check-container.sh (sourced): compose.yaml with two instances on
# PostgreSQL and Redis, then the offline validation of compose.yaml and deploy/kubernetes/.

COMPOSE_UP=

# docker-compose 1.29 on this project, with generated secrets (never the user's .env) and the image
# step 2 built; TASKHOOK_PORT is a two-port range, one port per instance.
compose() {
  TASKHOOK_IMAGE=$IMAGE TASKHOOK_PORT=$COMPOSE_PORTS \
    "$COMPOSE" -p "$RUN_ID" --env-file "$WORK/compose.env" -f "$ROOT/compose.yaml" "$@"
}

compose_cleanup() {
  [ -n "$COMPOSE_UP" ] || return 0
  compose down -v --remove-orphans >/dev/null 2>&1
  for v in $("$DOCKER" volume ls -q --filter "label=com.docker.compose.project=$RUN_ID"); do
    "$DOCKER" volume rm -f "$v" >/dev/null 2>&1
  done
}

write_compose_env() {
  {
    echo "TASKHOOK_JWT_SECRET=$(openssl rand -hex 32)"
    echo "TASKHOOK_ENCRYPTION_KEY=$(openssl rand -hex 32)"
    echo "POSTGRES_PASSWORD=$(openssl rand -hex 24)"
  } >"$WORK/compose.env"
  chmod 600 "$WORK/compose.env"
}

# Brings the project up with two taskhook instances and waits until both answer /health.
compose_up() {
  COMPOSE_UP=yes
  compose up -d --scale taskhook=2 >"$WORK/compose-up.log" 2>&1 ||
    { cat "$WORK/compose-up.log" >&2; compose logs --tail 30 >&2; die 'docker-compose up failed'; }
  PORT_1=$(compose port --index=1 taskhook 8080)
  PORT_2=$(compose port --index=2 taskhook 8080)
  case "$PORT_1 $PORT_2" in
    127.0.0.1:*' '127.0.0.1:*) ;;
    *) die "taskhook is published on '$PORT_1' and '$PORT_2', not on 127.0.0.1 only" ;;
  esac
  wait_for 120 "instance 1 on $PORT_1" http_ok "http://$PORT_1/health"
  wait_for 120 "instance 2 on $PORT_2" http_ok "http://$PORT_2/health"
  for service in postgres redis; do
    [ -z "$("$DOCKER" port "$(compose ps -q "$service")")" ] || die "$service publishes a port"
  done
}

run_compose() {
  write_compose_env
  COMPOSE_PORTS=$(free_port_pair)
  COMPOSE_PORTS="$COMPOSE_PORTS-$((COMPOSE_PORTS + 1))"
  compose_up
  log "two instances on PostgreSQL and Redis: $PORT_1 and $PORT_2"

  local email=check-$$@example.com key task
  run compose exec -T --index=1 taskhook taskhook user create --email "$email" --password 'container check password' --verified >/dev/null
  key=$(compose exec -T --index=2 taskhook taskhook key create --email "$email" --name check | json_field key) ||
    die 'taskhook key create through docker-compose exec failed'
  task=$(node "$ROOT/scripts/container/task.mjs" run "http://$PORT_1" "http://$PORT_2" "$key") ||
    die 'the task did not go from one instance to the other'
  log "task submitted to instance 1, claimed and completed through instance 2: $task"

  run compose down >/dev/null
  [ -n "$("$DOCKER" volume ls -q --filter "label=com.docker.compose.project=$RUN_ID")" ] ||
    die 'docker-compose down removed the named volume'
  compose_up
  local agent_uuid task_uuid read_back
  agent_uuid=$(printf '%s' "$task" | json_field agent)
  task_uuid=$(printf '%s' "$task" | json_field task)
  # Either instance serves it (they share the database).
  local code=1 port
  for port in "$PORT_2" "$PORT_1" "$PORT_2"; do
    read_back=$(node "$ROOT/scripts/container/task.mjs" read "http://$port" "$key" "$agent_uuid" "$task_uuid" 2>&1) &&
      code=0 && break
    log "reading the task through $port: ${read_back:-no answer}"
    sleep 2
  done
  if [ "$code" != 0 ]; then
    compose logs --tail 40 taskhook >&2 || true
    die "task $task_uuid is not there after docker-compose down and up: $read_back"
  fi
  log 'after down and up the named volume still has the task'
  SUMMARY_FACTS="$SUMMARY_FACTS; compose: 2 instances on PostgreSQL and Redis, volume kept"
}

# Compose v2: the machine's `docker compose` when it has one, else Debian trixie's docker-compose 2.x
# from the services' stand-in root filesystem, in a container.
compose_v2_config() {
  if "$DOCKER" compose version >/dev/null 2>&1; then
    (cd "$ROOT" && "$DOCKER" compose --env-file "$WORK/compose.env" config -q)
    return
  fi
  debian_rootfs "$SERVICES_BASE" trixie "postgresql-$PG_MAJOR,redis-server,docker-compose,util-linux"
  "$DOCKER" run --rm --network none -v "$ROOT:/project:ro" -v "$WORK/compose.env:/compose.env:ro" -w /project \
    "$SERVICES_BASE" sh -c 'docker-compose version && docker-compose --env-file /compose.env config -q'
}

validate_deploy_files() {
  [ -f "$WORK/compose.env" ] || write_compose_env
  local v1 v2
  v1=$("$COMPOSE" version --short)
  (cd "$ROOT" && "$COMPOSE" --env-file "$WORK/compose.env" config -q) || die "compose.yaml is not valid for docker-compose $v1"
  v2=$(compose_v2_config 2>&1) || { printf '%s\n' "$v2" >&2; die 'compose.yaml is not valid for Compose v2'; }
  log "compose.yaml is valid for docker-compose $v1 and ${v2%%$'\n'*}"

  # Without the secrets it refuses to start, naming what is missing.
  local refusal
  : >"$WORK/empty.env"
  if refusal=$(cd "$ROOT" && env -u TASKHOOK_JWT_SECRET -u TASKHOOK_ENCRYPTION_KEY -u POSTGRES_PASSWORD \
    "$COMPOSE" --env-file "$WORK/empty.env" config -q 2>&1); then
    die 'compose.yaml accepts a missing TASKHOOK_JWT_SECRET, TASKHOOK_ENCRYPTION_KEY or POSTGRES_PASSWORD'
  fi
  printf '%s' "$refusal" | grep -q 'in .env' || die "compose.yaml refuses without saying what to set: $refusal"

  local modules=$ROOT
  if [ ! -d "$ROOT/node_modules/kubernetes-models" ]; then
    modules=$CACHE/validate
    log "installing the validator's packages into $modules"
    local pins
    pins=$(node -e "const l=require('$ROOT/package-lock.json').packages;console.log(['kubernetes-models','yaml','typescript'].map((n)=>n+'@'+l['node_modules/'+n].version).join(' '))")
    # shellcheck disable=SC2086
    run npm install --prefix "$modules" --no-save --no-audit --no-fund --no-package-lock $pins >/dev/null
  fi
  node "$ROOT/scripts/container/validate-deploy.mjs" "$ROOT" "$modules" >"$WORK/validate.log" 2>&1 ||
    { cat "$WORK/validate.log" >&2; die 'deploy/kubernetes/ is not valid'; }
  log "deploy/kubernetes/: $(grep -c '^checked' "$WORK/validate.log") objects valid against the Kubernetes schemas"
}
