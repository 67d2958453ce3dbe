#!/usr/bin/env bash
# Puts axe-core (the accessibility engine the browser tests run in Chromium: internal/testbrowser) from
# the npm registry into bin/axe-core-<version>/ once, and prints the path of its axe.min.js.
set -euo pipefail
cd "$(dirname "$0")/.."
AXE_VERSION=${AXE_VERSION:-4.14.1}

dir="$PWD/bin/axe-core-$AXE_VERSION"
js="$dir/node_modules/axe-core/axe.min.js"
if [[ ! -f $js ]]; then
  echo ">> installing axe-core $AXE_VERSION from npm" >&2
  scratch=$(mktemp -d "$PWD/bin/.axe-core-XXXXXX"); trap 'rm -rf "$scratch"' EXIT
  npm install --prefix "$scratch" --no-save --no-audit --no-fund --loglevel=error "axe-core@$AXE_VERSION" >&2
  [[ -d $dir && ! -f $js ]] && rm -rf "$dir"   # a broken earlier install
  # Another test binary may have installed it meanwhile: then its copy stays, and ours goes.
  mv -T "$scratch" "$dir" 2>/dev/null || [[ -f $js ]]
fi
echo "$js"
