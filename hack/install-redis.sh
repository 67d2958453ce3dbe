#!/usr/bin/env bash
# Puts redis-server, redis-cli and redis-sentinel into bin/, installing Debian's redis-server and
# redis-sentinel packages when missing (test/reliability's Sentinel failover runs real sentinels).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
if [[ -x bin/redis-server && -x bin/redis-cli && -x bin/redis-sentinel ]]; then exit 0; fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo ">> installing redis-server (Debian package)"
  hack/apt-install.sh redis-server
fi
if ! command -v redis-sentinel >/dev/null; then
  echo ">> installing redis-sentinel (Debian package)"
  hack/apt-install.sh redis-sentinel
fi
# Copy only what bin/ lacks: a binary already there may be running (another test), and cp cannot
# overwrite a running executable.
[[ -x bin/redis-server ]] || cp "$(command -v redis-server)" bin/redis-server
[[ -x bin/redis-cli ]] || cp "$(command -v redis-cli)" bin/redis-cli
# Debian's redis-sentinel is a symbolic link (to redis-check-rdb, itself redis-server; the binary picks its
# mode from its name):
# copy what it points to, under the name that selects Sentinel mode.
[[ -x bin/redis-sentinel ]] || cp -L "$(command -v redis-sentinel)" bin/redis-sentinel
bin/redis-server --version
