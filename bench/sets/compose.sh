#!/usr/bin/env bash
# Recomposes every set's committed supergraph.graphql with the test oracle
# (scripts/oracle-compose.sh, @apollo/composition). Usage: bench/sets/compose.sh [SET...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(fed big-response many-plans apollo)
for set in "${sets[@]}"; do
  [ -f "$here/$set/supergraph.yaml" ] || continue
  "$root/scripts/oracle-compose.sh" "$here/$set/supergraph.yaml" >"$here/$set/supergraph.graphql.tmp"
  mv "$here/$set/supergraph.graphql.tmp" "$here/$set/supergraph.graphql"
  echo "composed $set"
done
