#!/usr/bin/env bash
# Test client only: Apollo Client's persisted-queries link against running gateways
# (npm, pinned by tools/apq-client/package-lock.json, installed once into the tool cache).
# Usage: scripts/apq-client.sh APQ_ON_URL APQ_OFF_URL
set -euo pipefail
. "$(dirname "$0")/lib.sh"
src=$GF_ROOT/tools/apq-client
key=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
dir=$GF_TOOLS/apq-client-$key
if [ ! -f "$dir/.installed" ]; then
  command -v npm >/dev/null || die "tool apq-client: npm not found on PATH"
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$dir/install.log" 2>&1) ||
    { tail -n 20 "$dir/install.log" >&2; die "tool apq-client: npm ci of @apollo/client failed; see $dir/install.log"; }
  touch "$dir/.installed"
fi
cp "$src/client.mjs" "$dir/client.mjs"
exec node "$dir/client.mjs" "$@"
