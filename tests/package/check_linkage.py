#!/usr/bin/env python3
"""tests/package/check_linkage.py: every ELF file in the release tarball loads on a bare glibc system.

For each shared object and executable in the unpacked tarball:
  - `readelf -d`: its NEEDED libraries are glibc's, libstdc++/libgcc_s, or files the tarball ships,
    and it carries no RPATH/RUNPATH into the build machine;
  - `ldd`: every library resolves, and nothing outside that set is pulled in, except liblzma.so.5 under
    the bundled libunwind.so.8 (part of every glibc distribution's base system: dpkg and rpm need it);
  - the glibc and libstdc++ symbol versions it requires are no newer than the README promises
    (glibc 2.34 and GCC 11's libstdc++: RHEL 9, Ubuntu 22.04). Building on Debian 12 (glibc 2.36) keeps
    newer symbols out of reach anyway; this catches a call or a static runtime that raises the floor.
    Raise MAX_VERSION only together with the README's "Using gpuspy on a server".
bin/gpuspy itself needs nothing beyond glibc and the C++ runtime: the `collect --metrics` plugin
(lib/gpuspy/libgpuspy_metrics.so) and the libraries it needs are dlopen()ed, only for --metrics, and the
plugin exports only its gpuspy_metrics_* entry points.
And libgpuspy.so exports nothing that shim/exports.map's `global:` patterns do not name: a preloaded
library's symbols interpose on the whole process.

Usage: check_linkage.py TARBALL EXPORTS_MAP
"""
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libstdc++.so.6",
                  "libgcc_s.so.1", "ld-linux-x86-64.so.2"}
# Beyond those: liblzma, for the bundled libunwind only (ldd also shows the vDSO).
ALLOWED_INDIRECT = {"libunwind.so.8": {"liblzma.so.5"}}
MAX_VERSION = {"GLIBC": (2, 34), "GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13)}

failures = []


def fail(message):
    failures.append(message)
    print(f"check_linkage: FAIL: {message}", file=sys.stderr)


def output(argv):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True).stdout


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def export_patterns(map_path):
    """The patterns in the `global:` part of a GNU ld version script."""
    with open(map_path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    match = re.search(r"global\s*:(.*?)(?:local\s*:|\})", text, re.S)
    if not match:
        raise SystemExit(f"check_linkage: no global: section in {map_path}")
    if "extern" in match.group(1):
        raise SystemExit(f"check_linkage: {map_path} uses extern blocks, which this check does not read")
    return [p.strip() for p in match.group(1).split(";") if p.strip()]


def check_object(path, name, shipped):
    dynamic = output(["readelf", "-d", "-W", path])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    # bin/gpuspy loads the shipped libraries by dlopen() only (the metrics plugin, for --metrics).
    allowed = ALLOWED_NEEDED | (set() if name == "gpuspy" else set(shipped)) | ALLOWED_INDIRECT.get(name, set())
    for lib in needed:
        if lib not in allowed:
            fail(f"{name} needs {lib}, which the target may lack")
    for tag, value in re.findall(r"\((RPATH|RUNPATH)\)\s+Library (?:rpath|runpath): \[([^\]]+)\]", dynamic):
        for entry in value.split(":"):
            if not entry.startswith("$ORIGIN"):
                fail(f"{name} has {tag} {entry}, a path on the build machine")

    ldd = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    if "not a dynamic executable" in ldd:
        return needed
    allowed |= {"linux-vdso.so.1"}
    for line in ldd.splitlines():
        line = line.strip()
        soname = os.path.basename(line.split()[0]) if line else ""
        if "not found" in line:
            fail(f"{name}: ldd cannot resolve {line}")
        elif soname and soname not in allowed:
            fail(f"{name} loads {soname} (ldd: {line})")

    versions = re.findall(r"\b(GLIBC|GLIBCXX|CXXABI)_([0-9.]+)\b", output(["readelf", "--dyn-syms", "-W", "-V", path]))
    for family, version in set(versions):
        if tuple(int(x) for x in version.split(".")) > MAX_VERSION[family]:
            fail(f"{name} requires {family}_{version}, newer than the README promises: "
                 f"{family}_{'.'.join(map(str, MAX_VERSION[family]))}")
    return needed


def check_exports(path, patterns, name="libgpuspy.so", allowed_by="shim/exports.map"):
    exported = []
    for line in output(["readelf", "--dyn-syms", "-W", path]).splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(fields) < 8 or not fields[0].rstrip(":").isdigit():
            continue
        bind, ndx, symbol = fields[4], fields[6], fields[7]
        if ndx == "UND" or bind == "LOCAL":
            continue
        symbol = symbol.split("@")[0]
        exported.append(symbol)
        if not any(fnmatch.fnmatchcase(symbol, p) for p in patterns):
            fail(f"{name} exports {symbol}, which {allowed_by} does not allow")
    if name == "libgpuspy.so" and not any(s.startswith("cu") for s in exported):
        fail("libgpuspy.so exports no cu* symbol: the export list could not be read or the shim is empty")
    return exported


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tarball, exports_map = sys.argv[1:]
    patterns = export_patterns(exports_map)
    with tempfile.TemporaryDirectory(prefix="gpuspy-linkage-") as tmp:
        subprocess.run(["tar", "-xzf", tarball, "-C", tmp], check=True)
        objects = []
        for root, _, files in os.walk(tmp):
            for f in files:
                path = os.path.join(root, f)
                if not os.path.islink(path) and is_elf(path):
                    objects.append(path)
        shipped = {os.path.basename(p) for p in objects}
        for must in ("gpuspy", "libgpuspy.so", "libunwind.so.8", "libcuda.so.1", "libgpuspy_metrics.so"):
            if must not in shipped:
                fail(f"the tarball has no {must}")
        for path in sorted(objects):
            name = os.path.basename(path)
            needed = check_object(path, name, shipped)
            print(f"check_linkage: {os.path.relpath(path, tmp)}: NEEDED {' '.join(needed)}")
            if name == "libgpuspy.so":
                exported = check_exports(path, patterns)
                print(f"check_linkage: libgpuspy.so exports {len(exported)} symbols, all within {exports_map}")
            if name == "libgpuspy_metrics.so":
                exported = check_exports(path, ["gpuspy_metrics_*"], name, "the plugin's seam (collector/live/metrics_plugin.h)")
                if "gpuspy_metrics_open" not in exported:
                    fail("libgpuspy_metrics.so does not export gpuspy_metrics_open")
    if failures:
        print(f"check_linkage: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print("check_linkage: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
