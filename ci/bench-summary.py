# SPDX-License-Identifier: Apache-2.0
"""Summarise ci/bench's rounds: median [min-max] per device and test, ratios against QEMU's
model of the same kind measured in the same rounds, nicemu's latency stages, and — when a
baseline nicemu binary was benched in the same rounds (BASELINE=…) — each nicemu row before
and after. Usage: bench-summary.py bench-1.json … [--baseline bench-base-1.json …]"""
import json
import re
import statistics
import sys

TESTS = ["TCP_STREAM", "TCP_RR", "UDP_STREAM:64"]
# Each device is compared with QEMU's model of the same kind.
REF_OF = {"nicemu-igb": "qemu-igb", "nicemu-ixgbe": "qemu-igb", "qemu-igb": "qemu-igb",
          "nicemu-virtio": "qemu-virtio", "qemu-virtio": "qemu-virtio"}
STAGES = ["doorbell_to_wire", "doorbell_to_done", "wire_to_ring", "raise_to_irq", "irq_write", "doorbell_to_irq"]


def netperf_runs(paths):
    for path in paths:
        for r in json.load(open(path))["runs"]:
            for s in r["scenarios"]:
                if s["scenario"] == "netperf":
                    yield r["device"], s["metrics"].get("tests", {})


def samples_of(paths):
    samples = {}  # device -> test -> [values]
    for dev, tests in netperf_runs(paths):
        for k, v in tests.items():
            val = v["msgs_per_s_received"] if "msgs_per_s_received" in v else v["throughput"]
            samples.setdefault(dev, {}).setdefault(k, []).append(val)
    return samples


def cell(samples, d, t):
    v = samples.get(d, {}).get(t)
    if not v:
        return "-"
    return f"{statistics.median(v):.1f}" + (f" [{min(v):.0f}-{max(v):.0f}]" if len(v) > 1 else "")


def medians(samples):
    return {d: {t: statistics.median(v) for t, v in m.items()} for d, m in samples.items()}


def print_table(samples, what):
    med = medians(samples)
    print(f"\n## netperf, same run ({what}; TCP_STREAM Mbit/s, TCP_RR trans/s, "
          "UDP_STREAM:64 msgs/s received)\n")
    print("| device | " + " | ".join(TESTS) + " | vs | " + " | ".join(t + " ratio" for t in TESTS) + " |")
    print("|---" * (2 + 2 * len(TESTS)) + "|")
    for dev, v in med.items():
        refname = REF_OF.get(dev, "qemu-igb")
        ref = med.get(refname, {})
        ratios = [f"{v[t] / ref[t]:.2f}x" if ref.get(t) and t in v else "-" for t in TESTS]
        print(f"| {dev} | " + " | ".join(cell(samples, dev, t) for t in TESTS)
              + f" | {refname} | " + " | ".join(ratios) + " |")
    ig, ix = med.get("nicemu-igb", {}), med.get("nicemu-ixgbe", {})
    if ig.get("TCP_STREAM") and ix.get("TCP_STREAM"):
        print(f"\nnicemu-ixgbe / nicemu-igb TCP_STREAM: {ix['TCP_STREAM'] / ig['TCP_STREAM']:.2f}x "
              f"({ix['TCP_STREAM']:.0f} vs {ig['TCP_STREAM']:.0f} Mbit/s)")
    nv, qv = med.get("nicemu-virtio", {}), med.get("qemu-virtio", {})
    if nv.get("TCP_STREAM") and qv.get("TCP_STREAM"):
        print(f"nicemu-virtio / qemu-virtio TCP_STREAM: {nv['TCP_STREAM'] / qv['TCP_STREAM']:.2f}x "
              f"({nv['TCP_STREAM']:.0f} vs {qv['TCP_STREAM']:.0f} Mbit/s)")


