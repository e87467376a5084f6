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

# Real Python agents from PyPI (Python >= 3.12, with uv), each keyed by its pinned lock.
ACP_PATCH_TEST_MISTRAL_VIBE=$(scripts/provision/python-agent.sh mistral-vibe vibe)
ACP_PATCH_TEST_GPTME=$(scripts/provision/python-agent.sh gptme gptme)
ACP_PATCH_TEST_VIBE_PYTHON="$ACP_PATCH_TEST_MISTRAL_VIBE/venv/bin/python"
export ACP_PATCH_TEST_MISTRAL_VIBE ACP_PATCH_TEST_GPTME ACP_PATCH_TEST_VIBE_PYTHON

# Real agents for the smoke presets, from their registries into target/ (cached by lock hash).
ACP_PATCH_TEST_CLAUDE_ACP=$(scripts/provision/claude-agent-acp.sh)
export ACP_PATCH_TEST_CLAUDE_ACP
# pi-acp with its pi and the Node pi needs (x86_64 only: elsewhere the preset test skips)
scripts/provision/pi-acp.sh >/dev/null || echo "pi-acp not provisioned: its preset test will skip" >&2

# Headless Chromium (Debian's package) for the test that opens the HTML report in a browser;
# installed only when missing and only where apt-get can (as root). Without it that test says
# why it skipped.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium from Debian's archive" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1; } \
    || echo "could not install chromium: the browser test will be skipped" >&2
fi

# The start-up check's answers (see src/toolchain/cache.rs) go under target/, never into the
# user's ~/.cache (a run would evict their entries); a value given by the caller stands.
export ACP_PATCH_CACHE_DIR="${ACP_PATCH_CACHE_DIR-$PWD/target/cache}"

# Most tests wait (smoke runs on their scripted model, agents starting): more test threads than
# cores. The tests that burn CPU take turns with the smoke runs (tests/it/support.rs cpu_lock).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"
cargo test --all-targets "$@"
