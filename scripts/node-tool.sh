#!/usr/bin/env bash
# Runs tools/<TOOL>/<SCRIPT> (default client.mjs; test tools: oracles and real clients)
# with the npm packages its package-lock.json pins, installed once into the tool cache
# (keyed by the lock). With --dir, only installs and prints the directory holding
# node_modules (gateway/build.rs reads GraphiQL's browser builds from there).
# Usage: scripts/node-tool.sh TOOL[/SCRIPT.mjs] [ARGS...]
#        scripts/node-tool.sh --dir TOOL
set -euo pipefail
. "$(dirname "$0")/lib.sh"
only_dir=
if [ "${1:-}" = --dir ]; then
  only_dir=1
  shift
fi
spec=${1:?usage: scripts/node-tool.sh [--dir] TOOL[/SCRIPT.mjs] [ARGS...]}
shift
tool=${spec%%/*}
script=client.mjs
[ "$spec" = "$tool" ] || script=${spec#*/}
src=$GF_ROOT/tools/$tool
[ -f "$src/package-lock.json" ] || die "tool $tool: no $src/package-lock.json"
[ -n "$only_dir" ] || [ -f "$src/$script" ] || die "tool $tool: no $src/$script"
key=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-12)
dir=$GF_TOOLS/$tool-$key
if [ ! -f "$dir/.installed" ]; then
  command -v npm >/dev/null || die "tool $tool: npm not found on PATH"
  mkdir -p "$dir"
  # Tests start several clients at once: one installs, the others wait for it.
  exec 9>"$dir.lock"
  flock 9
  if [ ! -f "$dir/.installed" ]; then
    cp "$src/package.json" "$src/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$dir/install.log" 2>&1) ||
      { tail -n 20 "$dir/install.log" >&2; die "tool $tool: npm ci failed; see $dir/install.log"; }
    touch "$dir/.installed"
  fi
  exec 9>&-
fi
if [ -n "$only_dir" ]; then
  echo "$dir"
  exit 0
fi
# Replaced atomically: a client started at the same time never reads a half-copied script.
tmp=$(mktemp "$dir/.script.XXXXXX")
cp "$src/$script" "$tmp"
mv -f "$tmp" "$dir/$script"
exec node "$dir/$script" "$@"
