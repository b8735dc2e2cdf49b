#!/usr/bin/env python3
"""One JSON line for one benchmark item of scripts/gpu/session.sh, from the item's log.

  record.py --impl dynamix --log FILE --rc RC --seconds S [--set key=value ...]
  record.py --impl dynamix --log FILE --rc RC --seconds S --metrics run/metrics.jsonl
            --skip N --chunk S [--set key=value ...]
  record.py --impl pytorch --log FILE --rc RC --seconds S [--set key=value ...]

dynamix: parses `dynamix bench step`'s table (the "dynamix" and "bare" rows), or with --metrics
the step times a `dynamix train` run wrote (steps after the first N, in chunks of S steps: the
median of the chunks' mean step times, as bench step reports its repeats); pytorch: takes the
JSON line that scripts/gpu/pytorch_loop.py printed. With a non-zero --rc, or when the log has no
result, the line says ok: false and carries the log's last lines. Prints the line on stdout and
exits 0 either way: the session goes on past a failed item.
"""

import argparse
import json
import re
import statistics
import sys

ROW = re.compile(r"^(dynamix|bare)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$")


def value(text):
    """--set values: JSON where they parse (numbers, true/false), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_dynamix(lines):
    out = {}
    for line in lines:
        m = ROW.match(line.strip())
        if m:
            who, ms, per_s = m.group(1), float(m.group(2)), float(m.group(3))
            if who == "dynamix":
                out.update(step_ms_median=ms, images_per_s=per_s)
            else:
                out.update(bare_step_ms=ms, bare_images_per_s=per_s)
        elif line.startswith("# dynamix bench step:"):
            out["header"] = line.strip()
    return out if "images_per_s" in out else None


def parse_metrics(path, skip, chunk, batch):
    times, last = [], None
    with open(path) as f:
        for line in f:
            if line.strip():
                m = json.loads(line)
                last = m
                if m["step"] > skip:
                    times.append(m["step_time"])
    chunks = [times[i:i + chunk] for i in range(0, len(times) - chunk + 1, chunk)]
    if not chunks:
        raise ValueError(f"{path}: {len(times)} steps after the first {skip}, fewer than {chunk}")
    means = [sum(c) / len(c) for c in chunks]
    median = statistics.median(means)
    return {"step_ms_median": median * 1e3, "step_ms_repeats": [round(t * 1e3, 4) for t in means],
            "images_per_s": batch / median, "final_loss": last.get("loss") if last else None,
            "method": "train-metrics"}


def parse_pytorch(lines):
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{") and '"impl": "pytorch"' in line:
            return json.loads(line)
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--impl", choices=["dynamix", "pytorch"], required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--rc", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--metrics", help="dynamix: a train run's metrics.jsonl instead of bench step's table")
    p.add_argument("--skip", type=int, default=0, help="--metrics: untimed first steps")
    p.add_argument("--chunk", type=int, default=1, help="--metrics: steps per repeat")
    args = p.parse_args()

    with open(args.log, errors="replace") as f:
        lines = f.read().splitlines()
    record = {"impl": args.impl}
    for kv in args.set:
        key, sep, val = kv.partition("=")
        if not sep:
            sys.exit(f"record.py: --set {kv!r} is not KEY=VALUE")
        record[key] = value(val)

    result = None
    if args.rc == 0:
        try:
            if args.impl == "pytorch":
                result = parse_pytorch(lines)
            elif args.metrics:
                result = parse_metrics(args.metrics, args.skip, args.chunk, int(record["batch"]))
            else:
                result = parse_dynamix(lines)
                if result is not None:
                    result["method"] = "bench-step"
        except (OSError, KeyError, ValueError) as e:
            lines.append(f"record.py: unreadable result: {e}")
    if result is not None:
        record.update(result)  # what the program reports it ran wins over what was asked
        record["ok"] = True
    else:
        record["ok"] = False
        record["error"] = "timed out" if args.rc in (124, 137) else (
            f"exit status {args.rc}" if args.rc != 0 else "no result in the output")
        record["log_tail"] = lines[-12:]
    record["rc"] = args.rc
    record["seconds"] = round(args.seconds, 1)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
