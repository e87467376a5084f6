#!/usr/bin/env bash
# Installs Zed's Claude adapter (@zed-industries/claude-agent-acp, pinned with its dependencies
# by the committed package-lock.json) from the npm registry into target/agents/claude-agent-acp,
# keyed by the lock's hash: reruns are instant. Prints the adapter's package folder (the tree the
# smoke preset claude-agent-acp runs: `node dist/index.js`, its bundled Claude Code beside it).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=scripts/provision/claude-agent-acp
dest=target/agents/claude-agent-acp
pkg="$dest/node_modules/@zed-industries/claude-agent-acp"
want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$pkg/dist/index.js" ] || [ "$(cat "$dest/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  echo "provisioning $dest from $src/package-lock.json" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
  echo "$want" > "$dest/.lock.sha256"
fi
echo "$PWD/$pkg"
