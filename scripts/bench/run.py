#!/usr/bin/env python3
"""Runs benchmark commands alternately (A B C A B C ...) under GNU time and prints, per
command, the median wall and cpu seconds, cpu/wall, peak memory, lines per second, and the
ratios of acp-patch's medians to its anchors'.

Usage: run.py RUNS SPEC.json   (SPEC: {"groups": [{"title", "lines", "commands": [{"name",
"argv"}], "ratios": [[a, b], ...]}]})"""
import json
import statistics
import subprocess
import sys
import tempfile


def timed(argv):
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", "-o", t.name, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall, user, sys_, kib = t.read().split()[-4:]
    return {"wall": float(wall), "cpu": float(user) + float(sys_), "kib": int(kib), "rc": p.returncode}


def main():
    runs, spec = int(sys.argv[1]), json.load(open(sys.argv[2]))
    for group in spec["groups"]:
        cmds = group["commands"]
        samples = {c["name"]: [] for c in cmds}
        for c in cmds:  # one warm-up each (file cache), not counted
            timed(c["argv"])
        for _ in range(runs):
            for c in cmds:
                samples[c["name"]].append(timed(c["argv"]))
        print(f"== {group['title']}: {group.get('lines', 0):,} lines ({runs} runs each, alternating)")
        med = {}
        for c in cmds:
            s = samples[c["name"]]
            wall = statistics.median(x["wall"] for x in s)
            cpu = statistics.median(x["cpu"] for x in s)
            kib = max(x["kib"] for x in s)
            med[c["name"]] = (wall, cpu)
            n = group.get("lines", 0)
            rate = f"{n / wall / 1e6:6.2f} M lines/s" if wall > 0 and n else ""
            rcs = sorted({x["rc"] for x in s})
            print(
                f"  {c['name']:<34} wall {wall:7.3f} s  cpu {cpu:7.3f} s  cpu/wall {cpu / max(wall, 1e-3):4.2f}"
                f"  peak {kib / 1024:7.1f} MiB  {rate}  exit {','.join(map(str, rcs))}"
            )
        for a, b in group.get("ratios", []):
            (wa, ca), (wb, cb) = med[a], med[b]
            print(f"  ratio {a} / {b}: wall {wa / max(wb, 1e-3):.2f}  cpu {ca / max(cb, 1e-3):.2f}")


if __name__ == "__main__":
    main()
