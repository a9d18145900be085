// SPDX-License-Identifier: Apache-2.0
//! SR-IOV VFs end to end over vfio-user and the control socket: the
//! `--device igbvf|ixgbevf` rules, a VF's reset handshake with nicemu's PF
//! agent through BAR0, and the `ctl vf` / `ctl mailbox` / VF fault verbs.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use common::{cfg16, rd, wr, Nicemu};

/// Mailbox bits and messages (igbvf `mbx.h`, ixgbevf `mbx.h`).
const VFU: u32 = 1 << 2;
const REQ: u32 = 1;
const ACK: u32 = 1 << 1;
const PFACK: u32 = 1 << 5;
const PFSTS: u32 = 1 << 4;
const RSTD: u32 = 1 << 7;
const VF_RESET: u32 = 1;
const MSG_ACK: u32 = 0x8000_0000;
const MSG_NACK: u32 = 0x4000_0000;
const CTS: u32 = 0x2000_0000;

/// (CTRL, mailbox register, mailbox buffer) of each VF part.
const IGBVF: (u64, u64, u64) = (0, 0xc40, 0x800);
const IXGBEVF: (u64, u64, u64) = (0, 0x2fc, 0x200);

/// The drivers' reset: CTRL.RST, reset done, VF_RESET; the reply's first
/// three words.
fn reset(c: &mut vfio_user::Client, (ctrl, mbx, mem): (u64, u64, u64)) -> [u32; 3] {
    wr(c, ctrl, 1 << 26);
    assert_ne!(rd(c, mbx) & RSTD, 0, "reset done");
    call(c, (ctrl, mbx, mem), &[VF_RESET])
}

fn call(c: &mut vfio_user::Client, (_, mbx, mem): (u64, u64, u64), msg: &[u32]) -> [u32; 3] {
    wr(c, mbx, VFU);
    for (i, w) in msg.iter().enumerate() {
        wr(c, mem + 4 * i as u64, *w);
    }
    wr(c, mbx, REQ);
    assert_eq!(rd(c, mbx) & (PFACK | PFSTS), PFACK | PFSTS);
    wr(c, mbx, VFU);
    let r = [rd(c, mem), rd(c, mem + 4), rd(c, mem + 8)];
    wr(c, mbx, ACK);
    r
}

fn text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bad_vf_options_exit_2_with_one_line_naming_the_option() {
    let dir = std::env::temp_dir().join(format!("nicemu-it-vfbad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let s = |n: &str| format!("socket={}/{n}.sock", dir.display());
    for (devs, needle) in [
        (
            vec![format!("igbvf,id=a,{},adapter=p,vf=7", s("a"))],
            "vf=7",
        ),
        (
            vec![format!("ixgbevf,id=a,{},adapter=p,vf=63", s("a"))],
            "vf=63",
        ),
        (
            vec![
                format!("igbvf,id=a,{},adapter=p,vf=1", s("a")),
                format!("igbvf,id=b,{},adapter=p,vf=1", s("b")),
            ],
            "vf=1 of adapter=p is taken",
        ),
        (
            vec![format!("igbvf,id=a,{},adapter=p,vf=0,vlan=4095", s("a"))],
            "vlan",
        ),
        (
            vec![format!(
                "igbvf,id=a,{},adapter=p,vf=0,mac=01:00:5e:00:00:01",
                s("a")
            )],
            "mac",
        ),
    ] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nicemu"));
        for d in &devs {
            cmd.arg("--device").arg(d);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{devs:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(needle), "{devs:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_vf_resets_through_the_agent_and_the_host_administers_it() {
    let n = Nicemu::start(
        "sriov",
        &[
            "--device",
            "igbvf,id=vf0,socket={dir}/vf0.sock,adapter=a0,vf=0,mac=52:54:00:aa:00:01",
            "--device",
            "igbvf,id=vf1,socket={dir}/vf1.sock,adapter=a0,vf=1",
            "--device",
            "ixgbevf,id=xv0,socket={dir}/xv0.sock,adapter=x0,vf=5,mac=52:54:00:bb:00:05",
            "--device",
            "igb,id=igb0,socket={dir}/igb0.sock",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["vf0.sock", "vf1.sock", "xv0.sock", "igb0.sock", "ctl.sock"],
    );
    let mut c = n.client("vf0.sock");
    assert_eq!(cfg16(&mut c, 2), 0x10ca, "82576 VF device ID");
    let r = reset(&mut c, IGBVF);
    assert_eq!(r[0], VF_RESET | MSG_ACK);
    assert_eq!(r[1].to_le_bytes(), [0x52, 0x54, 0, 0xaa]);
    let v = text(&n.ctl(&["vf", "vf0"]));
    assert!(v.contains("clear_to_send  true"), "{v}");
    assert!(v.contains("mac            52:54:00:aa:00:01"), "{v}");
    assert!(
        v.contains("spoofchk       true") && v.contains("trust          false"),
        "{v}"
    );
    // No mac=: VF_RESET is refused, the driver picks its own.
    let mut c1 = n.client("vf1.sock");
    assert_eq!(reset(&mut c1, IGBVF)[0], VF_RESET | MSG_NACK);
    // The 82599 VF.
    let mut x = n.client("xv0.sock");
    assert_eq!(cfg16(&mut x, 2), 0x10ed, "82599 VF device ID");
    assert_eq!(reset(&mut x, IXGBEVF)[0], VF_RESET | MSG_ACK);
    // The host's settings.
    for set in [
        vec!["trust", "on"],
        vec!["spoofchk", "off"],
        vec!["vlan", "100", "--qos", "3"],
        vec!["state", "disable"],
    ] {
        let mut a = vec!["vf", "vf0"];
        a.extend(set.iter().copied());
        let o = n.ctl(&a);
        assert!(
            o.status.success(),
            "{set:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let v = text(&n.ctl(&["vf", "vf0"]));
    for want in [
        "trust          true",
        "spoofchk       false",
        "vlan           100",
        "qos            3",
        "link_state     disable",
    ] {
        assert!(v.contains(want), "{want}: {v}");
    }
    assert_eq!(rd(&mut c, 0x8) & 2, 0, "STATUS.LU off: link disabled");
    assert!(text(&n.ctl(&["list"])).contains("52:54:00:aa:00:01"));
    // The mailbox trace, faults.
    let m = text(&n.ctl(&["mailbox", "vf0"]));
    assert!(m.contains("vf -> pf  0x00000001"), "{m}");
    assert!(m.contains("pf -> vf  0x80000001"), "{m}");
    assert!(n.ctl(&["fault", "vf0", "mbx-nack", "1"]).status.success());
    assert_eq!(call(&mut c, IGBVF, &[0x05, 1518])[0], 0x05 | MSG_NACK | CTS);
    assert!(n.ctl(&["fault", "vf0", "pf-reset"]).status.success());
    assert!(n.ctl(&["fault", "vf0", "vflr"]).status.success());
    assert_eq!(
        call(&mut c, IGBVF, &[0x05, 1518])[0],
        0x05 | MSG_NACK,
        "no CTS after a reset"
    );
    // Refusals: not a VF, bad values.
    for (args, needle) in [
        (vec!["vf", "igb0"], "not a VF"),
        (vec!["fault", "igb0", "pf-reset"], "not a VF"),
        (vec!["vf", "vf0", "vlan", "5000"], "0 to 4094"),
        (vec!["vf", "vf0", "mac", "01:00:00:00:00:01"], "unicast"),
    ] {
        let o = n.ctl(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(needle),
            "{args:?}"
        );
    }
    n.stop();
}
