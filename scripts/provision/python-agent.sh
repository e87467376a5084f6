#!/usr/bin/env bash
# Installs a real Python agent from PyPI into target/agents/<name>, keyed by the hash of its
# pinned lock (scripts/provision/<name>/requirements.lock, made from requirements.in with
# `uv pip compile`, and overrides.txt where the agent pins what the registry no longer
# serves — the command is in README.md): reruns are instant. Prints target/agents/<name>, holding
#   venv/  the agent with all its dependencies (Python >= 3.12 from ~/.pyenv/versions)
#   src/   its Python packages as the wheel ships them: the tree acp-patch patches (native
#          binaries and .dist-info left out; the venv keeps them)
# Usage: python-agent.sh <name | folder holding requirements.lock> <top package>...
# ACP_PATCH_AGENT_PYTHON=3.13 picks that CPython (default: the first >= 3.12).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -d "$1" ]; then
  here=${1%/}
  name=real-$(basename "$here")
else
  here=scripts/provision/$1
  name=$1
fi
shift
dest=target/agents/$name
wanted_python=${ACP_PATCH_AGENT_PYTHON:-3.1[2-9]}
want=$({ echo "$wanted_python $*"; cat "$here/requirements.lock" "$0"; cat "$here/overrides.txt" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
if [ ! -x "$dest/venv/bin/python" ] || [ ! -d "$dest/src" ] || [ "$(cat "$dest/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  python=$(ls -d "$HOME"/.pyenv/versions/$wanted_python*/bin/python 2>/dev/null | head -1 || true)
  [ -n "$python" ] || [ -n "${ACP_PATCH_AGENT_PYTHON:-}" ] || python=$(command -v python3.12 || command -v python3.13 || true)
  [ -n "$python" ] || python=$(command -v "python${ACP_PATCH_AGENT_PYTHON:-}" || true)
  [ -n "$python" ] || { echo "$name needs Python ${ACP_PATCH_AGENT_PYTHON:->= 3.12} (none under ~/.pyenv/versions or on PATH)" >&2; exit 1; }
  uv=$(scripts/provision/uv.sh)
  echo "provisioning $dest from $here/requirements.lock ($python)" >&2
  rm -rf "$dest"
  mkdir -p "$dest"
  export UV_PYTHON_DOWNLOADS=never UV_CACHE_DIR="$PWD/target/uv-cache"
  "$uv" venv -q --python "$python" "$dest/venv" >&2
  # the lock is complete (overrides.txt went into it): install exactly it, resolving nothing,
  # with byte code compiled as pip leaves it (the agent starts as its users start it)
  "$uv" pip sync -q --compile-bytecode --python "$dest/venv/bin/python" "$here/requirements.lock" >&2
  site=$("$dest/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  src="$PWD/$dest/src"
  mkdir -p "$src"
  for package in "$@"; do
    # the sources only: no compiled extensions, no bundled executables
    (cd "$site" && find "$package" -type f ! -name '*.so' ! -name '*.pyc' ! -path '*/_bin/*' -print0 \
      | xargs -0 cp --parents -t "$src")
  done
  echo "$want" > "$dest/.lock.sha256"
fi
echo "$PWD/$dest"
