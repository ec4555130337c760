#!/usr/bin/env bash
# The metrics test checks /metrics with promtool, from Debian's prometheus package: install it when missing.
set -euo pipefail
command -v promtool >/dev/null && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "promtool is missing: install Debian's prometheus package (sudo apt-get install prometheus) and run the tests again" >&2
  exit 1
fi
servers_before=$(pgrep -x prometheus || true)
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package may start a Prometheus server on install; only promtool is wanted, so stop what it started.
for pid in $(pgrep -x prometheus || true); do
  grep -qx "$pid" <<<"$servers_before" || kill "$pid"
done
