// SPDX-License-Identifier: Apache-2.0
//! Parsing of the command-line device and wire specifications
//! (`kind,key=value,...`) into typed configuration.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::error::Error;

/// Kind of an emulated port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// Intel 82576 over vfio-user.
    Igb,
    /// Intel 82599 over vfio-user.
    Ixgbe,
    /// virtio-net over vhost-user.
    VirtioNet,
}

/// One `--device`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceSpec {
    /// Model.
    pub kind: DeviceKind,
    /// Identifier used in traces and by the control socket.
    pub id: String,
    /// vfio-user / vhost-user socket path.
    pub socket: PathBuf,
    /// MAC address.
    pub mac: [u8; 6],
    /// Network (switch) the port joins.
    pub net: String,
    /// Queue pairs (virtio-net).
    pub queues: u16,
    /// `coalesce=on`: a virtio-net port delivers consecutive TCP segments
    /// as one GSO frame (receive coalescing; default off, because the guest
    /// cannot switch it off through QEMU — see `vhost`).
    pub coalesce: bool,
    /// SFP+ module in an ixgbe port's cage (`sfp=da|sr|lr|none`, default da).
    pub sfp: nicemu_device_models::ixgbe::SfpKind,
    /// Wire delay of frames arriving at this port, in ns: IEEE 1588 receive
    /// time stamps are taken this much later (igb, ixgbe).
    pub delay_ns: u64,
    /// How long the PHY's autonegotiation takes, in ns (`autoneg=MS`, igb;
    /// default `nicemu_device_models::phy::AUTONEG_NS`).
    pub autoneg_ns: u64,
    /// `cable=ID`: the igb port whose PHY this one's is cabled to (each
    /// sees the other's advertisement, `nicemu_device_models::cable`) instead of
    /// the ideal link partner.
    pub cable: Option<String>,
}

/// Largest accepted `delay=` (one second).
pub const MAX_DELAY_NS: u64 = 1_000_000_000;

/// Largest accepted `autoneg=`, in ms (10 s).
pub const MAX_AUTONEG_MS: u64 = 10_000;

/// Parses a MAC address `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut mac {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Splits one `key=value` item of a `--device`/`--wire` value.
fn key_value(kv: &str) -> Result<(&str, &str), String> {
    let Some((k, v)) = kv.split_once('=') else {
        return Err(format!("'{kv}' is not key=value"));
    };
    if v.is_empty() {
        return Err(format!("{k}= needs a value"));
    }
    Ok((k, v))
}

/// A locally administered MAC derived from the device's position.
fn default_mac(index: usize) -> [u8; 6] {
    [0x52, 0x54, 0x00, 0x4e, 0x49, 0x10 + index as u8]
}

/// The device kind a `--device` value starts with.
fn device_kind(s: &str) -> Result<DeviceKind, String> {
    match s {
        "igb" => Ok(DeviceKind::Igb),
        "ixgbe" => Ok(DeviceKind::Ixgbe),
        "virtio-net" => Ok(DeviceKind::VirtioNet),
        "" => Err("missing device kind (igb, ixgbe or virtio-net)".into()),
        k => Err(format!(
            "unknown device kind '{k}' (use igb, ixgbe or virtio-net)"
        )),
    }
}

/// `mac=`: a unicast MAC address.
fn unicast_mac(v: &str) -> Result<[u8; 6], String> {
    let m = parse_mac(v).ok_or_else(|| format!("mac '{v}' is not like 52:54:00:12:34:56"))?;
    if m[0] & 1 != 0 {
        return Err(format!(
            "mac '{v}' is multicast: the first byte must be even"
        ));
    }
    Ok(m)
}

/// `queues=`: 1 to 64 queue pairs.
fn queue_pairs(v: &str) -> Result<u16, String> {
    v.parse()
        .ok()
        .filter(|n| (1..=64).contains(n))
        .ok_or_else(|| format!("queues '{v}' must be a number from 1 to 64"))
}

/// `delay=`: nanoseconds up to [`MAX_DELAY_NS`].
fn wire_delay(v: &str) -> Result<u64, String> {
    v.parse()
        .ok()
        .filter(|n| *n <= MAX_DELAY_NS)
        .ok_or_else(|| format!("delay '{v}' must be nanoseconds from 0 to {MAX_DELAY_NS}"))
}

/// `autoneg=`: milliseconds from 1 to [`MAX_AUTONEG_MS`], as nanoseconds.
fn autoneg_time(v: &str) -> Result<u64, String> {
    v.parse::<u64>()
        .ok()
        .filter(|n| (1..=MAX_AUTONEG_MS).contains(n))
        .map(|ms| ms * 1_000_000)
        .ok_or_else(|| format!("autoneg '{v}' must be milliseconds from 1 to {MAX_AUTONEG_MS}"))
}

