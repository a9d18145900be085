// SPDX-License-Identifier: Apache-2.0
//! Starting the configured ports — igb/ixgbe functions served over
//! vfio-user (device model, switch attachment, receive thread, timer,
//! vfio-user server) and virtio-net ports served over vhost-user — and the
//! registry the control socket serves them from, every port alike.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use nicemu_device_models::function::Function;
use nicemu_device_models::igb::{self, IgbConfig};
use nicemu_device_models::ixgbe::{self, IxgbeConfig};
use nicemu_device_models::vf::{self, igbvf::I82576Vf, ixgbevf::I82599Vf, Vf, VfConfig, VfControl};
use nicemu_device_models::{DeviceEnv, MonotonicClock, NetPort, Port};

use crate::config::{DeviceKind, DeviceSpec, WireSpec};
use crate::error::Error;
use crate::latency::{PortLatency, TimedRx, TimedWire};
use crate::switch::{PortCounters, PortSlot, Switch};
use crate::timer::{self, DeviceTimer};
use crate::trace::{TraceSink, Tracer};
use crate::veb::{Adapter, LockedWire, VebWire};
use crate::vfio::{irq::EventIrq, SharedDevice, VfioPort};
use crate::vhost::VirtioNetPort;
use crate::wire;

/// How a port reaches its VM, and what only that transport has.
pub enum Transport {
    /// A PCI function served over vfio-user.
    VfioUser {
        /// Register trace.
        tracer: Arc<Tracer>,
        /// Interrupt delivery (its counters show in `ctl stats`).
        irq: Arc<EventIrq>,
        /// Register accesses (`ctl stats`: `accesses`).
        accesses: Arc<crate::vfio::accesses::Accesses>,
    },
    /// A virtio-net port served over vhost-user.
    VhostUser(VirtioNetPort),
}

/// What the control path knows of one port: an igb/ixgbe function or a
/// virtio-net port.
pub struct PortInfo {
    /// The id= of its --device.
    pub id: String,
    /// Its socket.
    pub socket: PathBuf,
    /// Its network.
    pub net: String,
    /// MAC address, as text.
    pub mac: String,
    /// The port: frames, link, counters, the driver's view, faults.
    pub port: Arc<dyn Port>,
    /// Switch port counters and capture slot.
    pub switch: Arc<PortCounters>,
    /// Its transport.
    pub transport: Transport,
    /// Where a transaction's time goes (`ctl latency`).
    pub latency: Arc<PortLatency>,
    /// An SR-IOV VF: the host's side of it (`ctl vf`, `ctl mailbox`).
    pub vf: Option<Arc<dyn VfControl>>,
}

impl PortInfo {
    /// The registry's entry of the port `spec` started.
    fn new(
        spec: &DeviceSpec,
        port: Arc<dyn Port>,
        switch: Arc<PortCounters>,
        transport: Transport,
        latency: Arc<PortLatency>,
    ) -> Self {
        PortInfo {
            id: spec.id.clone(),
            socket: spec.socket.clone(),
            net: spec.net.clone(),
            mac: mac_text(&spec.mac),
            port,
            switch,
            transport,
            latency,
            vf: None,
        }
    }
}

/// All ports, for the control socket.
#[derive(Default)]
pub struct Registry {
    /// Ports in command-line order.
    pub ports: Vec<PortInfo>,
    /// Wires in command-line order, named `wire0`, `wire1`…
    pub wires: Vec<WireInfo>,
}

/// What the control path knows of one wire.
#[derive(Debug)]
pub struct WireInfo {
    /// `wireN`, N its place among the --wire options.
    pub id: String,
    /// What it is (`stream PATH`, `tap IFNAME`).
    pub what: String,
    /// Its network.
    pub net: String,
    /// Its switch port counters.
    pub counters: Arc<PortCounters>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("ports", &self.ports.len())
            .field("wires", &self.wires.len())
            .finish()
    }
}

/// The running ports.
pub struct Running {
    sockets: std::sync::Mutex<Vec<PathBuf>>,
    /// Ports for the control path.
    pub registry: Arc<Registry>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("registry", &self.registry)
            .finish()
    }
}

impl Running {
    /// Adds a socket to remove on exit.
    pub fn add_socket(&self, p: PathBuf) {
        self.sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p);
    }

    /// Removes the sockets the ports listen on.
    pub fn remove_sockets(&self) {
        for s in self
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            if let Err(e) = std::fs::remove_file(s) {
                log::warn!("cannot remove {}: {e}", s.display());
            }
        }
    }
}

