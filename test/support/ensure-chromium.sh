#!/usr/bin/env bash
# The dashboard's browser tests drive Debian's chromium through playwright-core: install it when missing.
set -euo pipefail
command -v chromium >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "chromium is missing: install Debian's chromium package (sudo apt-get install chromium) and run the tests again" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
