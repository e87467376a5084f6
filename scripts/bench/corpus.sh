#!/usr/bin/env bash
# Builds the benchmark corpus from the registries (PyPI, npm, crates.io), pinned, into DEST
# (default target/bench/corpus) as one git repository: Hermes Agent (an ACP agent, the one
# tree here acp-patch patches) beside large projects that hold no agent, in the three
# languages. Downloads are cached under target/bench/downloads; a built corpus is reused.
# Usage: scripts/bench/corpus.sh [DEST]      prints DEST
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-target/bench/corpus}
dl=target/bench/downloads
stamp="$dest.version"
version=1 # bump when the list below changes
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ]; then
  echo "$dest"
  exit 0
fi
mkdir -p "$dl"
rm -rf "$dest"
mkdir -p "$dest"

pypi() { # name version kind(wheel|sdist) -> unpacked under $dest/python/<name>
  local name=$1 ver=$2 kind=$3 out="$dest/python/$1"
  local flags=(--no-deps -q --disable-pip-version-check -d "$dl/pypi-$name-$ver")
  [ "$kind" = sdist ] && flags+=(--no-binary :all:) || flags+=(--only-binary :all:)
  [ -d "$dl/pypi-$name-$ver" ] || python3 -m pip download "${flags[@]}" "$name==$ver" >&2
  mkdir -p "$out"
  local f
  f=$(ls "$dl/pypi-$name-$ver"/* | head -1)
  case $f in
    *.whl) python3 -m zipfile -e "$f" "$out" ;;
    *.tar.gz) tar -xzf "$f" -C "$out" --strip-components=1 ;;
  esac
}
npm_pkg() { # name version -> unpacked under $dest/typescript/<name>
  local name=$1 ver=$2 safe=${1//\//+} out="$dest/typescript/${1//\//+}"
  if [ ! -f "$dl/npm-$safe-$ver.tgz" ]; then
    (cd "$dl" && npm pack -q "$name@$ver" >/dev/null && mv "$(ls -t ./*.tgz | head -1)" "npm-$safe-$ver.tgz")
  fi
  mkdir -p "$out"
  tar -xzf "$dl/npm-$safe-$ver.tgz" -C "$out" --strip-components=1
}
crate() { # name version -> unpacked under $dest/rust/<name>
  local name=$1 ver=$2 out="$dest/rust/$1"
  [ -f "$dl/crate-$name-$ver.crate" ] || curl -sSfL -o "$dl/crate-$name-$ver.crate" \
    "https://static.crates.io/crates/$name/$name-$ver.crate"
  mkdir -p "$out"
  tar -xzf "$dl/crate-$name-$ver.crate" -C "$out" --strip-components=1
}

# the agent: Hermes Agent 0.19.0 (its wheel carries the full source)
pypi hermes-agent 0.19.0 wheel
# Python projects without an agent
pypi openai-agents 0.24.0 wheel
pypi libcst 1.9.0 sdist
# TypeScript/JavaScript (npm ships their built .js and .d.ts)
for p in "@langchain/core 1.4.0" "langchain 1.5.14" "@langchain/openai 1.6.0" \
  "@langchain/community 1.1.29" "@langchain/langgraph 1.7.3" "jscodeshift 17.4.0"; do
  npm_pkg $p
done
# Rust
for c in "tokio 1.54.1" "tokio-util 0.7.20" "ripgrep 15.2.0" "grep-searcher 0.1.17" \
  "grep-printer 0.3.1" "grep-regex 0.1.14" "ignore 0.4.35" "globset 0.4.22" \
  "ast-grep 0.51.1" "ast-grep-core 0.51.1" "ast-grep-config 0.51.1" \
  "ast-grep-language 0.51.1" "ast-grep-lsp 0.51.1"; do
  crate $c
done

# one git repository, committed (a clean tree, as a user's monorepo would be)
(
  cd "$dest"
  git init -q
  git -c user.name=bench -c user.email=bench@localhost add -A
  git -c user.name=bench -c user.email=bench@localhost commit -q -m corpus
)
echo "$version" > "$stamp"
echo "$dest"
