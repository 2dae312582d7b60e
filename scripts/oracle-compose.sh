#!/usr/bin/env bash
# Test oracle only: composes a rover-style supergraph config with @apollo/composition
# (npm, pinned by tools/oracle/package-lock.json, installed once into the tool cache).
# Usage: scripts/oracle-compose.sh CONFIG.yaml [--json]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
src=$GF_ROOT/tools/oracle
key=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
dir=$GF_TOOLS/oracle-$key
if [ ! -f "$dir/.installed" ]; then
  command -v npm >/dev/null || die "tool oracle: npm not found on PATH"
  mkdir -p "$dir"
  cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$dir/install.log" 2>&1) ||
    { tail -n 20 "$dir/install.log" >&2; die "tool oracle: npm ci of @apollo/composition failed; see $dir/install.log"; }
  touch "$dir/.installed"
fi
cp "$src/compose.mjs" "$dir/compose.mjs"
exec node "$dir/compose.mjs" "$@"
