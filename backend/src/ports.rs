//! Starting the configured ports: device models, their switch attachments,
//! receive threads and vfio-user servers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use device_models::igb::{self, IgbConfig};
use device_models::ixgbe::{self, IxgbeConfig};
use device_models::{Clock, DeviceEnv, MonotonicClock};

use crate::config::{DeviceKind, DeviceSpec, WireSpec};
use crate::error::Error;
use crate::switch::{DirectRx, PortCounters, Switch};
use crate::timer::{self, DeviceTimer};
use crate::trace::{TraceSink, Tracer};
use crate::vfio::{irq::EventIrq, SharedDevice, VfioPort};
use crate::wire;

/// What the control path knows of one port.
pub struct PortInfo {
    /// The id= of its --device.
    pub id: String,
    /// Model name.
    pub model: &'static str,
    /// Its socket.
    pub socket: PathBuf,
    /// Its network.
    pub net: String,
    /// MAC address, as text.
    pub mac: String,
    /// The device model.
    pub dev: SharedDevice,
    /// Switch port counters and capture slot.
    pub counters: Arc<PortCounters>,
    /// Register trace.
    pub tracer: Arc<Tracer>,
    /// Interrupt delivery (its counters show in `ctl stats`).
    pub irq: Arc<EventIrq>,
}

/// All ports, for the control socket.
#[derive(Default)]
pub struct Registry {
    /// PCI functions in command-line order.
    pub ports: Vec<PortInfo>,
    /// virtio-net ports: id, net, handle.
    pub virtio: Vec<(String, String, crate::vhost::VirtioNetPort)>,
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
            .finish()
    }
}

/// The running ports.
pub struct Running {
    sockets: std::sync::Mutex<Vec<PathBuf>>,
    /// Ports for the control path.
    pub registry: Arc<Registry>,
    /// virtio-net ports (vhost-user) by id: link state, counters.
    pub virtio: HashMap<String, crate::vhost::VirtioNetPort>,
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

/// Direct receive into a device whose receive queue is free (see [`DirectRx`]
/// and [`device_models::NicFunction::try_receive_at`]).
#[derive(Default)]
struct DirectDevice {
    dev: std::sync::OnceLock<SharedDevice>,
}

impl DirectRx for DirectDevice {
    fn try_receive(&self, frame: &[u8]) -> bool {
        self.try_receive_at(frame, MonotonicClock.now_ns())
    }

