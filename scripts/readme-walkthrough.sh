#!/usr/bin/env bash
# Runs the README's first walkthrough ("From nothing to a reviewed diff in five commands") as
# written, and fails when it no longer works:
#
#   npm run build                      # first: the server and `npx taskhook` run from dist/
#   scripts/readme-walkthrough.sh
#
# The shell block is read from README.md itself, so the README is what is tested. The script
# starts its own server (embedded SQLite) with a temporary TASKHOOK_DATA_DIR, exported for the
# whole run so that the `npx taskhook` steps write to the server's database, on a free port of
# 127.0.0.1. The README says `localhost:8080`; rather than needing 8080 free, every
# `localhost:8080` in the extracted block is rewritten to `localhost:<that port>`, and
# TASKHOOK_URL is exported for the worker (the walkthrough's step 3 names that variable for a
# server elsewhere). The steps run in bash from the repository root:
#   1, 2  as written (they export TASKHOOK_API_KEY and TASKHOOK_AGENT_ID);
#   3     in the background, as "another terminal" would;
#   4     as written, its JSON answer kept for step 5;
#   5     with `<poll_url>` replaced by step 4's poll_url, repeated until the task is completed
#         (60 s at most), then result.summary and result.findings are checked against what
#         examples/change.diff gives.
# It prints one summary line, and exits non-zero naming the step that failed. The server, the
# worker and the temporary directory go on exit, also on failure. Nothing leaves 127.0.0.1:
# npm runs offline, so `npx taskhook` can only be this repository's own CLI.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$(date +%s)
step=setup
fail() {
  echo "readme-walkthrough: FAILED at $step: $*" >&2
  exit 1
}

