#!/usr/bin/env python3
"""tests/collector/layering_check.py: the collector's folders import only down the pipeline.

Each stage folder of collector/ has a floor (collector/README.md, "The stages"); a file may include
headers of its own folder and of folders on lower floors, never of a folder on its own floor or above
(a new folder must be given a floor here). Exits 1 naming every include that points the wrong way."""
import pathlib
import re
import sys

FLOORS = {
    "base": 0, "model": 0,
    "ingest": 1, "symbolize": 1, "timeline": 1,
    "analyze": 2,
    "findings": 3, "replay": 3,
    "report": 4,
    "export": 5, "compare": 5,
    "live": 6, "attach": 6,
    "cli": 7,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"collector/([^/"]+)/[^"]+"', re.M)


def main(root: pathlib.Path) -> int:
    collector = root / "collector"
    bad, checked = [], 0
    loose = [p.name for p in collector.iterdir() if p.is_file() and p.suffix in (".cpp", ".h")]
    for name in loose:
        bad.append(f"collector/{name}: a source file outside every stage folder")
    for path in sorted(collector.rglob("*")):
        if path.suffix not in (".cpp", ".h") or path.parent == collector:
            continue
        stage = path.relative_to(collector).parts[0]
        if stage not in FLOORS:
            bad.append(f"{path.relative_to(root)}: folder '{stage}' has no floor in {pathlib.Path(__file__).name}")
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            checked += 1
            if target == stage:
                continue
            if target not in FLOORS:
                bad.append(f"{path.relative_to(root)}: includes from unknown folder '{target}'")
            elif FLOORS[target] >= FLOORS[stage]:
                bad.append(f"{path.relative_to(root)}: {stage} (floor {FLOORS[stage]}) includes {target} "
                           f"(floor {FLOORS[target]}): imports must point down the pipeline")
    for line in bad:
        print(line)
    print(f"layering: {checked} includes checked, {len(bad)} pointing the wrong way")
    return 1 if bad else 0


def selftest() -> int:
    """The check itself: a tree with one include pointing up, one sideways, one loose file must fail."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for rel, text in {"collector/model/model.h": "",
                          "collector/ingest/ingest.h": '#include "collector/model/model.h"\n',
                          "collector/analyze/analyze.cpp": '#include "collector/report/report.h"\n',
                          "collector/export/common.cpp": '#include "collector/compare/diff.h"\n',
                          "collector/stray.cpp": ""}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        rc = main(root)
    print("selftest:", "ok" if rc == 1 else "FAILED (a bad tree passed)")
    return 0 if rc == 1 else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--selftest"]:
        sys.exit(selftest())
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])))
