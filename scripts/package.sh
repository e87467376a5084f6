#!/usr/bin/env bash
# The crate as `cargo publish` would upload it: the listing must hold every embedded template
# and none of the fixtures or tests, and the packaged crate must build on its own (cargo
# unpacks and builds it; `include_str!` of a template that did not ship fails the build).
# The build reuses target/'s compiled dependencies, so it costs one build of acp-patch.
# Arguments go to `cargo package` (e.g. --allow-dirty on a tree with uncommitted changes).
set -euo pipefail
cd "$(dirname "$0")/.."

listed=$(cargo package --locked --list "$@")
missing=$(git ls-files templates src | grep -vxF -f <(echo "$listed") || true)
if [ -n "$missing" ]; then
  echo "package.sh: not in the packaged crate:" >&2
  echo "$missing" >&2
  exit 1
fi
extra=$(echo "$listed" | grep -E '^(fixtures|tests|scripts|target)/' || true)
if [ -n "$extra" ]; then
  echo "package.sh: the packaged crate should not ship:" >&2
  echo "$extra" >&2
  exit 1
fi

cargo package --locked "$@"
# the verified build leaves its binary in target/debug: outside a git checkout it names the
# commit from the .cargo_vcs_info.json cargo wrote into the package
version=$(target/debug/acp-patch --version)
if ! [[ "$version" =~ ^acp-patch\ [0-9.]+\ \([0-9a-f]{12}\)$ ]]; then
  echo "package.sh: the packaged build's --version does not name its commit: $version" >&2
  exit 1
fi
echo "package.sh: $(echo "$listed" | wc -l) files; $version" >&2