/// Starts every device and wire; on error, sockets already created are
/// removed.
pub fn start(
    specs: &[DeviceSpec],
    wires: &[WireSpec],
    trace: Option<TraceSink>,
) -> Result<Running, Error> {
    let running = Running {
        sockets: std::sync::Mutex::new(Vec::new()),
        registry: Arc::new(Registry::default()),
    };
    let mut registry = Registry::default();
    let mut nets: HashMap<String, Arc<Switch>> = HashMap::new();
    let mut adapters: HashMap<String, Arc<Adapter>> = HashMap::new();
    for spec in specs {
        let veb = spec
            .vf
            .as_ref()
            .map(|v| &v.adapter)
            .or(spec.pf_adapter.as_ref())
            .map(|a| adapters.entry(a.clone()).or_default().clone());
        let switch = nets.entry(spec.net.clone()).or_default().clone();
        let started = match spec.kind {
            DeviceKind::VirtioNet => start_virtio(spec, &switch),
            DeviceKind::Igb | DeviceKind::Ixgbe | DeviceKind::Igbvf | DeviceKind::Ixgbevf => {
                start_function(spec, &switch, trace.clone(), veb)
            }
        };
        match started {
            Ok(info) => {
                running.add_socket(spec.socket.clone());
                registry.ports.push(info);
            }
            Err(e) => {
                running.remove_sockets();
                return Err(e);
            }
        }
    }
    connect_cables(specs, &registry);
    for (i, w) in wires.iter().enumerate() {
        let switch = nets.entry(w.net.clone()).or_default().clone();
        match start_wire(i, w, &switch) {
            Ok((info, socket)) => {
                if let Some(path) = socket {
                    running.add_socket(path);
                }
                registry.wires.push(info);
            }
            Err(e) => {
                running.remove_sockets();
                return Err(e);
            }
        }
    }
    Ok(Running {
        registry: Arc::new(registry),
        ..running
    })
}

