#!/usr/bin/env python3
"""tests/report/text_layout.py: the text report's first screen and its width (issue 31), on captures of
several programs: the verdict comes first (before the findings' details, any table and any note, within
the first lines), the notes come last; at widths 60, 80 and 120 (--width, and COLUMNS for one of them)
no line is longer than the width and no word is broken or clipped: every word (a run of letters, digits
and underscores) of the narrow report is a word of the 400-column one; the raw evidence only with
--verbose. usage: text_layout.py GPUSPY CAPTURE..."""
import os
import re
import subprocess
import sys

gpuspy, captures = sys.argv[1], sys.argv[2:]
failed = 0


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed += not ok


def report(cap, *args, env=None):
    r = subprocess.run([gpuspy, "report", cap, *args], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        check(False, f"gpuspy report {cap} {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


words = lambda text: set(re.findall(r"[A-Za-z0-9_]+", text))
for cap in captures:
    name = os.path.basename(cap)
    wide = report(cap, "--width", "400")
    lines = wide.splitlines()
    first = lambda pat: next((i for i, l in enumerate(lines) if re.search(pat, l)), None)
    verdict, findings, note, table = first(r"^== Verdict"), first(r"^== Findings"), first(r"^ note: "), first(r"^== (Processes|Devices)")
    check(verdict is not None and verdict < 8 and all(x is None or verdict < x for x in (findings, note, table)),
          f"{name}: the verdict opens the report (line {verdict}), before the findings ({findings}), tables ({table}) and notes ({note})")
    notes_at = first(r"^== Notes")
    check(note is None or (notes_at is not None and note > notes_at and all(
        not l.startswith("== ") for l in lines[notes_at + 1:])), f"{name}: the notes come last ({notes_at})")
    verdict_block = lines[verdict + 1:findings] if verdict is not None and findings is not None else []
    check(any(l.startswith((" Host-bound", " GPU-bound", " No GPU work", " Waiting for work")) for l in verdict_block),
          f"{name}: the verdict says what bounds the run")
    every = words(wide)
    for width in (60, 80, 120):
        env = None
        args = ["--width", str(width)]
        if width == 120:  # from the environment, as a shell exports it
            env = dict(os.environ, COLUMNS=str(width))
            args = []
        text = report(cap, *args, env=env)
        long = [l for l in text.splitlines() if len(l) > width]
        check(not long, f"{name}: at {width} columns no line is longer ({len(long)}: {long[:2]})")
        broken = sorted(words(text) - every)
        check(not broken, f"{name}: at {width} columns no word is broken or clipped ({broken[:8]})")
    verbose = report(cap, "--verbose")
    check("evidence:" in verbose and "evidence:" not in wide if "findings" in wide.lower() and "No findings" not in wide else True,
          f"{name}: the raw evidence only with --verbose")
sys.exit(1 if failed else 0)
