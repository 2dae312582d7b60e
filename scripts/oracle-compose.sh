#!/usr/bin/env bash
# Test oracle only: composes a rover-style supergraph config with @apollo/composition
# (npm, pinned by tools/oracle/package-lock.json, installed once into the tool cache).
# Usage: scripts/oracle-compose.sh CONFIG.yaml [--json]
exec "$(dirname "$0")/node-tool.sh" oracle/compose.mjs "$@"