/// `on` or `off` for key `k`.
fn on_off(k: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{k} '{v}' must be on or off")),
    }
}

/// The `key=value` items of one `--device`, as given.
#[derive(Default)]
struct DeviceKeys {
    id: Option<String>,
    socket: Option<PathBuf>,
    mac: Option<[u8; 6]>,
    net: Option<String>,
    queues: Option<u16>,
    coalesce: Option<bool>,
    sfp: Option<nicemu_device_models::ixgbe::SfpKind>,
    delay_ns: Option<u64>,
    autoneg_ns: Option<u64>,
    cable: Option<String>,
}

impl DeviceKeys {
    /// Takes one `key=value` item.
    fn set(&mut self, k: &str, v: &str) -> Result<(), String> {
        match k {
            "id" => self.id = Some(v.to_string()),
            "socket" => self.socket = Some(PathBuf::from(v)),
            "mac" => self.mac = Some(unicast_mac(v)?),
            "net" => self.net = Some(v.to_string()),
            "queues" => self.queues = Some(queue_pairs(v)?),
            "coalesce" => self.coalesce = Some(on_off("coalesce", v)?),
            "sfp" => {
                let sfp = nicemu_device_models::ixgbe::SfpKind::parse(v)
                    .ok_or_else(|| format!("sfp '{v}' must be da, sr, lr or none"))?;
                self.sfp = Some(sfp);
            }
            "delay" => self.delay_ns = Some(wire_delay(v)?),
            "autoneg" => self.autoneg_ns = Some(autoneg_time(v)?),
            "cable" => self.cable = Some(v.to_string()),
            other => {
                return Err(format!(
                    "unknown key '{other}' (known: id, socket, mac, net, queues, coalesce, delay, sfp, autoneg, cable)"
                ))
            }
        }
        Ok(())
    }

    /// Refuses keys that do not apply to `kind`.
    fn check_applies_to(&self, kind: DeviceKind) -> Result<(), String> {
        if self.queues.is_some() && kind != DeviceKind::VirtioNet {
            return Err("queues= applies to virtio-net only".into());
        }
        if self.coalesce.is_some() && kind != DeviceKind::VirtioNet {
            return Err("coalesce= applies to virtio-net only".into());
        }
        if self.sfp.is_some() && kind != DeviceKind::Ixgbe {
            return Err("sfp= applies to ixgbe only".into());
        }
        if self.delay_ns.is_some() && kind == DeviceKind::VirtioNet {
            return Err("delay= applies to igb and ixgbe (PTP time stamps) only".into());
        }
        if self.autoneg_ns.is_some() && kind != DeviceKind::Igb {
            return Err("autoneg= applies to igb only (its copper PHY negotiates)".into());
        }
        if self.cable.is_some() && kind != DeviceKind::Igb {
            return Err("cable= applies to igb only (a copper PHY at each end)".into());
        }
        Ok(())
    }
}

impl DeviceSpec {
    /// Parses one `--device` value; `index` numbers devices for default MACs.
    pub fn parse(spec: &str, index: usize) -> Result<DeviceSpec, Error> {
        let bad = |reason: String| Error::BadDevice {
            spec: spec.to_string(),
            reason,
        };
        let mut parts = spec.split(',');
        let kind = device_kind(parts.next().unwrap_or("")).map_err(bad)?;
        let mut keys = DeviceKeys::default();
        for kv in parts {
            let (k, v) = key_value(kv).map_err(bad)?;
            keys.set(k, v).map_err(bad)?;
        }
        keys.check_applies_to(kind).map_err(bad)?;
        Ok(DeviceSpec {
            kind,
            id: keys.id.ok_or_else(|| bad("missing id=NAME".into()))?,
            socket: keys
                .socket
                .ok_or_else(|| bad("missing socket=PATH".into()))?,
            mac: keys.mac.unwrap_or_else(|| default_mac(index)),
            net: keys.net.unwrap_or_else(|| "lan0".into()),
            queues: keys.queues.unwrap_or(1),
            coalesce: keys.coalesce.unwrap_or(false),
            delay_ns: keys.delay_ns.unwrap_or(0),
            autoneg_ns: keys
                .autoneg_ns
                .unwrap_or(nicemu_device_models::phy::AUTONEG_NS),
            cable: keys.cable,
            sfp: keys.sfp.unwrap_or_default(),
        })
    }
}

