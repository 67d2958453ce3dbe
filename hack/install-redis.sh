#!/usr/bin/env bash
# Puts redis-server and redis-cli into bin/, installing Debian's redis-server package when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
if [[ -x bin/redis-server && -x bin/redis-cli ]]; then exit 0; fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo ">> installing redis-server (Debian package)"
  hack/apt-install.sh redis-server
fi
cp "$(command -v redis-server)" bin/redis-server
cp "$(command -v redis-cli)" bin/redis-cli
bin/redis-server --version
