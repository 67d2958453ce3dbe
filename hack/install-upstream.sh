#!/usr/bin/env bash
# The real upstream OpenID provider the federation tests sign in through (internal/testupstream, D58):
# panva's oidc-provider at the version of test/upstream/package-lock.json, run by Node.js. npm ci once per
# lock file: a stamp in node_modules/ records the lock it installed; a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/../test/upstream"
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [[ "$(cat node_modules/.formsservice-lock.sha256 2>/dev/null)" != "$lock_sum" ]]; then
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$lock_sum" >node_modules/.formsservice-lock.sha256
fi
