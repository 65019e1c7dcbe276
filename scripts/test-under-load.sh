#!/usr/bin/env bash
# Runs the test command with every core busy: one CPU hog per core at the tests' own priority
# (a busy loop in node), as a shared CI machine may be. The suite must pass like this.
# Usage: scripts/test-under-load.sh [command…]   (default: npm test)
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(node -e 'console.log(require("node:os").availableParallelism())')
hogs=()
for _ in $(seq "$cores"); do
  node -e 'for (;;) {}' &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
echo "test-under-load: ${cores} CPU hogs running (pids ${hogs[*]})" >&2
if [ $# -gt 0 ]; then "$@"; else npm test; fi
