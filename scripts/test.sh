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

# TypeScript: node_modules for each TypeScript fixture with a lock file and for the pi-acp test
# (typescript, tsx, the ACP SDK generations), installed with `npm ci` from the committed lock
# files into target/ts/<name>, keyed by the lock's hash like the venv. Fixtures without a lock
# use another's (case.toml: [compile] deps).
ts_root=target/ts
for lock in fixtures/typescript/*/before/package-lock.json fixtures/typescript/pi-acp/package-lock.json; do
  pkg=$(dirname "$lock")
  name=$(basename "$( [ "$(basename "$pkg")" = before ] && dirname "$pkg" || echo "$pkg")")
  dest="$ts_root/$name"
  want=$(cat "$pkg/package.json" "$pkg/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [ ! -d "$dest/node_modules" ] || [ "$(cat "$dest/.lock.sha256" 2>/dev/null)" != "$want" ]; then
    echo "provisioning $dest from $pkg/package-lock.json" >&2
    rm -rf "$dest"
    mkdir -p "$dest"
    cp "$pkg/package.json" "$pkg/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$want" > "$dest/.lock.sha256"
  fi
done
export ACP_PATCH_TEST_TS="$PWD/$ts_root"
# claude-agent-acp's TypeScript sources and their node_modules, when the caller names them
# (ACP_PATCH_CLAUDE_SRC / ACP_PATCH_CLAUDE_GIT; npm has only its dist/, CI has no GitHub)
bash scripts/provision/claude-agent-acp-src.sh >/dev/null

cargo test --all-targets "$@"
