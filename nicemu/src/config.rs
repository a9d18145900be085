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
    /// An 82576 SR-IOV virtual function (igbvf) over vfio-user.
    Igbvf,
    /// An 82599 SR-IOV virtual function (ixgbevf) over vfio-user.
    Ixgbevf,
}

impl DeviceKind {
    /// An SR-IOV virtual function.
    pub fn is_vf(self) -> bool {
        matches!(self, DeviceKind::Igbvf | DeviceKind::Ixgbevf)
    }

    /// The VF kind of the part this kind is a function of (igb and igbvf:
    /// the 82576's; ixgbe and ixgbevf: the 82599's); none for virtio-net.
    pub fn vf_kind(self) -> Option<DeviceKind> {
        match self {
            DeviceKind::Igb | DeviceKind::Igbvf => Some(DeviceKind::Igbvf),
            DeviceKind::Ixgbe | DeviceKind::Ixgbevf => Some(DeviceKind::Ixgbevf),
            DeviceKind::VirtioNet => None,
        }
    }

    /// The VFs an adapter of this VF kind has for guests: the 82576's 8
    /// pools less the PF's (7), the 82599's 64 less the PF's (63).
    pub fn vf_limit(self) -> u8 {
        match self {
            DeviceKind::Ixgbevf => 63,
            _ => 7,
        }
    }
}