def print_baseline(samples, base, what):
    """The baseline binary's nicemu rows against this build's, same rounds."""
    print(f"\n## this build against BASELINE, same rounds ({what})\n")
    print("| device | test | baseline | this build | this / baseline | this vs QEMU (baseline vs QEMU) |")
    print("|---|---|---|---|---|---|")
    med, bmed = medians(samples), medians(base)
    for dev in bmed:
        ref = med.get(REF_OF.get(dev, "qemu-igb"), {})
        for t in TESTS:
            b, a = bmed[dev].get(t), med.get(dev, {}).get(t)
            if not b or not a:
                continue
            vs = f"{a / ref[t]:.2f}x ({b / ref[t]:.2f}x)" if ref.get(t) else "-"
            print(f"| {dev} | {t} | {cell(base, dev, t)} | {cell(samples, dev, t)} | {a / b:.2f}x | {vs} |")


def latency(paths):
    lat = {}  # (device, test, port) -> stage -> [summaries]
    for dev, tests in netperf_runs(paths):
        for t, v in tests.items():
            for port, st in v.get("nicemu_latency", {}).items():
                for name, summ in st.items():
                    lat.setdefault((dev, t, port), {}).setdefault(name, []).append(summ)
    return lat


def lcell(v):
    if not v or not any(x["count"] for x in v):
        return "-"
    m = lambda k: statistics.median(x[k] for x in v) / 1000
    return f"{m('p50'):.1f} / {m('p99'):.1f} ({statistics.median(x['count'] for x in v):.0f})"


def print_latency(paths, what):
    # nicemu's latency stages (`nicemu ctl latency`), read by the netperf scenario after each
    # test for the device under test (DUT) and its peer port (PEER).
    lat = latency(paths)
    if not lat:
        return
    print(f"\n## nicemu latency stages during each test ({what}; µs p50 / p99, values counted)\n")
    print("| device | test | port | " + " | ".join(STAGES) + " |")
    print("|---" * (3 + len(STAGES)) + "|")
    for (dev, t, port), st in sorted(lat.items()):
        print(f"| {dev} | {t} | {port} | " + " | ".join(lcell(st.get(n)) for n in STAGES) + " |")


def threads(paths):
    waits = {}  # (device, test, port, role, thread) -> [(wait per slice µs, on cpu per slice µs)]
    for dev, tests in netperf_runs(paths):
        for t, v in tests.items():
            for port, ths in v.get("nicemu_threads", {}).items():
                run = {}  # threads of one name in this run (a port's queue workers) add up
                for th in ths:
                    key = (dev, t, port, th["role"], re.sub(r"-[^-]*$", "", th["name"]))
                    acc = run.setdefault(key, [0, 0, 0])
                    acc[0] += th["wait_ns"]
                    acc[1] += th["on_cpu_ns"]
                    acc[2] += th["slices"]
                for key, (w, c, n) in run.items():
                    if n:
                        waits.setdefault(key, []).append((w / n / 1000, c / n / 1000))
    return waits


def print_threads(paths, what):
    # How long the port's threads waited for a core per slice they ran (for a thread that
    # sleeps between doorbells: the wake-up -> running delay nicemu's own stages cannot
    # see), from the kernel's per-thread schedstat.
    waits = threads(paths)
    if not waits:
        return
    print(f"\n## nicemu threads waiting for a core during each test ({what}; µs per slice run)\n")
    print("| device | test | port | role | thread | wait / slice | on cpu / slice |")
    print("|---|---|---|---|---|---|---|")
    for (dev, t, port, role, name), v in sorted(waits.items()):
        w = statistics.median(x[0] for x in v)
        c = statistics.median(x[1] for x in v)
        print(f"| {dev} | {t} | {port} | {role} | {name} | {w:.1f} | {c:.1f} |")


def main(argv):
    paths, base_paths = argv, []
    if "--baseline" in argv:
        i = argv.index("--baseline")
        paths, base_paths = argv[:i], argv[i + 1:]
    n = len(paths)
    what = "median of %d rounds, [min-max]" % n if n > 1 else "one round"
    samples = samples_of(paths)
    print_table(samples, what)
    if base_paths:
        print_baseline(samples, samples_of(base_paths), what)
    print_latency(paths, what)
    print_threads(paths, what)


if __name__ == "__main__":
    main(sys.argv[1:])
