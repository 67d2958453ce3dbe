#!/usr/bin/env bash
# apt-get install with one `apt-get update` per machine (the first install after boot needs it).
set -euo pipefail
SUDO=""
if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
stamp=/tmp/.formsservice-apt-updated
if [[ ! -f $stamp ]]; then
  $SUDO apt-get update -qq
  touch "$stamp"
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