/// Kind of a wire leaving the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireKind {
    /// QEMU `-netdev stream` compatible unix socket (nicemu listens).
    Stream {
        /// Socket path.
        path: PathBuf,
    },
    /// A Linux tap interface.
    Tap {
        /// Interface name.
        ifname: String,
    },
}

/// One `--wire`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireSpec {
    /// What the wire is.
    pub kind: WireKind,
    /// Network it joins.
    pub net: String,
}

impl WireSpec {
    /// Parses `stream,path=PATH[,net=NET]` or `tap,ifname=NAME[,net=NET]`.
    pub fn parse(spec: &str) -> Result<WireSpec, Error> {
        let bad = |reason: String| Error::BadWire {
            spec: spec.to_string(),
            reason,
        };
        let mut parts = spec.split(',');
        let kind = parts.next().unwrap_or("");
        let (mut path, mut ifname, mut net) = (None, None, None);
        for kv in parts {
            let (k, v) = key_value(kv).map_err(bad)?;
            match k {
                "path" => path = Some(PathBuf::from(v)),
                "ifname" => ifname = Some(v.to_string()),
                "net" => net = Some(v.to_string()),
                other => {
                    return Err(bad(format!(
                        "unknown key '{other}' (known: path, ifname, net)"
                    )))
                }
            }
        }
        let kind = match kind {
            "stream" => WireKind::Stream {
                path: path.ok_or_else(|| bad("stream needs path=SOCKET".into()))?,
            },
            "tap" => {
                let ifname = ifname.ok_or_else(|| bad("tap needs ifname=NAME".into()))?;
                if ifname.len() >= 16 {
                    return Err(bad(format!(
                        "ifname '{ifname}' is longer than 15 characters"
                    )));
                }
                WireKind::Tap { ifname }
            }
            "" => return Err(bad("missing wire kind (stream or tap)".into())),
            k => return Err(bad(format!("unknown wire kind '{k}' (use stream or tap)"))),
        };
        Ok(WireSpec {
            kind,
            net: net.unwrap_or_else(|| "lan0".into()),
        })
    }
}

/// Parses all `--device` values and checks ids and sockets are unique and free.
pub fn parse_devices(specs: &[String]) -> Result<Vec<DeviceSpec>, Error> {
    if specs.is_empty() {
        return Err(Error::NoDevice);
    }
    let devs = specs
        .iter()
        .enumerate()
        .map(|(i, s)| DeviceSpec::parse(s, i))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = HashSet::new();
    let mut socks = HashSet::new();
    for d in &devs {
        if !ids.insert(d.id.clone()) {
            return Err(Error::Duplicate {
                what: "id",
                value: d.id.clone(),
            });
        }
        if !socks.insert(d.socket.clone()) {
            return Err(Error::Duplicate {
                what: "socket",
                value: d.socket.display().to_string(),
            });
        }
        if d.socket.exists() || d.socket.symlink_metadata().is_ok() {
            return Err(Error::SocketExists(d.socket.clone()));
        }
    }
    check_cables(&devs, specs)?;
    Ok(devs)
}

