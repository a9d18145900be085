# SPDX-License-Identifier: Apache-2.0
"""Tests of ci/host_profile.py on a hand-made `perf script` excerpt:
python3 -m unittest discover -s ci -p 'test_*.py'"""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(__file__))
import host_profile  # noqa: E402

# QEMU is pid 100 (vCPU threads 101, 102, main loop 100), nicemu pid 200.
SCRIPT = """\
CPU 1/TCG  100/102  
\t          56cd60 helper_lookup_tb_ptr (/usr/bin/qemu-system-x86_64)

CPU 1/TCG  100/102  
\t    7f5b18be2c2d [unknown] (/tmp/perf-100.map)

CPU 1/TCG  100/102  
\tffffffff82261179 _raw_spin_unlock_irqrestore ([kernel.kallsyms])
\tffffffff81e84dae sock_def_readable ([kernel.kallsyms])
\tffffffff821280a4 unix_stream_sendmsg ([kernel.kallsyms])
\t           9cefe [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)

CPU 0/TCG  100/101  
\tffffffff8224d141 do_syscall_64 ([kernel.kallsyms])

qemu-system-x86  100/100  
\tffffffff81e84dae futex_wake ([kernel.kallsyms])

vfio-igb0  200/203  
\t          16db75 __memmove_avx512_unaligned_erms (/usr/lib/x86_64-linux-gnu/libc.so.6)

vfio-igb0  200/203  
\t    5d0000 [unknown] ([unknown])

rx-virtio0  200/204  
\t          16db75 nicemu_net_util::csum::verify_rx (/usr/bin/nicemu)

swapper     0/0    
\tffffffff82261179 pv_native_safe_halt ([kernel.kallsyms])

swapper     0/0    
\tffffffff82261179 pv_native_safe_halt ([kernel.kallsyms])

sshd  300/300  
\t          16db75 read (/usr/lib/x86_64-linux-gnu/libc.so.6)
"""


class HostProfile(unittest.TestCase):
    def summary(self):
        return host_profile.summarize(io.StringIO(SCRIPT), {200}, {100})

    def test_threads_are_grouped_by_process_and_role(self):
        rows, groups, total = self.summary()
        self.assertEqual(total, 11)
        self.assertEqual(dict(groups), {"qemu": 5, "nicemu": 3, "idle": 2, "other": 1})
        self.assertIn(("nicemu", "nicemu vfio-igb0 [doorbell (vfio-user server)]"), rows)
        self.assertIn(("nicemu", "nicemu rx-virtio0 [receive]"), rows)
        self.assertIn(("qemu", "QEMU main loop"), rows)

    def test_samples_split_into_jit_user_kernel_and_wake_ups(self):
        rows, _, _ = self.summary()
        vcpu1 = rows[("qemu", "guest vCPU 1")]
        self.assertEqual(dict(vcpu1), {"user": 1, "jit": 1, "wake": 1})
        self.assertEqual(dict(rows[("qemu", "guest vCPU 0")]), {"kernel": 1})
        self.assertEqual(dict(rows[("qemu", "QEMU main loop")]), {"wake": 1})
        # An unknown frame of nicemu is its own code, not the guest's.
        self.assertEqual(dict(rows[("nicemu", "nicemu vfio-igb0 [doorbell (vfio-user server)]")]), {"user": 2})

    def test_shares_are_of_one_core(self):
        rows, groups, total = self.summary()
        text = host_profile.render(rows, groups, total, cpus=2)
        # 5 of 11 samples on 2 CPUs: 90.9 % of one core.
        self.assertIn("| QEMU (guest vCPUs + its threads) | 90.9 |", text)
        self.assertIn("| idle | 36.4 |", text)
        self.assertIn("| guest vCPU 1 | 54.5 | 18.2 | 18.2 | 0.0 | 18.2 |", text)

    def run_main(self, script, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(script)
        out, err = io.StringIO(), io.StringIO()
        try:
            with redirect_stdout(out), redirect_stderr(err):
                rc = host_profile.main([f.name, "--cpus", "2", *args])
        finally:
            os.unlink(f.name)
        return rc, out.getvalue(), err.getvalue()

    def test_a_window_without_the_guest_is_an_error(self):
        idle_only = "swapper     0/0    \n\tffffffff8 pv_native_safe_halt ([kernel.kallsyms])\n"
        rc, out, err = self.run_main(idle_only, "--qemu-pid", "100")
        self.assertEqual(rc, 1)
        self.assertIn("no sample of QEMU's threads", err)
        rc, _, err = self.run_main(SCRIPT, "--qemu-pid", "100", "--nicemu-pid", "999")
        self.assertEqual(rc, 1)
        self.assertIn("no sample of nicemu's threads", err)
        rc, out, _ = self.run_main(SCRIPT, "--qemu-pid", "100", "--nicemu-pid", "200")
        self.assertEqual(rc, 0)
        self.assertIn("| nicemu | 54.5 |", out)


if __name__ == "__main__":
    unittest.main()
