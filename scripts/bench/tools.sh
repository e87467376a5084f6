#!/usr/bin/env bash
# The anchors the benchmark compares acp-patch with, from their registries into
# target/bench/tools: ast-grep (PyPI wheel ast-grep-cli, pinned) and ripgrep (Debian's
# package when apt-get can, else crates.io with cargo install). Prints the tools' folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=$PWD/target/bench/tools
mkdir -p "$tools/bin"
astgrep_version=0.51.1
if [ ! -x "$tools/bin/ast-grep" ] || ! "$tools/bin/ast-grep" --version | grep -q "$astgrep_version"; then
  d=$(mktemp -d)
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
    -d "$d" "ast-grep-cli==$astgrep_version" >&2
  python3 -m zipfile -e "$d"/*.whl "$d/x"
  install -m 755 "$(find "$d/x" -path '*scripts/ast-grep' | head -1)" "$tools/bin/ast-grep"
  rm -rf "$d"
fi
if [ ! -x "$tools/bin/rg" ]; then
  if command -v rg >/dev/null 2>&1; then
    ln -sf "$(command -v rg)" "$tools/bin/rg"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ripgrep >/dev/null 2>&1; then
    ln -sf "$(command -v rg)" "$tools/bin/rg"
  else
    cargo install -q --locked --root "$tools" ripgrep >&2
  fi
fi
echo "$tools/bin"