[ -f dist/cli/index.js ] || fail "dist/cli/index.js is missing; run \`npm run build\` first"
command -v curl >/dev/null || fail "curl is needed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/taskhook-walkthrough.XXXXXX")
server_pid=
worker_pid=
cleanup() {
  status=$?
  # Each runs in its own session (setsid): killing the group takes npm's children with it.
  for pid in $worker_pid $server_pid; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for pid in $worker_pid $server_pid; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  if [ "$status" -ne 0 ]; then
    for log in server worker; do
      [ -s "$tmp/$log.log" ] && { echo "--- last lines of the $log's output:"; tail -n 20 "$tmp/$log.log"; } >&2
    done
  fi
  rm -rf "$tmp"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the walkthrough's block, from README.md -------------------------------------------------
step="reading README.md"
heading='### From nothing to a reviewed diff in five commands'
awk -v heading="$heading" '
  $0 == heading { found = 1; next }
  found && !inside && /^```sh$/ { inside = 1; next }
  inside && /^```$/ { exit }
  inside { print }
' README.md >"$tmp/block.sh"
[ -s "$tmp/block.sh" ] || fail "no \`\`\`sh block after the heading \"$heading\""

# Split at the "# 1." … "# 5." comments, one file per step.
awk -v dir="$tmp" '
  /^# [1-5]\. / { out = dir "/step" substr($2, 1, 1) ".sh" }
  out { print > out }
' "$tmp/block.sh"
for n in 1 2 3 4 5; do
  [ -s "$tmp/step$n.sh" ] || fail "the block has no step \"# $n.\""
done
grep -q '<poll_url>' "$tmp/step5.sh" || fail "step 5 no longer uses <poll_url>; this script substitutes it"
grep -vq '^#' "$tmp/step3.sh" || fail "step 3 has no command"

# --- a server of our own ---------------------------------------------------------------------
step="starting the server"
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
sed -i "s/localhost:8080/localhost:$port/g" "$tmp"/step*.sh
# Only this run's settings: embedded storage in the temporary directory, nothing from the caller's
# environment pointing elsewhere.
unset DATABASE_URL REDIS_URL TASKHOOK_PUBLIC_URL TASKHOOK_API_KEY TASKHOOK_AGENT_ID
export TASKHOOK_DATA_DIR="$tmp/data" PORT="$port" HOST=127.0.0.1 TASKHOOK_URL="http://localhost:$port"
export npm_config_offline=true npm_config_update_notifier=false npm_config_fund=false
setsid node --max-semi-space-size=8 dist/cli/index.js serve >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
  sleep 0.1
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || fail "the server did not answer /health within 30 s"

# --- the steps -------------------------------------------------------------------------------
step="step 1 (account and API key)"
# shellcheck disable=SC1091
source "$tmp/step1.sh" >"$tmp/step1.out" 2>&1 || fail "$(tail -n 5 "$tmp/step1.out")"
[[ ${TASKHOOK_API_KEY:-} =~ ^[A-Za-z0-9_-]{20,}$ ]] || fail "TASKHOOK_API_KEY is '${TASKHOOK_API_KEY:-}': $(tail -n 5 "$tmp/step1.out")"

step="step 2 (agent)"
# shellcheck disable=SC1091
source "$tmp/step2.sh" >"$tmp/step2.out" 2>&1 || fail "$(tail -n 5 "$tmp/step2.out")"
[[ ${TASKHOOK_AGENT_ID:-} =~ ^[0-9a-f-]{36}$ ]] || fail "TASKHOOK_AGENT_ID is '${TASKHOOK_AGENT_ID:-}': $(tail -n 5 "$tmp/step2.out")"

step="step 3 (example worker)"
setsid bash "$tmp/step3.sh" >"$tmp/worker.log" 2>&1 &
worker_pid=$!
for _ in $(seq 300); do
  grep -q 'review worker running' "$tmp/worker.log" && break
  kill -0 "$worker_pid" 2>/dev/null || fail "the worker exited: $(tail -n 5 "$tmp/worker.log")"
  sleep 0.1
done
grep -q 'review worker running' "$tmp/worker.log" || fail "the worker did not start within 30 s"

step="step 4 (submit the diff)"
# shellcheck disable=SC1091
submitted=$(source "$tmp/step4.sh") || fail "the command failed"
poll_url=$(printf '%s' "$submitted" | node -pe 'JSON.parse(require("fs").readFileSync(0)).poll_url ?? ""' 2>/dev/null) ||
  fail "the answer is not JSON: $submitted"
[[ $poll_url == "http://localhost:$port/"* ]] || fail "no poll_url on this server in: $submitted"

step="step 5 (poll until completed)"
sed -i "s|<poll_url>|'$poll_url'|g" "$tmp/step5.sh"
deadline=$(($(date +%s) + 60))
task_status=
while :; do
  # shellcheck disable=SC1091
  polled=$(source "$tmp/step5.sh") || fail "the command failed"
  task_status=$(printf '%s' "$polled" | node -pe 'JSON.parse(require("fs").readFileSync(0)).status' 2>/dev/null) ||
    fail "the answer is not JSON: $polled"
  case $task_status in
    completed) break ;;
    failed | cancelled | awaiting_input) fail "the task is $task_status: $polled" ;;
  esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "still $task_status after 60 s: $polled"
  sleep 0.5
done

step="step 5 (checking the result)"
# examples/change.diff: a key-like secret on line 3 (error), console.log on line 11 (warning) and a
# TODO on line 13 (info), all in src/orders.ts.
check=$(printf '%s' "$polled" | node -e '
  const task = JSON.parse(require("fs").readFileSync(0));
  const r = task.result ?? {};
  const problems = [];
  if (typeof r.summary !== "string" || r.summary.length === 0) problems.push("result.summary is empty");
  const got = (r.findings ?? []).map((f) => `${f.file}:${f.line}:${f.severity}`).sort().join(" ");
  const want = ["src/orders.ts:11:warning", "src/orders.ts:13:info", "src/orders.ts:3:error"].join(" ");
  if (got !== want) problems.push(`findings are [${got}], expected [${want}]`);
  if (problems.length) { console.log(problems.join("; ")); process.exit(1); }
  console.log(r.summary.replace(/\s+/g, " "));
') || fail "$check"

echo "readme-walkthrough: ok, 5 steps in $(($(date +%s) - started)) s; port $port; summary: $check"