/// The SR-IOV side of a `--device igbvf|ixgbevf`: its adapter, its number
/// there, and what the host sets for it (`ip link set PF vf N …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VfSpec {
    /// `adapter=NAME`: the VFs of one adapter share its PF (its VF numbers,
    /// its limit).
    pub adapter: String,
    /// `vf=N`.
    pub index: u8,
    /// `mac=`, `vlan=`/`qos=`, `spoofchk=`, `trust=`, `link=`.
    pub admin: nicemu_device_models::vf::agent::Admin,
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
    /// What makes an `igbvf`/`ixgbevf` device a VF.
    pub vf: Option<VfSpec>,
    /// `port-security=on`: frames from another source address than `mac`
    /// are dropped and counted (igb, ixgbe).
    pub port_security: bool,
    /// `adapter=NAME` on an igb or ixgbe port: it is the PF port of that
    /// adapter, whose VFs' frames to and from it the adapter's VEB switches
    /// and counts as loopback (the PF is one of the adapter's pools, 82576
    /// datasheet §7.10.3 "Virtualization": VM-to-VM switching covers the
    /// PF's pool as the VFs').
    pub pf_adapter: Option<String>,
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
        "igbvf" => Ok(DeviceKind::Igbvf),
        "ixgbevf" => Ok(DeviceKind::Ixgbevf),
        "" => Err("missing device kind (igb, ixgbe, virtio-net, igbvf or ixgbevf)".into()),
        k => Err(format!(
            "unknown device kind '{k}' (use igb, ixgbe, virtio-net, igbvf or ixgbevf)"
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
    adapter: Option<String>,
    vf: Option<u8>,
    vlan: Option<u16>,
    qos: Option<u8>,
    spoofchk: Option<bool>,
    trust: Option<bool>,
    link: Option<nicemu_device_models::vf::agent::LinkMode>,
    port_security: Option<bool>,
}

/// `vlan=`: a port VLAN ID from 1 to 4094.
pub fn port_vlan(v: &str) -> Result<u16, String> {
    v.parse()
        .ok()
        .filter(|n| (1..=4094).contains(n))
        .ok_or_else(|| format!("vlan '{v}' must be a VLAN ID from 1 to 4094"))
}

/// `qos=`: an 802.1p priority from 0 to 7.
pub fn vlan_qos(v: &str) -> Result<u8, String> {
    v.parse()
        .ok()
        .filter(|n| *n <= 7)
        .ok_or_else(|| format!("qos '{v}' must be a priority from 0 to 7"))
}

/// `link=`: auto, enable or disable (`ip link set … vf N state`).
pub fn vf_link(v: &str) -> Result<nicemu_device_models::vf::agent::LinkMode, String> {
    use nicemu_device_models::vf::agent::LinkMode;
    match v {
        "auto" => Ok(LinkMode::Auto),
        "enable" => Ok(LinkMode::Enable),
        "disable" => Ok(LinkMode::Disable),
        _ => Err(format!("link '{v}' must be auto, enable or disable")),
    }
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
            "adapter" => self.adapter = Some(v.to_string()),
            "vf" => {
                let n = v
                    .parse()
                    .map_err(|_| format!("vf '{v}' must be a VF number (0, 1, …)"))?;
                self.vf = Some(n);
            }
            "vlan" => self.vlan = Some(port_vlan(v)?),
            "qos" => self.qos = Some(vlan_qos(v)?),
            "spoofchk" => self.spoofchk = Some(on_off("spoofchk", v)?),
            "trust" => self.trust = Some(on_off("trust", v)?),
            "link" => self.link = Some(vf_link(v)?),
            "port-security" => self.port_security = Some(on_off("port-security", v)?),
            other => {
                return Err(format!(
                    "unknown key '{other}' (known: id, socket, mac, net, queues, coalesce, delay, sfp, autoneg, cable, adapter, vf, vlan, qos, spoofchk, trust, link, port-security)"
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
        if self.adapter.is_some() && kind == DeviceKind::VirtioNet {
            return Err(
                "adapter= applies to igb, ixgbe (the PF port), igbvf and ixgbevf only".into(),
            );
        }
        let vf_keys = [
            ("vf", self.vf.is_some()),
            ("vlan", self.vlan.is_some()),
            ("qos", self.qos.is_some()),
            ("spoofchk", self.spoofchk.is_some()),
            ("trust", self.trust.is_some()),
            ("link", self.link.is_some()),
        ];
        if let Some((k, _)) = vf_keys.iter().find(|(_, set)| *set) {
            if !kind.is_vf() {
                return Err(format!("{k}= applies to igbvf and ixgbevf only"));
            }
        }
        if self.port_security.is_some() && !matches!(kind, DeviceKind::Igb | DeviceKind::Ixgbe) {
            return Err("port-security= applies to igb and ixgbe (a VF has spoofchk=)".into());
        }
        if self.qos.is_some() && self.vlan.is_none() {
            return Err("qos= needs vlan= (the priority of the port VLAN)".into());
        }
        Ok(())
    }

    /// The VF part of an igbvf/ixgbevf device: adapter= and vf= (within the
    /// part's limit) are required.
    fn vf_spec(&self, kind: DeviceKind) -> Result<Option<VfSpec>, String> {
        use nicemu_device_models::vf::agent::Admin;
        if !kind.is_vf() {
            return Ok(None);
        }
        let adapter = self
            .adapter
            .clone()
            .ok_or("missing adapter=NAME (the VFs of one adapter share its PF)")?;
        let index = self
            .vf
            .ok_or("missing vf=N (the VF's number in its adapter)")?;
        let limit = kind.vf_limit();
        if index >= limit {
            return Err(format!(
                "vf={index} is beyond the part's VFs: use 0 to {}",
                limit - 1
            ));
        }
        let d = Admin::default();
        Ok(Some(VfSpec {
            adapter,
            index,
            admin: Admin {
                mac: self.mac,
                vlan: self.vlan.map(|v| (v, self.qos.unwrap_or(0))),
                spoofchk: self.spoofchk.unwrap_or(d.spoofchk),
                trust: self.trust.unwrap_or(d.trust),
                link: self.link.unwrap_or(d.link),
                rss_query: false,
            },
        }))
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
        let vf = keys.vf_spec(kind).map_err(bad)?;
        Ok(DeviceSpec {
            kind,
            id: keys.id.ok_or_else(|| bad("missing id=NAME".into()))?,
            socket: keys
                .socket
                .ok_or_else(|| bad("missing socket=PATH".into()))?,
            // A VF without mac= has none: its driver picks one (VF_RESET NACK).
            mac: keys.mac.unwrap_or_else(|| {
                if kind.is_vf() {
                    [0; 6]
                } else {
                    default_mac(index)
                }
            }),
            net: keys.net.unwrap_or_else(|| "lan0".into()),
            queues: keys.queues.unwrap_or(1),
            coalesce: keys.coalesce.unwrap_or(false),
            delay_ns: keys.delay_ns.unwrap_or(0),
            autoneg_ns: keys
                .autoneg_ns
                .unwrap_or(nicemu_device_models::phy::AUTONEG_NS),
            cable: keys.cable,
            sfp: keys.sfp.unwrap_or_default(),
            vf,
            port_security: keys.port_security.unwrap_or(false),
            pf_adapter: if kind.is_vf() { None } else { keys.adapter },
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
    check_adapters(&devs, specs)?;
    Ok(devs)
}

/// The functions of one adapter (its VFs and at most one PF port) are of
/// one part, on one network, each VF with its own number.
fn check_adapters(devs: &[DeviceSpec], specs: &[String]) -> Result<(), Error> {
    /// What one adapter has so far: its first function, its VF numbers and
    /// its PF port.
    struct Seen<'a> {
        first: &'a DeviceSpec,
        numbers: HashSet<u8>,
        pf: Option<&'a str>,
    }
    let mut seen: std::collections::HashMap<&str, Seen> = std::collections::HashMap::new();
    for (d, spec) in devs.iter().zip(specs) {
        let (adapter, index) = match (&d.vf, &d.pf_adapter) {
            (Some(vf), _) => (vf.adapter.as_str(), Some(vf.index)),
            (None, Some(a)) => (a.as_str(), None),
            (None, None) => continue,
        };
        let bad = |reason: String| Error::BadDevice {
            spec: spec.clone(),
            reason,
        };
        let s = seen.entry(adapter).or_insert_with(|| Seen {
            first: d,
            numbers: HashSet::new(),
            pf: None,
        });
        let first = s.first;
        if first.kind.vf_kind() != d.kind.vf_kind() {
            return Err(bad(format!(
                "adapter={adapter}: {} is a {:?} function, this one a {:?} (an adapter is one part)",
                first.id, first.kind, d.kind
            )));
        }
        if first.net != d.net {
            return Err(bad(format!(
                "adapter={adapter}: {} is on net {} and this one on {} (an adapter has one port)",
                first.id, first.net, d.net
            )));
        }
        match index {
            Some(n) if !s.numbers.insert(n) => {
                return Err(bad(format!(
                    "vf={n} of adapter={adapter} is taken: each VF of an adapter needs its own number"
                )));
            }
            Some(_) => {}
            None => {
                if let Some(pf) = s.pf {
                    return Err(bad(format!(
                        "adapter={adapter}: {pf} is its PF port already (an adapter has one PF port)"
                    )));
                }
                s.pf = Some(d.id.as_str());
            }
        }
    }
    Ok(())
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
        let d = DeviceSpec::parse("igb,id=x,socket=/s,port-security=on", 1).unwrap();
        assert!(d.port_security);
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
    fn vfs_parse_with_the_linux_pf_defaults() {
        use nicemu_device_models::vf::agent::LinkMode;
        let d = DeviceSpec::parse("igbvf,id=vf0,socket=/s,adapter=a0,vf=3", 0).unwrap();
        let vf = d.vf.unwrap();
        assert_eq!(
            (d.kind, vf.adapter.as_str(), vf.index),
            (DeviceKind::Igbvf, "a0", 3)
        );
        assert_eq!(vf.admin.mac, None, "no mac=: the driver picks one");
        assert!(vf.admin.spoofchk && !vf.admin.trust);
        assert_eq!((vf.admin.vlan, vf.admin.link), (None, LinkMode::Auto));
        let d = DeviceSpec::parse(
            "ixgbevf,id=v,socket=/s,adapter=x,vf=62,mac=52:54:00:00:00:07,vlan=100,qos=3,spoofchk=off,trust=on,link=disable",
            0,
        )
        .unwrap();
        let vf = d.vf.unwrap();
        assert_eq!(vf.admin.mac, Some([0x52, 0x54, 0, 0, 0, 7]));
        assert_eq!(vf.admin.vlan, Some((100, 3)));
        assert!(!vf.admin.spoofchk && vf.admin.trust);
        assert_eq!(vf.admin.link, LinkMode::Disable);
    }

    #[test]
    fn bad_vfs_are_refused_naming_the_option() {
        for (spec, needle) in [
            ("igbvf,id=a,socket=/s,vf=0", "missing adapter"),
            ("igbvf,id=a,socket=/s,adapter=a", "missing vf"),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=7",
                "vf=7 is beyond the part's VFs: use 0 to 6",
            ),
            ("ixgbevf,id=a,socket=/s,adapter=a,vf=63", "use 0 to 62"),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=x",
                "vf 'x' must be a VF number",
            ),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=0,vlan=4095",
                "vlan '4095' must be a VLAN ID from 1 to 4094",
            ),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=0,vlan=0",
                "from 1 to 4094",
            ),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=0,qos=2",
                "qos= needs vlan=",
            ),
            ("igbvf,id=a,socket=/s,adapter=a,vf=0,vlan=5,qos=8", "0 to 7"),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=0,mac=03:00:00:00:00:01",
                "multicast",
            ),
            ("igbvf,id=a,socket=/s,adapter=a,vf=0,trust=yes", "on or off"),
            (
                "igbvf,id=a,socket=/s,adapter=a,vf=0,link=up",
                "auto, enable or disable",
            ),
            (
                "igb,id=a,socket=/s,vf=0",
                "vf= applies to igbvf and ixgbevf only",
            ),
            ("igbvf,id=a,socket=/s,adapter=a,vf=0,sfp=sr", "ixgbe only"),
            ("igb,id=a,socket=/s,port-security=yes", "on or off"),
            (
                "virtio-net,id=a,socket=/s,port-security=on",
                "igb and ixgbe",
            ),
        ] {
            let e = DeviceSpec::parse(spec, 0).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn an_adapters_vfs_have_their_own_numbers_one_kind_one_net() {
        let dir = std::env::temp_dir().join(format!("nicemu-cfg-vf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = |n: &str| dir.join(n).display().to_string();
        let two = |a: &str, b: &str| {
            parse_devices(&[
                format!("{a},id=a,socket={}", s("a")),
                format!("{b},id=b,socket={}", s("b")),
            ])
        };
        two("igbvf,adapter=p,vf=0", "igbvf,adapter=p,vf=1").unwrap();
        two("igbvf,adapter=p,vf=0", "igbvf,adapter=q,vf=0").unwrap();
        let e = two("igbvf,adapter=p,vf=1", "igbvf,adapter=p,vf=1").unwrap_err();
        assert!(e.to_string().contains("vf=1 of adapter=p is taken"), "{e}");
        let e = two("igbvf,adapter=p,vf=0", "ixgbevf,adapter=p,vf=1").unwrap_err();
        assert!(e.to_string().contains("an adapter is one part"), "{e}");
        let e = two("igbvf,adapter=p,vf=0", "igbvf,adapter=p,vf=1,net=lan9").unwrap_err();
        assert!(e.to_string().contains("one port"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_adapter_has_at_most_one_pf_port_of_its_part_on_its_net() {
        let dir = std::env::temp_dir().join(format!("nicemu-cfg-pf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = |n: &str| dir.join(n).display().to_string();
        let devs = |list: &[&str]| {
            let specs: Vec<String> = list
                .iter()
                .enumerate()
                .map(|(i, d)| format!("{d},id=d{i},socket={}", s(&format!("d{i}"))))
                .collect();
            parse_devices(&specs)
        };
        let ok = devs(&[
            "igb,adapter=p",
            "igbvf,adapter=p,vf=0",
            "igbvf,adapter=p,vf=1",
        ])
        .unwrap();
        assert_eq!(ok[0].pf_adapter.as_deref(), Some("p"));
        assert_eq!(
            (ok[0].vf.is_none(), ok[1].pf_adapter.is_none()),
            (true, true)
        );
        devs(&["ixgbevf,adapter=x,vf=0", "ixgbe,adapter=x"]).unwrap();
        devs(&["igb,adapter=lonely"]).unwrap();
        assert_eq!(devs(&["igb"]).unwrap()[0].pf_adapter, None);
        for (list, needle) in [
            (
                &["igb,adapter=p", "ixgbevf,adapter=p,vf=0"][..],
                "an adapter is one part",
            ),
            (&["ixgbevf,adapter=p,vf=0", "igb,adapter=p"], "one part"),
            (&["igb,adapter=p", "igb,adapter=p"], "has one PF port"),
            (
                &["igb,adapter=p", "igbvf,adapter=p,vf=0,net=lan9"],
                "one port",
            ),
        ] {
            let e = devs(list).unwrap_err().to_string();
            assert!(e.contains(needle), "{list:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        for (spec, needle) in [
            (
                "virtio-net,id=a,socket=/s,adapter=p",
                "adapter= applies to igb, ixgbe (the PF port), igbvf and ixgbevf",
            ),
            ("igb,id=a,socket=/s,adapter=p,vf=0", "vf= applies to igbvf"),
            ("ixgbe,id=a,socket=/s,adapter=p,trust=on", "trust= applies"),
        ] {
            let e = DeviceSpec::parse(spec, 0).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
        std::fs::remove_dir_all(dir).unwrap();
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