/// The MAC address as text.
fn mac_text(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Starts a virtio-net port.
fn start_virtio(spec: &DeviceSpec, switch: &Arc<Switch>) -> Result<PortInfo, Error> {
    let p = VirtioNetPort::start(spec, switch)?;
    log::info!(
        "{}: virtio-net ({} queue pairs) on {} net {}",
        spec.id,
        spec.queues.max(1),
        spec.socket.display(),
        spec.net
    );
    let lat = p.latency().clone();
    Ok(PortInfo::new(
        spec,
        Arc::new(p.clone()),
        p.switch_counters().clone(),
        Transport::VhostUser(p),
        lat,
    ))
}

/// Cables the PHYs of the ports `cable=` pairs (checked by
/// `config::parse_devices`: two igb ports, each in one cable).
fn connect_cables(specs: &[DeviceSpec], registry: &Registry) {
    let port = |id: &str| registry.ports.iter().find(|p| p.id == id);
    for spec in specs {
        let Some(other) = &spec.cable else { continue };
        let (Some(a), Some(b)) = (port(&spec.id), port(other)) else {
            continue;
        };
        let (ea, eb) = nicemu_device_models::cable::CableEnd::pair();
        if a.port.attach_cable(ea) && b.port.attach_cable(eb) {
            log::info!("{}: cabled to {other}", spec.id);
        } else {
            log::warn!(
                "{}: cable to {other} not connected (no copper PHY)",
                spec.id
            );
        }
    }
}

/// The transmit path of a function on switch port `port`: timed, locked to
/// its address with `port-security=on`, and for a VF or an adapter's PF port
/// through the adapter's VEB, which counts loopback.
fn function_wire(
    spec: &DeviceSpec,
    veb: Option<&Arc<Adapter>>,
    port: crate::switch::PortHandle,
    lat: &Arc<PortLatency>,
) -> Arc<dyn nicemu_device_models::FrameSink> {
    let counters = port.counters.clone();
    let timed: Arc<dyn nicemu_device_models::FrameSink> =
        Arc::new(TimedWire::new(Arc::new(port), lat.clone()));
    let own: Arc<dyn nicemu_device_models::FrameSink> = if spec.port_security {
        Arc::new(LockedWire::new(spec.mac, counters, timed))
    } else {
        timed
    };
    match veb {
        Some(a) if spec.vf.is_some() => Arc::new(VebWire::new(a.clone(), a.next_index(), own)),
        Some(a) => {
            a.set_pf(spec.mac);
            Arc::new(VebWire::pf(a.clone(), own))
        }
        None => own,
    }
}

/// The device model of an igb, ixgbe, igbvf or ixgbevf `spec`, and a VF's
/// control.
fn new_model(spec: &DeviceSpec, env: DeviceEnv) -> (SharedDevice, Option<Arc<dyn VfControl>>) {
    let vf_cfg = spec.vf.as_ref().map(|v| VfConfig {
        vf: v.index,
        admin: v.admin,
    });
    match (spec.kind, vf_cfg) {
        (DeviceKind::Ixgbe, _) => (
            ixgbe::new_function(
                IxgbeConfig {
                    mac: spec.mac,
                    sfp: spec.sfp,
                },
                env,
            ),
            None,
        ),
        (DeviceKind::Igbvf, Some(cfg)) => {
            let f = Arc::new(Function::<Vf<I82576Vf>>::new(cfg, env));
            (f.clone(), Some(f))
        }
        (DeviceKind::Ixgbevf, Some(cfg)) => {
            let f = Arc::new(Function::<Vf<I82599Vf>>::new(cfg, env));
            (f.clone(), Some(f))
        }
        _ => (igb::new_function(IgbConfig { mac: spec.mac }, env), None),
    }
}

/// Starts an igb or ixgbe function: the device model on its switch port,
/// its receive thread and timer, and its vfio-user server.
fn start_function(
    spec: &DeviceSpec,
    switch: &Arc<Switch>,
    trace: Option<TraceSink>,
    veb: Option<Arc<Adapter>>,
) -> Result<PortInfo, Error> {
    let (vectors, what) = match spec.kind {
        DeviceKind::Ixgbe => (ixgbe::MSIX_VECTORS, "ixgbe (82599 SFP+)"),
        DeviceKind::Igbvf => (vf::MSIX_VECTORS, "igbvf (82576 VF)"),
        DeviceKind::Ixgbevf => (vf::MSIX_VECTORS, "ixgbevf (82599 VF)"),
        _ => (igb::MSIX_VECTORS, "igb (82576)"),
    };
    let lat = Arc::new(PortLatency::default());
    let direct = Arc::new(PortSlot::default());
    let (port, rx) = switch.attach_direct(Some(direct.clone()));
    let counters = port.counters.clone();
    let irq = Arc::new(EventIrq::with_latency(&spec.id, vectors, lat.clone())?);
    let timer = Arc::new(DeviceTimer::default());
    let env = DeviceEnv {
        irq: irq.clone(),
        wire: function_wire(spec, veb.as_ref(), port, &lat),
        clock: Arc::new(MonotonicClock),
        timer: timer.clone(),
    };
    let (dev, vf_ctl) = new_model(spec, env);
    if let (Some(a), Some(vf)) = (&veb, &vf_ctl) {
        a.add(vf.clone());
    }
    let rx_dev = Arc::new(TimedRx::new(dev.clone(), lat.clone()));
    direct.set(rx_dev.clone());
    dev.set_wire_delay_ns(spec.delay_ns);
    dev.set_autoneg_ns(spec.autoneg_ns);
    // Receive thread: frames from the switch into the device.
    let rx_irq = irq.clone();
    let rx_lat = lat.clone();
    crate::threads::spawn(format!("rx-{}", spec.id), move || {
        crate::sched::enter_data_path();
        rx_lat.threads.enter("receive");
        // One of the device's own threads: it writes the interrupts a frame
        // raised itself (EventIrq::serving).
        while let Some((frame, sent)) = rx.recv_timed() {
            rx_irq.serving(|| rx_dev.deliver(&frame, Some(sent), true));
            rx.recycle(frame);
        }
    })?;
    let (timer_dev, timer_irq) = (dev.clone(), irq.clone());
    timer::spawn(
        &spec.id,
        timer,
        move |now| timer_irq.serving(|| timer_dev.on_timer(now)),
        Arc::new(MonotonicClock),
        lat.clone(),
    )?;
    let tracer = Arc::new(match trace {
        Some(sink) => Tracer::new(true, sink),
        None => Tracer::disabled(),
    });
    let accesses = Arc::new(crate::vfio::accesses::Accesses::default());
    let vfio = VfioPort::timed(
        spec.id.clone(),
        dev.clone(),
        irq.clone(),
        tracer.clone(),
        lat.clone(),
        accesses.clone(),
    );
    vfio.serve(&spec.socket)?;
    log::info!(
        "{}: {what} on {} net {} mac {}",
        spec.id,
        spec.socket.display(),
        spec.net,
        mac_text(&spec.mac)
    );
    let mut info = PortInfo::new(
        spec,
        dev,
        counters,
        Transport::VfioUser {
            tracer,
            irq,
            accesses,
        },
        lat,
    );
    info.vf = vf_ctl;
    Ok(info)
}

/// Starts wire `i` on its network's switch; returns it with the socket to
/// remove on exit, if it made one.
fn start_wire(
    i: usize,
    w: &WireSpec,
    switch: &Arc<Switch>,
) -> Result<(WireInfo, Option<PathBuf>), Error> {
    let started = wire::start(w, switch)?;
    log::info!("wire {:?} on net {}", w.kind, w.net);
    let info = WireInfo {
        id: format!("wire{i}"),
        what: match &w.kind {
            crate::config::WireKind::Stream { path } => format!("stream {}", path.display()),
            crate::config::WireKind::Tap { ifname } => format!("tap {ifname}"),
        },
        net: w.net.clone(),
        counters: started.counters,
    };
    Ok((info, started.socket))
}
