#!/usr/bin/env bash
# Runs a command with another Node.js major on PATH: `bash scripts/with-node.sh 24 npm test`.
# The binary comes from the npm registry's node-<os>-<arch> package (the registry ships it; nothing
# is downloaded from elsewhere), cached in node_modules/.cache/node-<major>.
set -euo pipefail
cd "$(dirname "$0")/.."
major="$1"; shift
os=$(node -p 'process.platform')
arch=$(node -p 'process.arch')
dir="node_modules/.cache/node-$major"
bin="$dir/node_modules/node-$os-$arch/bin"
if [ ! -x "$bin/node" ]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --no-package-lock "node-$os-$arch@$major" > /dev/null
fi
export PATH="$PWD/$bin:$PATH"
echo "with-node: $(node --version) from $bin" >&2
exec "$@"
