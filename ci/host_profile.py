# SPDX-License-Identifier: Apache-2.0
"""Where this host's CPU went during a profile window: `perf script` output of a
system-wide `perf record -a -g` (every CPU sampled at one rate, idle included),
summed per thread into the shares of a core that the guest's vCPUs, QEMU's other
threads, nicemu's threads (by role) and the idle loop used.

Each row splits its time into the guest's translated code (TCG's JIT), user space
(QEMU's or nicemu's code and libraries), the host kernel, and, of the kernel part,
the samples taken while waking another thread (a vfio-user message's socket write,
an eventfd or futex wake-up): the cost a thread pays to reach the next one.

Usage: python3 ci/host_profile.py SCRIPT.txt --cpus N --nicemu-pid P --qemu-pid P...
"""

import argparse
import re
import sys
from collections import defaultdict

# Kernel functions a sample passes through while it wakes another thread.
WAKE_FUNCS = frozenset(
    [
        "try_to_wake_up",
        "sock_def_readable",
        "__wake_up_sync_key",
        "__wake_up_common",
        "eventfd_write",
        "eventfd_signal_mask",
        "futex_wake",
    ]
)

HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s*$")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>\S+)\s+\((?P<dso>.*)\)\s*$")

# nicemu's thread names (backend threads::spawn, vhost-user-backend's workers) → role,
# the roles `nicemu ctl latency` lists.
ROLES = [
    ("vfio-", "doorbell (vfio-user server)"),
    ("vring_worker", "doorbell (vhost-user worker)"),
    ("vhost-", "doorbell (vhost-user)"),
    ("rxq-", "receive"),
    ("rx-", "receive"),
    ("irq-", "signaller"),
    ("timer-", "timer"),
    ("wire-", "wire"),
    ("tap-", "wire"),
]

PARTS = ("jit", "user", "kernel", "wake")


def parse_samples(lines):
    """Yields (comm, pid, tid, frames) per sample; frames are (sym, dso), leaf first."""
    cur = None
    for line in lines:
        if line[:1].strip():
            if cur:
                yield cur
            m = HEADER.match(line)
            cur = (m["comm"], int(m["pid"]), int(m["tid"]), []) if m else None
        elif cur is not None and (m := FRAME.match(line)):
            cur[3].append((m["sym"], m["dso"]))
    if cur:
        yield cur


def part_of(frames, guest):
    """Which part of a thread's time a sample is: jit (only for a guest's threads),
    user, kernel or wake."""
    if not frames:
        return "user"
    sym, dso = frames[0]
    if dso == "[kernel.kallsyms]":
        in_kernel = [s for s, d in frames if d == "[kernel.kallsyms]"]
        return "wake" if WAKE_FUNCS.intersection(in_kernel) else "kernel"
    if guest and (
        re.match(r"(/tmp/perf-\d+\.map|\[JIT\]|//anon|memfd:)", dso)
        or (dso == "[unknown]" and sym == "[unknown]")
    ):
        return "jit"
    return "user"


def role_of(comm):
    for prefix, role in ROLES:
        if comm.startswith(prefix):
            return role
    return "other"


def group_of(comm, pid, nicemu_pids, qemu_pids):
    """(group, row name) of a sample's thread."""
    if pid == 0 or comm == "swapper":
        return ("idle", "idle")
    if pid in qemu_pids:
        m = re.match(r"CPU (\d+)/(TCG|KVM)$", comm)
        if m:
            return ("qemu", f"guest vCPU {m[1]}")
        if comm.startswith("qemu-system"):
            return ("qemu", "QEMU main loop")
        return ("qemu", f"QEMU {comm}")
    if pid in nicemu_pids:
        return ("nicemu", f"nicemu {comm} [{role_of(comm)}]")
    return ("other", "other processes")


def summarize(lines, nicemu_pids, qemu_pids):
    """{row: {part: samples}} (idle has no row), {group: samples}, total samples."""
    rows = defaultdict(lambda: defaultdict(int))
    groups = defaultdict(int)
    total = 0
    for comm, pid, _tid, frames in parse_samples(lines):
        total += 1
        group, row = group_of(comm, pid, nicemu_pids, qemu_pids)
        groups[group] += 1
        if group != "idle":
            rows[(group, row)][part_of(frames, group == "qemu")] += 1
    return rows, groups, total


def core_pct(n, total, cpus):
    return 100.0 * n * cpus / total if total else 0.0


def render(rows, groups, total, cpus):
    """Markdown tables: per group, then per thread (rows of ≥ 0.5 % of a core)."""
    out = [
        f"## Host CPU during the window ({total} samples, {cpus} CPUs; % of one core)",
        "",
        "| group | % of a core |",
        "|---|---|",
    ]
    names = {"qemu": "QEMU (guest vCPUs + its threads)", "nicemu": "nicemu", "idle": "idle",
             "other": "other processes"}
    for g in ("qemu", "nicemu", "idle", "other"):
        out.append(f"| {names[g]} | {core_pct(groups.get(g, 0), total, cpus):.1f} |")
    out += [
        "",
        "| thread | % of a core | guest code (JIT) | user space | host kernel | waking a thread |",
        "|---|---|---|---|---|---|",
    ]
    order = {"qemu": 0, "nicemu": 1, "other": 2}
    for (g, row), parts in sorted(rows.items(), key=lambda kv: (order[kv[0][0]], -sum(kv[1].values()))):
        n = sum(parts.values())
        pct = core_pct(n, total, cpus)
        if pct < 0.5:
            continue
        cells = " | ".join(f"{core_pct(parts.get(p, 0), total, cpus):.1f}" for p in PARTS)
        out.append(f"| {row} | {pct:.1f} | {cells} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("script", help="`perf script -F comm,pid,tid,ip,sym,dso` output (a file, or /dev/stdin)")
    ap.add_argument("--cpus", type=int, required=True, help="CPUs the recording sampled")
    ap.add_argument("--nicemu-pid", type=int, action="append", default=[])
    ap.add_argument("--qemu-pid", type=int, action="append", default=[])
    a = ap.parse_args(argv)
    with open(a.script, errors="replace") as f:
        rows, groups, total = summarize(f, set(a.nicemu_pid), set(a.qemu_pid))
    if not groups.get("qemu"):
        print("host-profile: no sample of QEMU's threads in the window: the guest was not "
              "running while perf recorded", file=sys.stderr)
        return 1
    if a.nicemu_pid and not groups.get("nicemu"):
        print("host-profile: no sample of nicemu's threads in the window", file=sys.stderr)
        return 1
    print(render(rows, groups, total, a.cpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())