/// Each `cable=ID` names another igb device on the same network, and a
/// port has at most one cable (named on either end).
fn check_cables(devs: &[DeviceSpec], specs: &[String]) -> Result<(), Error> {
    let mut cabled = HashSet::new();
    for (d, spec) in devs.iter().zip(specs) {
        let Some(other) = &d.cable else { continue };
        let bad = |reason: String| Error::BadDevice {
            spec: spec.clone(),
            reason,
        };
        let Some(o) = devs.iter().find(|o| &o.id == other) else {
            return Err(bad(format!("cable={other}: no device has id={other}")));
        };
        if o.id == d.id {
            return Err(bad(format!(
                "cable={other}: a port cannot be cabled to itself"
            )));
        }
        if o.kind != DeviceKind::Igb {
            return Err(bad(format!("cable={other}: {other} is not an igb port")));
        }
        if o.net != d.net {
            return Err(bad(format!(
                "cable={other}: {other} is on net {} and this port on {} (the cable's frames go through one network)",
                o.net, d.net
            )));
        }
        for id in [&d.id, &o.id] {
            if !cabled.insert(id.clone()) {
                return Err(bad(format!("cable={other}: {id} already has a cable")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_and_minimal_specs() {
        let d = DeviceSpec::parse(
            "igb,id=igb0,socket=/tmp/x.sock,mac=52:54:00:00:00:01,net=lan1",
            0,
        )
        .unwrap();
        assert_eq!(d.kind, DeviceKind::Igb);
        assert_eq!(d.id, "igb0");
        assert_eq!(d.mac, [0x52, 0x54, 0, 0, 0, 1]);
        assert_eq!(d.net, "lan1");
        assert_eq!(d.delay_ns, 0);
        assert_eq!(d.autoneg_ns, nicemu_device_models::phy::AUTONEG_NS);
        let d = DeviceSpec::parse("igb,id=x,socket=/s,autoneg=300", 1).unwrap();
        assert_eq!(d.autoneg_ns, 300_000_000);
        let d = DeviceSpec::parse("ixgbe,id=x,socket=/s,delay=1500", 1).unwrap();
        assert_eq!(d.delay_ns, 1500);
        let d = DeviceSpec::parse("ixgbe,id=x,socket=/s,sfp=lr", 1).unwrap();
        assert_eq!(d.sfp, nicemu_device_models::ixgbe::SfpKind::Lr);
        let d = DeviceSpec::parse("virtio-net,id=v,socket=/s,queues=4", 3).unwrap();
        assert_eq!((d.queues, d.coalesce), (4, false));
        let d = DeviceSpec::parse("virtio-net,id=v,socket=/s,coalesce=on", 3).unwrap();
        assert!(d.coalesce);
        assert_eq!(d.net, "lan0");
        assert_eq!(d.mac[5], 0x13);
    }

    #[test]
    fn rejects_bad_specs_with_a_reason() {
        for (spec, needle) in [
            ("", "missing device kind"),
            ("e1000,id=a,socket=/s", "unknown device kind"),
            ("igb,socket=/s", "missing id"),
            ("igb,id=a", "missing socket"),
            ("igb,id=a,socket=/s,mac=zz", "mac"),
            ("igb,id=a,socket=/s,mac=01:00:00:00:00:00", "multicast"),
            ("igb,id=a,socket=/s,speed=10", "unknown key"),
            ("igb,id=a,socket", "key=value"),
            ("igb,id=,socket=/s", "needs a value"),
            ("virtio-net,id=a,socket=/s,queues=0", "1 to 64"),
            ("igb,id=a,socket=/s,queues=2", "virtio-net only"),
            ("virtio-net,id=a,socket=/s,coalesce=yes", "on or off"),
            ("ixgbe,id=a,socket=/s,coalesce=on", "virtio-net only"),
            ("ixgbe,id=a,socket=/s,sfp=qsfp", "da, sr, lr or none"),
            ("igb,id=a,socket=/s,sfp=sr", "ixgbe only"),
            ("igb,id=a,socket=/s,delay=-1", "nanoseconds"),
            ("igb,id=a,socket=/s,delay=2000000000", "nanoseconds"),
            ("virtio-net,id=a,socket=/s,delay=5", "igb and ixgbe"),
            (
                "igb,id=a,socket=/s,autoneg=0",
                "milliseconds from 1 to 10000",
            ),
            (
                "igb,id=a,socket=/s,autoneg=10001",
                "milliseconds from 1 to 10000",
            ),
            (
                "igb,id=a,socket=/s,autoneg=1s",
                "milliseconds from 1 to 10000",
            ),
            ("ixgbe,id=a,socket=/s,autoneg=500", "igb only"),
        ] {
            let e = DeviceSpec::parse(spec, 0).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn wires() {
        let w = WireSpec::parse("stream,path=/tmp/w.sock,net=lan1").unwrap();
        assert_eq!(
            w.kind,
            WireKind::Stream {
                path: "/tmp/w.sock".into()
            }
        );
        assert_eq!(w.net, "lan1");
        let w = WireSpec::parse("tap,ifname=tap7").unwrap();
        assert_eq!(
            w.kind,
            WireKind::Tap {
                ifname: "tap7".into()
            }
        );
        for (spec, needle) in [
            ("stream", "needs path"),
            ("tap,ifname=averyveryverylongname", "longer than 15"),
            ("vde,path=/x", "unknown wire kind"),
            ("stream,path=/x,speed=1", "unknown key"),
        ] {
            let e = WireSpec::parse(spec).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn duplicates_and_existing_sockets() {
        let dir = std::env::temp_dir().join(format!("nicemu-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = |n: &str| dir.join(n).display().to_string();
        let e = parse_devices(&[
            format!("igb,id=a,socket={}", s("a")),
            format!("igb,id=a,socket={}", s("b")),
        ]);
        assert!(matches!(e, Err(Error::Duplicate { what: "id", .. })));
        std::fs::write(dir.join("taken"), b"").unwrap();
        let e = parse_devices(&[format!("igb,id=a,socket={}", s("taken"))]);
        assert!(matches!(e, Err(Error::SocketExists(_))));
        assert!(matches!(parse_devices(&[]), Err(Error::NoDevice)));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
