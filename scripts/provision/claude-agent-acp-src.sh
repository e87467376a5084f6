#!/usr/bin/env bash
# The TypeScript sources of Zed's Claude adapter (zed-industries/claude-agent-acp, tag v0.23.1)
# for the test that patches them and runs their own vitest suite. npm ships only the compiled
# dist/ (its source maps hold no sources) and CI cannot reach GitHub, so the sources come from
# what the caller has: ACP_PATCH_CLAUDE_SRC (a checkout at that tag), or ACP_PATCH_CLAUDE_GIT (a
# clone or mirror of the repository; the tag is exported into target/claude-agent-acp-src/).
# Installs the sources' own dependencies (`npm ci` from their package-lock.json) into
# target/ts/claude-agent-acp/<hash of the lock>. Prints two lines, the source folder and that
# node_modules; prints nothing (and succeeds) when neither variable is set.
set -euo pipefail
cd "$(dirname "$0")/../.."
tag=v0.23.1
if [ -n "${ACP_PATCH_CLAUDE_SRC:-}" ]; then
  src=$ACP_PATCH_CLAUDE_SRC
elif [ -n "${ACP_PATCH_CLAUDE_GIT:-}" ]; then
  src=target/claude-agent-acp-src/$tag
  if [ ! -f "$src/package.json" ]; then
    echo "exporting $tag from $ACP_PATCH_CLAUDE_GIT into $src" >&2
    rm -rf "$src.partial"
    mkdir -p "$src.partial"
    git --git-dir="$ACP_PATCH_CLAUDE_GIT" archive "$tag" | tar -x -C "$src.partial"
    mv "$src.partial" "$src"
  fi
  src=$PWD/$src
else
  exit 0
fi
want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
dest=target/ts/claude-agent-acp/$want
if [ ! -f "$dest/node_modules/.package-lock.json" ]; then
  echo "provisioning $dest from $src/package-lock.json" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
fi
echo "$src"
echo "$PWD/$dest/node_modules"