    fn try_receive_at(&self, frame: &[u8], sent_ns: u64) -> bool {
        let Some(dev) = self.dev.get() else {
            return false;
        };
        dev.try_receive_at(frame, sent_ns)
    }
}

/// Starts every device; on error, sockets already created are removed.
pub fn start(
    specs: &[DeviceSpec],
    wires: &[WireSpec],
    trace: Option<TraceSink>,
) -> Result<Running, Error> {
    let running = Running {
        sockets: std::sync::Mutex::new(Vec::new()),
        registry: Arc::new(Registry::default()),
        virtio: HashMap::new(),
    };
    let mut registry = Registry::default();
    let mut nets: HashMap<String, Arc<Switch>> = HashMap::new();
    let mut virtio = HashMap::new();
    for spec in specs {
        if spec.kind == DeviceKind::VirtioNet {
            let switch = nets.entry(spec.net.clone()).or_default().clone();
            match crate::vhost::VirtioNetPort::start(spec, &switch) {
                Ok(p) => {
                    running.add_socket(spec.socket.clone());
                    registry
                        .virtio
                        .push((spec.id.clone(), spec.net.clone(), p.clone()));
                    virtio.insert(spec.id.clone(), p);
                    log::info!(
                        "{}: virtio-net ({} queue pairs) on {} net {}",
                        spec.id,
                        spec.queues.max(1),
                        spec.socket.display(),
                        spec.net
                    );
                    continue;
                }
                Err(e) => {
                    running.remove_sockets();
                    return Err(e);
                }
            }
        }
        match start_one(spec, &mut nets, trace.clone()) {
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
    for (i, w) in wires.iter().enumerate() {
        let switch = nets.entry(w.net.clone()).or_default().clone();
        match wire::start(w, &switch) {
            Ok(started) => {
                if let Some(path) = started.socket {
                    running.add_socket(path);
                }
                registry.wires.push(WireInfo {
                    id: format!("wire{i}"),
                    what: match &w.kind {
                        crate::config::WireKind::Stream { path } => {
                            format!("stream {}", path.display())
                        }
                        crate::config::WireKind::Tap { ifname } => format!("tap {ifname}"),
                    },
                    net: w.net.clone(),
                    counters: started.counters,
                });
            }
            Err(e) => {
                running.remove_sockets();
                return Err(e);
            }
        }
        log::info!("wire {:?} on net {}", w.kind, w.net);
    }
    Ok(Running {
        registry: Arc::new(registry),
        virtio,
        ..running
    })
}

fn start_one(
    spec: &DeviceSpec,
    nets: &mut HashMap<String, Arc<Switch>>,
    trace: Option<TraceSink>,
) -> Result<PortInfo, Error> {
    let unsupported = |what: &str| Error::BadDevice {
        spec: spec.id.clone(),
        reason: format!("{what} is not available in this build yet; use igb"),
    };
    let (vectors, what, model) = match spec.kind {
        DeviceKind::Igb => (igb::MSIX_VECTORS, "igb (82576)", "igb"),
        DeviceKind::Ixgbe => (ixgbe::MSIX_VECTORS, "ixgbe (82599 SFP+)", "ixgbe"),
        DeviceKind::VirtioNet => return Err(unsupported("virtio-net")),
    };
    let switch = nets.entry(spec.net.clone()).or_default().clone();
    let direct = Arc::new(DirectDevice::default());
    let (port, rx) = switch.attach_direct(Some(direct.clone()));
    let counters = port.counters.clone();
    let irq = Arc::new(EventIrq::new(&spec.id, vectors).map_err(|e| Error::Listen {
        path: spec.socket.clone(),
        source: e,
    })?);
    let timer = Arc::new(DeviceTimer::default());
    let env = DeviceEnv {
        irq: irq.clone(),
        wire: Arc::new(port),
        clock: Arc::new(MonotonicClock),
        timer: timer.clone(),
    };
    let dev: SharedDevice = match spec.kind {
        DeviceKind::Ixgbe => ixgbe::new_function(
            IxgbeConfig {
                mac: spec.mac,
                sfp: spec.sfp,
            },
            env,
        ),
        _ => igb::new_function(IgbConfig { mac: spec.mac }, env),
    };
    let _ = direct.dev.set(dev.clone());
    dev.set_wire_delay_ns(spec.delay_ns);
    // Receive thread: frames from the switch into the device.
    let rx_dev = dev.clone();
    let rx_irq = irq.clone();
    std::thread::Builder::new()
        .name(format!("rx-{}", spec.id))
        .spawn(move || {
            crate::sched::enter_data_path();
            // One of the device's own threads: it writes the interrupts a
            // frame raised itself (EventIrq::serving).
            while let Some((frame, sent)) = rx.recv_timed() {
                rx_irq.serving(|| rx_dev.receive_at(&frame, sent));
                rx.recycle(frame);
            }
        })
        .map_err(|e| Error::Listen {
            path: spec.socket.clone(),
            source: e,
        })?;
    timer::spawn(
        &spec.id,
        timer,
        dev.clone(),
        irq.clone(),
        Arc::new(MonotonicClock),
    )
    .map_err(|e| Error::Listen {
        path: spec.socket.clone(),
        source: e,
    })?;
    let tracer = Arc::new(match trace {
        Some(sink) => Tracer::new(true, sink),
        None => Tracer::disabled(),
    });
    let port = VfioPort::new(spec.id.clone(), dev.clone(), irq.clone(), tracer.clone());
    port.serve(&spec.socket)?;
    let mac = spec
        .mac
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    log::info!(
        "{}: {what} on {} net {} mac {mac}",
        spec.id,
        spec.socket.display(),
        spec.net
    );
    Ok(PortInfo {
        id: spec.id.clone(),
        model,
        socket: spec.socket.clone(),
        net: spec.net.clone(),
        mac,
        dev,
        counters,
        tracer,
        irq,
    })
}
