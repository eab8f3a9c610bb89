#!/usr/bin/env python3
"""api_rows.py: checks the API summary of a `gpuspy report --format json` report: each NAME=COUNT[:CATEGORY]
argument names an entry point by its base name (no _v2/_ptsz/_ptds), which must have exactly COUNT calls
summed over its ABIs (and that category, if given). Used where the simulated driver's trace has no record
to hold a call against (allocations, green contexts, discards). Exit 0 all hold, 1 one did not, 2 bad input."""
import json
import re
import sys


def base(name):
    name = re.sub(r"_(ptsz|ptds)$", "", name)
    return re.sub(r"_v[0-9]+$", "", name)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"api_rows.py: cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    counts, categories = {}, {}
    for row in report.get("apis", []):
        b = base(row["api"])
        counts[b] = counts.get(b, 0) + row["count"]
        categories.setdefault(b, set()).add(row.get("category", ""))
    failed = 0
    for arg in argv[2:]:
        m = re.fullmatch(r"(\w+)=(\d+)(?::(\w+))?", arg)
        if not m:
            print(f"api_rows.py: bad argument {arg}", file=sys.stderr)
            return 2
        name, want, category = m.group(1), int(m.group(2)), m.group(3)
        got = counts.get(name, 0)
        ok = got == want and (category is None or categories.get(name) == {category})
        print(f"{'ok  ' if ok else 'FAIL'} api {name}: {got} calls (expected {want})"
              + (f", category {sorted(categories.get(name, []))} (expected {category})" if category else ""))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
