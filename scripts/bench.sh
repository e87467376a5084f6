#!/usr/bin/env bash
# Figures for the speed and memory goals that tests never time:
#   1. a monorepo-shaped corpus (scripts/bench/corpus.sh: Hermes Agent beside large
#      projects without an agent, from PyPI, npm and crates.io; or CORPUS given): verify and
#      apply --dry-run against ast-grep's one-pattern search and `rg -l`, run alternately,
#      medians, ratios, lines per second, cpu/wall and peak memory (GNU time);
#   2. a file to patch with N comment lines: time must grow linearly with N (the ratio of
#      16,000 lines to 2,000 lines is ~8 when linear, ~64 when quadratic);
#   3. `apply /` and `verify /`: the walk stops at its limit and refuses, in bounded time
#      and memory (wall seconds and peak RSS printed).
# Usage: scripts/bench.sh [--runs N] [--corpus DIR] [BIN]
#   (default: 5 runs, the corpus built under target/bench, target/release/acp-patch built)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=5
corpus=""
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    *) break ;;
  esac
done
bin=${1:-target/release/acp-patch}
[ -n "${1:-}" ] || cargo build -q --release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
tools=$(scripts/bench/tools.sh)
[ -n "$corpus" ] || corpus=$(scripts/bench/corpus.sh)
corpus=$(cd "$corpus" && pwd)
# the agent's own folder in the corpus: the folder holding Hermes' ACP adapter
agent=$(dirname "$(find "$corpus" -type d -name acp_adapter -print -quit)")
count_lines() { (cd "$1" && git ls-files -z -- '*.py' '*.ts' '*.tsx' '*.mts' '*.cts' '*.js' '*.mjs' '*.cjs' '*.jsx' '*.rs' 2>/dev/null | xargs -0 cat -- | wc -l); }
corpus_lines=$(count_lines "$corpus")
agent_lines=$(find "$agent" -name '*.py' -print0 | xargs -0 cat -- | wc -l)
pattern='$A.agent_progress_callback($$$B)'
python3 - "$bin" "$tools" "$corpus" "$agent" "$pattern" "$corpus_lines" "$agent_lines" > "$work/spec.json" <<'PY'
import json, sys
bin, tools, corpus, agent, pattern, corpus_lines, agent_lines = sys.argv[1:]
sg = [f"{tools}/ast-grep", "run", "-l", "py", "-p", pattern]
print(json.dumps({"groups": [
    {"title": f"corpus {corpus}", "lines": int(corpus_lines), "commands": [
        {"name": "acp-patch verify", "argv": [bin, "verify", corpus]},
        {"name": "acp-patch apply --dry-run", "argv": [bin, "apply", "--dry-run", corpus]},
        {"name": "ast-grep run -p (one pattern)", "argv": sg + [corpus]},
        {"name": "rg -l agent_progress_callback", "argv": [f"{tools}/rg", "-l", "agent_progress_callback", corpus]},
    ], "ratios": [
        ["acp-patch verify", "ast-grep run -p (one pattern)"],
        ["acp-patch verify", "rg -l agent_progress_callback"],
        ["acp-patch apply --dry-run", "ast-grep run -p (one pattern)"],
        ["acp-patch apply --dry-run", "rg -l agent_progress_callback"],
    ]},
    {"title": f"the agent alone {agent}", "lines": int(agent_lines), "commands": [
        {"name": "acp-patch verify", "argv": [bin, "verify", agent]},
        {"name": "acp-patch apply --dry-run", "argv": [bin, "apply", "--dry-run", agent]},
        {"name": "ast-grep run -p (one pattern)", "argv": sg + [agent]},
    ], "ratios": [
        ["acp-patch verify", "ast-grep run -p (one pattern)"],
        ["acp-patch apply --dry-run", "ast-grep run -p (one pattern)"],
    ]},
]}))
PY
python3 scripts/bench/run.py "$runs" "$work/spec.json"

# wall seconds and peak KiB of one run (output discarded)
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>&1 || true
  tail -1 "$work/time"
}

comment_agent() { # lang lines -> folder
  local lang=$1 n=$2 dir="$work/$1-$2"
  case $lang in
    python)
      cp -r fixtures/python/asyncio_agent/before "$dir"
      python3 - "$dir/streamy/agent.py" "$n" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
text = open(path).read()
notes = "".join(f"# note {i}: why the next class looks the way it does\n" for i in range(n))
open(path, "w").write(text.replace("class StreamyAgent(", notes + "class StreamyAgent(", 1))
EOF
      ;;
    typescript)
      cp -r fixtures/typescript/sdk2_agent/before "$dir"
      python3 - "$dir/src/agent.ts" "$n" <<'EOF'
import sys
path, n = sys.argv[1], int(sys.argv[2])
text = open(path).read()
notes = "".join(f"// note {i}: why the next class looks the way it does\n" for i in range(n))
i = text.index("export class")
open(path, "w").write(text[:i] + notes + text[i:])
EOF
      ;;
  esac
  echo "$dir"
}

echo "== apply --dry-run on a file with N comment lines (seconds; ratio to 2,000 lines)"
for lang in python typescript; do
  base=""
  for n in 2000 8000 16000; do
    dir=$(comment_agent "$lang" "$n")
    read -r secs kib < <(measure "$bin" apply --dry-run "$dir")
    [ -n "$base" ] || base=$secs
    ratio=$(python3 -c "print(f'{$secs / max($base, 0.001):.1f}')")
    printf '%-11s %6d lines  %6.2f s  x%-5s (linear: x%d)\n' "$lang" "$n" "$secs" "$ratio" $((n / 2000))
  done
done

echo "== the whole file system: refused at the walk's limit"
for cmd in "apply --dry-run" "verify"; do
  read -r secs kib < <(measure "$bin" $cmd /)
  printf '%-16s /  %6.2f s  %7d KiB peak\n' "$cmd" "$secs" "$kib"
done
# the refusal itself (exit 2 by design: it is what this part measures)
{ "$bin" verify / 2>&1 || true; } | tail -1 | cut -c1-160
