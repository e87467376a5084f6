#!/usr/bin/env bash
# Figures for the speed and memory goals that tests never time (see tests/it/hostile.rs):
#   1. a file to patch with N comment lines: time must grow linearly with N (the ratio of
#      16,000 lines to 2,000 lines is ~8 when linear, ~64 when quadratic);
#   2. `apply /` and `verify /`: the walk stops at its limit and refuses, in bounded time
#      and memory (wall seconds and peak RSS printed).
# Usage: scripts/bench.sh [BIN]   (default: target/debug/acp-patch, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/acp-patch}
[ -x "$bin" ] || cargo build -q
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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
"$bin" verify / 2>&1 | tail -1 | cut -c1-160
