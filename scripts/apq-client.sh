#!/usr/bin/env bash
# Test client only: Apollo Client's persisted-queries link against running gateways
# (npm, pinned by tools/apq-client/package-lock.json, installed once into the tool cache).
# Usage: scripts/apq-client.sh APQ_ON_URL APQ_OFF_URL
exec "$(dirname "$0")/node-tool.sh" apq-client "$@"
