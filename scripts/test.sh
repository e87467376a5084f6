#!/usr/bin/env bash
# Runs every test. Provisions what the tests need (a Python venv with the ACP SDK and an
# OpenAI-compatible client for the fixture agents), cached under target/ so reruns are quick.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/py/venv
req=fixtures/python/requirements.txt
stamp="$venv/.requirements.sha256"
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "provisioning $venv from $req" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
export ACP_PATCH_TEST_PYTHON="$PWD/$venv/bin/python"

cargo test --all-targets "$@"
