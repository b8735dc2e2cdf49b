#!/usr/bin/env python3
"""Markdown tables for docs/RESULTS.md from what scripts/gpu/session.sh wrote under $OUT.

  summarize.py PATH...    (folders holding bench-step.jsonl / allreduce.txt / env.txt, or those files)

Tables: step throughput per setting (DYNAMIX vs the PyTorch loop with the same settings, and the
ratio DYNAMIX/PyTorch: > 1 means DYNAMIX is faster), best vs best per model, failed items, and
each `dynamix bench allreduce` run. Several records of one setting (runs from several calls) are
summarized by their median.
"""

import json
import os
import statistics
import sys

LAYOUT = {False: "contiguous", True: "channels_last"}


def inputs(paths):
    jsonl, allreduce, env = [], [], []
    for path in paths:
        if os.path.isdir(path):
            for name, bucket in (("bench-step.jsonl", jsonl), ("allreduce.txt", allreduce), ("env.txt", env)):
                if os.path.exists(os.path.join(path, name)):
                    bucket.append(os.path.join(path, name))
        elif path.endswith(".jsonl"):
            jsonl.append(path)
        elif os.path.basename(path).startswith("allreduce"):
            allreduce.append(path)
        elif os.path.basename(path).startswith("env"):
            env.append(path)
        else:
            sys.exit(f"summarize.py: do not know what {path} holds")
    return jsonl, allreduce, env


def load_records(files):
    records = []
    for path in files:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    records.append(json.loads(line))
                except ValueError as e:
                    sys.exit(f"summarize.py: {path}:{n}: not JSON ({e})")
    return records


def boolean(v):
    return v is True or v == "true"


def setting(r):
    return (r.get("model"), r.get("precision"), boolean(r.get("channels_last")))


def mode(r):
    """How a PyTorch record ran beyond the shared settings."""
    extra = []
    if boolean(r.get("cudnn_benchmark")):
        extra.append("cudnn.benchmark")
    if boolean(r.get("compile")):
        extra.append("torch.compile" + (f"({r['compile_mode']})" if r.get("compile_mode") else ""))
    if r.get("optimizer_impl") not in (None, "default"):
        extra.append(f"SGD {r['optimizer_impl']}")
    return ", ".join(extra)


def describe(r):
    m = mode(r) if r["impl"] == "pytorch" else (r.get("flags") or "")
    return f"{r.get('precision')}, {LAYOUT[boolean(r.get('channels_last'))]}" + (f", {m}" if m else "")


def median_of(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, digits=1):
    return "—" if v is None else f"{v:,.{digits}f}"


