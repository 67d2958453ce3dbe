#!/usr/bin/env bash
# apt-get install with one `apt-get update` per machine (the first install after boot needs it).
# apt has one lock: two installs at once (two scripts, two checkouts) would fail on it, so our own calls
# queue on a lock file of ours, and an apt run of someone else's is waited for (DPkg::Lock::Timeout).
# `make deps` (hack/deps.sh) installs every package the tests need in one call, up front.
set -euo pipefail
SUDO=""
if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
exec 8>/tmp/.formsservice-apt.lock
flock -w 1800 8 || { echo "apt-install: another apt-get of ours held the lock for 30 minutes" >&2; exit 1; }
stamp=/tmp/.formsservice-apt-updated
if [[ ! -f $stamp ]]; then
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  touch "$stamp"
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null
