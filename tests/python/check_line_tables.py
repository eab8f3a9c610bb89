"""tests/python/check_line_tables.py TOOL: holds the shim's line-table reader (line_table_tool, over
shim/python_lines.cpp) against the running interpreter's own line of every code unit, for every code
object of a few standard-library modules and of cuda_copies.py (long functions, line jumps over 127 and
255, code units without a line): 3.10+ by co_lines(), 3.9 by dis.findlinestarts over co_lnotab. Prints
the first differences and exits 1 where any unit differs."""
import dis
import subprocess
import sys
import types
from pathlib import Path

LNOTAB, LINETABLE, LOCATIONS = 1, 2, 3
minor = sys.version_info[1]
kind = LNOTAB if minor == 9 else LINETABLE if minor == 10 else LOCATIONS


def codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def expected(code):
    units = len(code.co_code) // 2
    lines = [-1] * units
    if kind == LNOTAB:
        starts = list(dis.findlinestarts(code))
        line, k = code.co_firstlineno, 0
        for u in range(units):
            while k < len(starts) and starts[k][0] <= 2 * u:
                line = starts[k][1]
                k += 1
            lines[u] = line
        return lines
    for start, end, line in code.co_lines():
        for u in range(start // 2, end // 2):
            lines[u] = -1 if line is None else line
    return lines


def main():
    tool = sys.argv[1]
    files = [Path(__file__).with_name("cuda_copies.py")]
    for name in ("argparse", "dis", "inspect", "typing", "tarfile", "difflib"):
        files.append(Path(__import__(name).__file__))
    objs = []
    for f in files:
        objs.extend(codes(compile(f.read_text(encoding="utf-8"), str(f), "exec")))
    table = lambda c: c.co_lnotab if kind == LNOTAB else c.co_linetable
    text = "".join(f"{kind} {c.co_firstlineno} {len(c.co_code) // 2} {table(c).hex() or '-'}\n" for c in objs)
    out = subprocess.run([tool], input=text, capture_output=True, text=True, check=True).stdout.splitlines()
    if len(out) != len(objs):
        print(f"check_line_tables.py: {len(out)} answers for {len(objs)} code objects")
        return 1
    bad = 0
    for c, got in zip(objs, out):
        want = expected(c)
        got = [int(v) for v in got.split()] if got else []
        if got != want:
            bad += 1
            if bad <= 5:
                u = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
                print(f"{c.co_filename}:{c.co_firstlineno} {c.co_name}: unit {u}: shim {got[u] if u < len(got) else None}, "
                      f"interpreter {want[u]}")
    units = sum(len(c.co_code) // 2 for c in objs)
    print(f"python 3.{minor}: {len(objs)} code objects, {units} code units, {bad} code objects differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
