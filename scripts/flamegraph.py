#!/usr/bin/env python3
"""Flame graphs from `perf script` output, with no dependency beyond Python 3.

    flamegraph.py on-cpu  PERF_SCRIPT_TXT OUT.svg [--title T]
    flamegraph.py off-cpu PERF_SCRIPT_TXT OUT.svg [--title T] [--root PID]

on-cpu: each sample's stack counts once (perf record -g, a fixed frequency).
off-cpu: from `sched:sched_switch` (perf record -a -g) and `sched:sched_process_fork`
events: the time each thread spent switched out, charged to the stack it switched out
with; only threads of processes descending from --root (the profiled command) count. The
width of a frame is the time spent waiting below it: where a program waits (a lock, an
fsync, a channel, a sleep).

Also writes OUT.folded (one `frame;frame;frame value` line per stack), the format other
flame-graph tools read.
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections import defaultdict

HEADER = re.compile(r"^\s*(\S.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+\.\d+):\s+(?:\d+\s+)?(\S+):(.*)$")
SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
FORK = re.compile(r"comm=(.*?) pid=(\d+) child_comm=(.*?) child_pid=(\d+)")


def events(lines):
    """(header match, [frames leaf first]) for each event of `perf script`."""
    head, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if head:
                yield head, frames
            head, frames = None, []
            continue
        m = HEADER.match(line)
        if m and not line.startswith(("\t", " " * 8)):
            if head:
                yield head, frames
            head, frames = m, []
        elif head:
            parts = line.strip().split(None, 1)
            name = parts[1] if len(parts) > 1 else parts[0]
            name = re.sub(r"\+0x[0-9a-f]+", "", name)
            name = re.sub(r" \((/[^)]*)\)$", lambda p: " [" + p.group(1).rsplit("/", 1)[-1] + "]", name)
            frames.append(name)
    if head:
        yield head, frames


def fold(frames, comm):
    return ";".join([comm] + list(reversed(frames))) if frames else comm


def on_cpu(lines):
    stacks = defaultdict(float)
    for head, frames in events(lines):
        stacks[fold(frames, head.group(1))] += 1
    return stacks, "samples"


def off_cpu(lines, root):
    parent, out, stacks = {}, {}, defaultdict(float)
    wanted = {root} if root else None

    def ours(pid):
        if wanted is None:
            return True
        seen = set()
        while pid and pid not in seen:
            if pid in wanted:
                return True
            seen.add(pid)
            pid = parent.get(pid)
        return False

    tgid_of = {}
    for head, frames in events(lines):
        pid = int(head.group(2))
        tid = int(head.group(3) or head.group(2))
        ts = float(head.group(4))
        name, rest = head.group(5), head.group(6)
        tgid_of[tid] = pid
        if name.endswith("sched_process_fork"):
            f = FORK.search(rest)
            if f:
                parent[int(f.group(4))] = pid
        elif name.endswith("sched_switch"):
            s = SWITCH.search(rest)
            if not s:
                continue
            prev, nxt = int(s.group(2)), int(s.group(5))
            if prev and ours(tgid_of.get(prev, pid)):
                out[prev] = (ts, fold(frames, s.group(1)))
            if nxt in out:
                since, stack = out.pop(nxt)
                stacks[stack] += (ts - since) * 1e3
    return stacks, "ms off CPU"


def svg(stacks, unit, title):
    """A flame graph: the root at the bottom, each frame as wide as the value below it."""
    tree = {"name": "all", "value": 0.0, "kids": {}}
    for stack, value in stacks.items():
        node = tree
        node["value"] += value
        for frame in stack.split(";"):
            node = node["kids"].setdefault(frame, {"name": frame, "value": 0.0, "kids": {}})
            node["value"] += value

    def depth(n):
        return 1 + max((depth(k) for k in n["kids"].values()), default=0)

    width, row, top = 1200, 16, 40
    height = top + depth(tree) * row + 10
    total = tree["value"] or 1.0
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<text x="10" y="20" font-size="14">{html.escape(title)} '
           f'({tree["value"]:.0f} {unit})</text>']

    def draw(n, x, level):
        w = n["value"] / total * (width - 20)
        if w < 0.3:
            return
        y = height - 10 - (level + 1) * row
        hue = (sum(n["name"].encode()) % 40) + 10  # stable across runs
        label = html.escape(n["name"])
        share = 100 * n["value"] / total
        out.append(f'<g><title>{label} ({n["value"]:.1f} {unit}, {share:.2f}%)</title>'
                   f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 1}" '
                   f'fill="hsl({hue},80%,60%)"/>')
        if w > 40:
            chars = int(w / 7)
            text = label if len(label) <= chars else label[: max(chars - 2, 0)] + ".."
            out.append(f'<text x="{x + 3:.1f}" y="{y + row - 4}">{text}</text>')
        out.append("</g>")
        for kid in sorted(n["kids"].values(), key=lambda k: k["name"]):
            draw(kid, x, level + 1)
            x += kid["value"] / total * (width - 20)

    draw(tree, 10.0, 0)
    out.append("</svg>")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=("on-cpu", "off-cpu"))
    ap.add_argument("script", help="the output of `perf script`")
    ap.add_argument("out", help="the SVG to write")
    ap.add_argument("--title", default="")
    ap.add_argument("--root", type=int, default=0, help="off-cpu: the profiled command's pid")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    stacks, unit = on_cpu(lines) if args.kind == "on-cpu" else off_cpu(lines, args.root)
    if not stacks:
        print(f"{args.script}: no {args.kind} stacks found", file=sys.stderr)
        return 1
    base = args.out[:-4] if args.out.endswith(".svg") else args.out
    with open(base + ".folded", "w", encoding="utf-8") as f:
        for stack, value in sorted(stacks.items(), key=lambda kv: -kv[1]):
            f.write(f"{stack} {value:.3f}\n")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(svg(stacks, unit, args.title or args.kind))
    top = sorted(stacks.items(), key=lambda kv: -kv[1])[:5]
    print(f"{args.out}: {sum(stacks.values()):.0f} {unit}; heaviest stacks:")
    for stack, value in top:
        # The deepest frame of the program itself (the kernel's scheduler frames say little).
        frames = stack.split(";")
        own = next((f for f in reversed(frames) if "kernel.kallsyms" not in f), frames[-1])
        print(f"  {value:10.1f}  {own[:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
