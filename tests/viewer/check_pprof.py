#!/usr/bin/env python3
# tests/viewer/check_pprof.py: `gpuspy export --format pprof` decoded on its own (profile.proto by field
# number, as github.com/google/pprof's proto/profile.proto defines it; no protobuf library) and checked
# against `gpuspy report --format json` of the same capture: the sample types, every sample's locations
# resolving to functions, the CUDA call at the leaf (a launch: the kernel below it), and the totals:
# calls = the processes' calls, cuda_host = their cuda_api_ns, blocked = the syncs' blocked_ns, gpu = the
# devices' measured span lengths (kernel_ns + transfer_ns + other_ns).
# usage: check_pprof.py PROFILE.pb.gz REPORT.json
import gzip
import json
import sys

fails = 0


def check(ok, what):
    global fails
    print(("  ok   " if ok else "  FAIL ") + what)
    fails += 0 if ok else 1


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a message: ints for varints, bytes for length-delimited."""
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError(f"wire type {w} at field {f}")
        yield f, w, v


def packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


raw = open(sys.argv[1], "rb").read()
check(raw[:2] == b"\x1f\x8b", "the profile is gzip-compressed")
prof = gzip.decompress(raw)
report = json.load(open(sys.argv[2]))

strings, types, samples, functions, locations = [], [], [], {}, {}
for f, w, v in fields(prof):
    if f == 6:
        strings.append(v.decode("utf-8"))
for f, w, v in fields(prof):
    if f == 1:
        t = {g: x for g, _, x in fields(v)}
        types.append((strings[t.get(1, 0)], strings[t.get(2, 0)]))
    elif f == 2:
        s = {"loc": [], "val": [], "labels": {}}
        for g, gw, x in fields(v):
            if g == 1:
                s["loc"] += packed(x) if gw == 2 else [x]
            elif g == 2:
                s["val"] += packed(x) if gw == 2 else [x]
            elif g == 3:
                lab = {h: y for h, _, y in fields(x)}
                s["labels"][strings[lab.get(1, 0)]] = lab.get(3, 0)
        samples.append(s)
    elif f == 4:
        loc = {"lines": []}
        for g, _, x in fields(v):
            if g == 1:
                loc["id"] = x
            elif g == 4:
                ln = {h: y for h, _, y in fields(x)}
                loc["lines"].append((ln.get(1, 0), ln.get(2, 0)))
        locations[loc["id"]] = loc
    elif f == 5:
        fn = {g: x for g, _, x in fields(v)}
        functions[fn[1]] = (strings[fn.get(2, 0)], strings[fn.get(4, 0)])

check(types == [("calls", "count"), ("cuda_host", "nanoseconds"), ("blocked", "nanoseconds"), ("gpu", "nanoseconds")],
      f"sample types calls, cuda_host, blocked, gpu: {types}")
check(samples and all(len(s["val"]) == 4 for s in samples), f"{len(samples)} samples, each with 4 values")
bad = [s for s in samples if not s["loc"] or any(l not in locations or not locations[l]["lines"] or
                                                   locations[l]["lines"][0][0] not in functions for l in s["loc"])]
check(not bad, f"every sample's locations resolve to functions ({len(bad)} do not)")
pids = {p["pid"] for p in report["processes"]}
check(all(s["labels"].get("pid") in pids for s in samples), "every sample is labelled with a pid of the report")


def leaf(s, k=0):
    return functions[locations[s["loc"][k]]["lines"][0][0]]


check(all(leaf(s)[1] in ("CUDA", "GPU kernel") for s in samples), "every sample's leaf is the CUDA call or the kernel it launched")
kernels = {k["name"] for k in report["kernels"]}
launched = {leaf(s)[0] for s in samples if leaf(s)[1] == "GPU kernel"}
check(launched <= kernels and (launched or not report["launches"]["count"]),
      f"the kernels below the launches are the report's: {sorted(launched)} of {sorted(kernels)}")
total = [sum(s["val"][i] for s in samples) for i in range(4)]
want = [sum(p["calls"] for p in report["processes"]), sum(p["cuda_api_ns"] for p in report["processes"]),
        sum(s["blocked_ns"] for s in report["syncs"]),
        sum(d["kernel_ns"] + d["transfer_ns"] + d["other_ns"] for d in report["devices"])]
for name, got, exp in zip(("calls", "cuda_host", "blocked", "gpu"), total, want):
    check(got == exp, f"{name} total {got} = the report's {exp}")
sys.exit(1 if fails else 0)
