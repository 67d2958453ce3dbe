#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is installed (Debian's chromium package) for the browser tests
# (test/signin drives it with the Chrome DevTools Protocol). Prints its path.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null; then command -v "$b"; exit 0; fi
done
echo ">> installing chromium (Debian package)" >&2
hack/apt-install.sh chromium >&2
command -v chromium
