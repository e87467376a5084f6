#!/usr/bin/env bash
# uv (the fast Python installer, from PyPI) in target/tools, pinned; prints its path.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=0.9.30
tools=target/tools
if [ "$("$tools/bin/uv" --version 2>/dev/null)" != "uv $version" ]; then
  echo "provisioning $tools with uv $version" >&2
  rm -rf "$tools"
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install -q --disable-pip-version-check "uv==$version" >&2
fi
echo "$PWD/$tools/bin/uv"