def step_tables(records):
    out = []
    ok = [r for r in records if r.get("ok")]
    devices = sorted({r.get("device_name") for r in ok if r.get("device_name")})
    same = {}
    for r in ok:
        # DYNAMIX records of a best mode (e.g. train.cudnn_benchmark=true) carry flags and another label.
        if r.get("label", "same-settings") == "same-settings" and not (mode(r) if r["impl"] == "pytorch" else r.get("flags")):
            same.setdefault((setting(r), r["impl"]), []).append(r)
    keys = sorted({k for k, _ in same}, key=lambda k: (str(k[0]), str(k[1]), k[2]))
    if keys:
        out.append("### Training step throughput, 1 rank, same settings"
                   + (f" ({', '.join(devices)})" if devices else ""))
        out.append("")
        out.append("Synthetic data; SGD (lr 0.01, momentum 0.9); PyTorch with its default cudnn.benchmark "
                   "(off, as in LibTorch). Ratio = DYNAMIX / PyTorch images/s (> 1: DYNAMIX faster). "
                   "`bare` is `dynamix bench step`'s own LibTorch loop; `train-metrics`: step_time of a "
                   "`dynamix train` run.")
        out.append("")
        out.append("| model | batch | precision | layout | DYNAMIX img/s | PyTorch img/s | DYNAMIX/PyTorch "
                   "| DYNAMIX ms/step | PyTorch ms/step | bare LibTorch img/s | DYNAMIX timed by |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for k in keys:
            d, p = same.get((k, "dynamix"), []), same.get((k, "pytorch"), [])
            d_ips, p_ips = median_of(d, "images_per_s"), median_of(p, "images_per_s")
            ratio = d_ips / p_ips if d_ips and p_ips else None
            batch = (d or p)[0].get("batch")
            note = lambda rs: f" (n={len(rs)})" if len(rs) > 1 else ""
            methods = ", ".join(sorted({r.get("method", "?") for r in d})) or "—"
            out.append(f"| {k[0]} | {batch} | {k[1]} | {LAYOUT[k[2]]} | {fmt(d_ips)}{note(d)} | {fmt(p_ips)}{note(p)} "
                       f"| {fmt(ratio, 3)} | {fmt(median_of(d, 'step_ms_median'), 2)} "
                       f"| {fmt(median_of(p, 'step_ms_median'), 2)} | {fmt(median_of(d, 'bare_images_per_s'))} "
                       f"| {methods} |")
        out.append("")

    models = sorted({r.get("model") for r in ok})
    if models:
        out.append("### Best vs best, 1 rank")
        out.append("")
        out.append("Each side's fastest setting; PyTorch's include cudnn.benchmark and torch.compile where run.")
        out.append("")
        out.append("| model | DYNAMIX best | img/s | PyTorch best | img/s | DYNAMIX/PyTorch |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for m in models:
            best = {}
            for impl in ("dynamix", "pytorch"):
                groups = {}
                for r in ok:
                    if r.get("model") == m and r["impl"] == impl:
                        groups.setdefault(describe(r), []).append(r)
                if groups:
                    name, rs = max(groups.items(), key=lambda g: median_of(g[1], "images_per_s"))
                    best[impl] = (name, median_of(rs, "images_per_s"))
            d, p = best.get("dynamix"), best.get("pytorch")
            ratio = d[1] / p[1] if d and p else None
            out.append(f"| {m} | {d[0] if d else '—'} | {fmt(d[1]) if d else '—'} | {p[0] if p else '—'} "
                       f"| {fmt(p[1]) if p else '—'} | {fmt(ratio, 3)} |")
        out.append("")

    bad = [r for r in records if not r.get("ok")]
    if bad:
        out.append("### Failed items")
        out.append("")
        for r in bad:
            lines = [line.strip() for line in r.get("log_tail", []) if line.strip() and not line.startswith("### ")]
            tail = " / ".join(lines[-3:])
            flags = f" {r['flags']}" if r.get("flags") else ""
            out.append(f"- {r['impl']} {r.get('model')} {describe(r)}{flags}: {r.get('error')} — {tail[:300]}")
        out.append("")
    return out


COLUMNS = ["size(B)", "count", "time(us)", "algbw", "busbw", "#wrong", "flat(us)", "ratio", "grad-path(us)",
           "g/flat", "g#wrong"]


def size_text(n):
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def allreduce_tables(files):
    out = []
    for path in files:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        runs, current = [], None
        for line in lines:
            if line.startswith("### ") and ("limit" in line or "skipped" in line) and "exit" not in line:
                current = {"item": line[4:], "header": [], "rows": []}
                runs.append(current)
            elif current is None:
                continue
            elif line.startswith("# dynamix bench allreduce:"):
                current["header"].append(line[2:])
            else:
                parts = line.split()
                if len(parts) == len(COLUMNS) and parts[0].isdigit():
                    current["rows"].append(dict(zip(COLUMNS, parts)))
        for run in runs:
            if not run["rows"]:
                continue
            title = run["header"][0] if run["header"] else run["item"]
            out.append(f"### {title}")
            out.append("")
            out.append("`flat` = one allreduce_sum on one pre-packed buffer of the total size; `grad-path` = "
                       "pack+scale, allreduce, unpack through GradBuckets; goal g/flat <= 1.05.")
            out.append("")
            out.append("| size | time (µs) | busbw (GB/s) | #wrong | flat (µs) | ratio flat/time | grad-path (µs) "
                       "| g/flat | g#wrong |")
            out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for r in run["rows"]:
                out.append(f"| {size_text(int(r['size(B)']))} | {r['time(us)']} | {r['busbw']} | {r['#wrong']} "
                           f"| {r['flat(us)']} | {r['ratio']} | {r['grad-path(us)']} | {r['g/flat']} "
                           f"| {r['g#wrong']} |")
            out.append("")
    return out


def main(argv):
    if not argv:
        sys.exit(__doc__)
    jsonl, allreduce, env = inputs(argv)
    if not (jsonl or allreduce):
        sys.exit(f"summarize.py: no bench-step.jsonl or allreduce.txt under {' '.join(argv)}")
    out = []
    keep = ("# ", "name,", "NVIDIA", "H100", "H200", "torch ", "torch cuda", "device ", "cudnn ", "torch's nccl",
            "torchvision ")
    for path in env:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f.read().splitlines()]
        facts = [line.lstrip("# ") for line in lines if line.startswith(keep) and not line.startswith("name,")]
        out.append("Machine: " + " · ".join(facts))
        out.append("")
    out += step_tables(load_records(jsonl))
    out += allreduce_tables(allreduce)
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
