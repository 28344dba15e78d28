#!/usr/bin/env bash
# Installs Azurite (the Azure Storage emulator, npm) under .venv/azurite for the Azure
# tests. Idempotent (a marker file holds the pin). Without npm it says so and exits 0:
# scripts/test.sh then runs without the Azure tests and says that too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.venv/azurite"
want="azurite@3.37.0"
if [ -f "$dir/.pinned" ] && [ "$(cat "$dir/.pinned")" = "$want" ]; then
  exit 0
fi
if ! command -v npm > /dev/null; then
  echo "setup-azurite: npm not found: Azurite not installed (the Azure tests will be skipped)" >&2
  exit 0
fi
echo "setup-azurite: installing $want into $dir" >&2
rm -rf "$dir"
mkdir -p "$dir"
(cd "$dir" && npm install --silent --no-audit --no-fund --prefix "$dir" "$want" > "$dir/install.log" 2>&1) \
  || { cat "$dir/install.log" >&2; exit 1; }
echo "$want" > "$dir/.pinned"
