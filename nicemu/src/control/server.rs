// SPDX-License-Identifier: Apache-2.0
//! The control socket server: answers requests about the running ports.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nicemu_device_models::vf::agent::LinkMode;
use nicemu_device_models::vf::VfControl;
use nicemu_device_models::FaultError;
use serde_json::json;

use super::protocol::{FaultSpec, Request, Response, Switch, VfSet, VfState};
use crate::error::Error;
use crate::outfile::OutputDir;
use crate::ports::{PortInfo, Registry, Transport};
use crate::trace::{sink_of, TraceFilter};

/// Longest request line accepted.
const MAX_LINE: usize = 64 * 1024;
/// Connections served at once; more are answered "busy" and closed.
pub const MAX_CONNS: usize = 16;
/// A connection that sends no request, or does not read its reply, for this
/// long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a refused connection is given to send its request and read
/// the refusal.
const REFUSAL_TIMEOUT: Duration = Duration::from_millis(100);

/// What the control server serves: the ports and where files go.
struct Ctl {
    reg: Arc<Registry>,
    out: OutputDir,
}

/// Binds the control socket and serves it on a thread; files named by
/// `trace --file` and `capture` are created in `out`.
pub fn start(path: &Path, reg: Arc<Registry>, out: OutputDir) -> Result<PathBuf, Error> {
    let l = crate::socket::listen(path)?;
    let ctl = Arc::new(Ctl { reg, out });
    let active = Arc::new(AtomicUsize::new(0));
    crate::threads::spawn("control".into(), move || {
        for c in l.incoming().flatten() {
            admit(c, &ctl, &active);
        }
    })?;
    Ok(path.to_path_buf())
}

/// Refuses a peer of another user, or any connection beyond
/// [`MAX_CONNS`] (with a one-line error), else serves it on its own thread.
fn admit(c: UnixStream, ctl: &Arc<Ctl>, active: &Arc<AtomicUsize>) {
    let refuse = |mut c: UnixStream, why: &str| {
        let _ = c.set_write_timeout(Some(REFUSAL_TIMEOUT));
        let _ = writeln!(
            c,
            "{}",
            serde_json::to_string(&Response::err(why)).unwrap_or_default()
        );
        // Take the request the peer may be sending, so that closing with
        // it unread does not reset the connection before the peer has
        // read the answer (bounded: one read, a short timeout).
        let _ = c.shutdown(std::net::Shutdown::Write);
        let _ = c.set_read_timeout(Some(REFUSAL_TIMEOUT));
        let _ = c.read(&mut [0u8; 4096]);
    };
    if !crate::socket::peer_allowed(&c) {
        log::warn!("control: refused a peer of another user");
        return refuse(
            c,
            "refused: the control socket serves nicemu's own user and root",
        );
    }
    if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNS {
        active.fetch_sub(1, Ordering::AcqRel);
        return refuse(c, "busy: too many control connections, try again");
    }
    let (ctl, act) = (ctl.clone(), active.clone());
    let spawned = std::thread::Builder::new()
        .name("control-conn".into())
        .spawn(move || {
            serve_conn(c, &ctl);
            act.fetch_sub(1, Ordering::AcqRel);
        });
    if spawned.is_err() {
        active.fetch_sub(1, Ordering::AcqRel);
    }
}

fn serve_conn(s: UnixStream, ctl: &Ctl) {
    if s.set_read_timeout(Some(IDLE_TIMEOUT)).is_err()
        || s.set_write_timeout(Some(IDLE_TIMEOUT)).is_err()
    {
        return;
    }
    let Ok(w) = s.try_clone() else { return };
    let mut w = w;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        let mut limited = (&mut r).take(MAX_LINE as u64);
        match limited.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) => {}
            Err(_) => return,
        }
        if !line.ends_with('\n') && line.len() >= MAX_LINE {
            let _ = writeln!(
                w,
                "{}",
                serde_json::to_string(&Response::err("request too long")).unwrap_or_default()
            );
            return;
        }
        let resp = match serde_json::from_str::<Request>(line.trim()) {
            Ok(req) => handle(&ctl.reg, &ctl.out, req),
            Err(e) => Response::err(format!("bad request: {e}")),
        };
        let out = serde_json::to_string(&resp).unwrap_or_else(|_| r#"{"ok":false}"#.into());
        if writeln!(w, "{out}").is_err() {
            return;
        }
    }
}

fn port<'a>(reg: &'a Registry, dev: &str) -> Result<&'a PortInfo, Response> {
    reg.ports.iter().find(|p| p.id == dev).ok_or_else(|| {
        let ids: Vec<&str> = reg
            .ports
            .iter()
            .map(|p| p.id.as_str())
            .chain(reg.wires.iter().map(|w| w.id.as_str()))
            .collect();
        Response::err(format!("no device '{dev}' (devices: {})", ids.join(", ")))
    })
}

/// Answers one request; files it names are created in `out`.
pub fn handle(reg: &Registry, out: &OutputDir, req: Request) -> Response {
    match run(reg, out, req) {
        Ok(r) | Err(r) => r,
    }
}

/// The counters of a port's network (its switch's MAC table).
pub fn net_stats(n: &crate::switch::NetCounters) -> serde_json::Value {
    json!({
        "fdb_entries": n.fdb_entries.load(Ordering::Relaxed),
        "fdb_aged": n.fdb_aged.load(Ordering::Relaxed),
        "fdb_evictions": n.fdb_evictions.load(Ordering::Relaxed),
    })
}

/// The switch counters of one port, as `ctl stats` shows them.
fn switch_stats(c: &crate::switch::PortCounters) -> serde_json::Value {
    json!({
        "tx_frames": c.tx_frames.load(Ordering::Relaxed),
        "rx_frames": c.rx_frames.load(Ordering::Relaxed),
        "rx_drops": c.rx_drops.load(Ordering::Relaxed),
        "runt_drops": c.runt_drops.load(Ordering::Relaxed),
        "spoof_drops": c.spoof_drops.load(Ordering::Relaxed),
        "egress_drops": c.egress_drops.load(Ordering::Relaxed),
    })
}

/// Requests about a wire; `None` when `dev` is not one.
fn run_wire(reg: &Registry, req: &Request) -> Option<Result<Response, Response>> {
    let dev = req.dev()?;
    let w = reg.wires.iter().find(|w| w.id == dev)?;
    Some(match req {
        Request::Stats { .. } => Ok(Response::ok(json!({
            "dev": dev,
            "wire": w.what,
            "switch": switch_stats(&w.counters),
            "net": net_stats(&w.counters.net),
        }))),
        _ => Err(Response::err(format!(
            "{dev} is a wire ({}): it supports list and stats",
            w.what
        ))),
    })
}

/// `ctl list`: every port, then every wire.
fn list(reg: &Registry) -> Response {
    let ports = reg.ports.iter().map(|p| {
        let v = p.port.driver_view();
        let tracing = match &p.transport {
            Transport::VfioUser { tracer, .. } => tracer.enabled(),
            Transport::VhostUser(_) => false,
        };
        // A VF's MAC is the one the agent has now (its driver may choose it).
        let mac =
            p.vf.as_ref()
                .map_or_else(|| p.mac.clone(), |vf| mac_string(&vf.vf_mac()));
        json!({
            "id": p.id, "model": p.port.model(), "socket": p.socket, "net": p.net, "mac": mac,
            "link": if v.link_up { "up" } else { "down" },
            "driver_loaded": v.driver_loaded,
            "rx_enabled": v.rx_enabled, "tx_enabled": v.tx_enabled,
            "rx_queues": v.rx_queues, "tx_queues": v.tx_queues,
            "interrupts": v.interrupts,
            "tracing": tracing,
            "capturing": p.switch.capture.frames().is_some(),
        })
    });
    let wires = reg.wires.iter().map(|w| {
        json!({
            "id": w.id, "model": "wire", "socket": w.what, "net": w.net, "mac": "",
            "link": "up", "driver_loaded": false,
            "rx_queues": [], "tx_queues": [], "interrupts": "-",
        })
    });
    Response::ok(json!({ "devices": ports.chain(wires).collect::<Vec<_>>() }))
}

/// `ctl stats` of a port: its counters and guest errors, its switch port
/// and network; a vfio-user function adds its interrupt fds' errors, a
/// virtio-net port its counters by port and queue pair as well.
fn stats(p: &PortInfo) -> serde_json::Value {
    let mut errors = p.port.error_counters();
    if let Transport::VfioUser { irq, .. } = &p.transport {
        errors.extend(irq.counters().list());
    }
    let pairs = |l: Vec<(String, u64)>| {
        l.into_iter()
            .map(|(k, v)| json!([k, v]))
            .collect::<Vec<_>>()
    };
    let mut v = json!({
        "dev": p.id,
        "model": p.port.model(),
        "counters": pairs(p.port.counters()),
        "guest_errors": pairs(errors.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        "switch": switch_stats(&p.switch),
        "net": net_stats(&p.switch.net),
    });
    if let Transport::VfioUser { irq, accesses, .. } = &p.transport {
        let mut a: serde_json::Map<String, serde_json::Value> = (accesses.list().into_iter())
            .map(|(k, n)| (k.to_owned(), json!(n)))
            .collect();
        a.insert(
            "irqs_raised".into(),
            json!(irq.counters().raised.load(Ordering::Relaxed)),
        );
        let (tx, rx) = p.port.descriptors();
        a.insert("tx_descriptors".into(), json!(tx));
        a.insert("rx_descriptors".into(), json!(rx));
        v["accesses"] = serde_json::Value::Object(a);
    }
    if let Transport::VhostUser(vp) = &p.transport {
        v["port"] = json!(vp.port_stats());
        v["queues"] = json!(vp.queue_stats());
        v["connected"] = json!(vp.connected());
    }
    v
}

/// `latency DEV [--reset]`: the port's stages and threads, then cleared on
/// request.
fn latency(p: &PortInfo, dev: &str, reset: bool) -> Result<Response, Response> {
    let stages = p.latency.to_json();
    if reset {
        p.latency.reset();
    }
    let threads = p.latency.threads.report(reset);
    Ok(Response::ok(json!({
        "dev": dev, "unit": "ns", "stages": stages, "threads": threads, "reset": reset
    })))
}

fn run(reg: &Registry, out: &OutputDir, req: Request) -> Result<Response, Response> {
    if let Some(r) = run_wire(reg, &req).or_else(|| run_vf(reg, &req)) {
        return r;
    }
    match req {
        Request::List => Ok(list(reg)),
        Request::Stats { dev } => Ok(Response::ok(stats(port(reg, &dev)?))),
        Request::Trace {
            dev,
            on,
            filter,
            file,
        } => {
            let p = port(reg, &dev)?;
            let Transport::VfioUser { tracer, .. } = &p.transport else {
                return Err(Response::err(format!(
                    "{dev} is a {} port: it has no registers to trace",
                    p.port.model()
                )));
            };
            let filter = filter
                .as_deref()
                .map(TraceFilter::parse)
                .transpose()
                .map_err(Response::err)?;
            let sink = match &file {
                Some(f) => {
                    let (f, _) = out
                        .create(Path::new(f))
                        .map_err(|e| Response::err(e.to_string()))?;
                    Some(sink_of(f))
                }
                None => None,
            };
            tracer.set(on, filter, sink);
            Ok(Response::ok(json!({ "dev": dev, "tracing": on })))
        }
        Request::Capture { dev, file, count } => {
            let p = port(reg, &dev)?;
            let (f, full) = out
                .create(Path::new(&file))
                .map_err(|e| Response::err(e.to_string()))?;
            p.switch
                .capture
                .start(f, count)
                .map_err(|e| Response::err(e.to_string()))?;
            Ok(Response::ok(json!({ "dev": dev, "file": full })))
        }
        Request::CaptureStop { dev } => {
            let p = port(reg, &dev)?;
            let n = p.switch.capture.stop();
            Ok(Response::ok(json!({ "dev": dev, "frames": n })))
        }
        Request::Link { dev, up } => {
            let p = port(reg, &dev)?;
            p.port.set_link(up);
            Ok(Response::ok(
                json!({ "dev": dev, "link": if up { "up" } else { "down" } }),
            ))
        }
        Request::Latency { dev, reset } => latency(port(reg, &dev)?, &dev, reset),
        Request::Fault { dev, fault } => {
            let p = port(reg, &dev)?;
            let Some(f) = fault.clone().device_fault() else {
                return Err(Response::err("a VF fault"));
            };
            p.port.inject(f).map_err(|e| match e {
                FaultError::Unsupported(_) => {
                    Response::err(format!("{dev} is a {} port: {e}", p.port.model()))
                }
                e => Response::err(e.to_string()),
            })?;
            Ok(Response::ok(json!({ "dev": dev, "fault": fault })))
        }
        Request::Vf { .. } | Request::Mailbox { .. } => Err(Response::err("not a VF request")),
    }
}

/// Requests about a VF's PF side (`vf`, `mailbox`, its faults); `None` for
/// the others.
fn run_vf(reg: &Registry, req: &Request) -> Option<Result<Response, Response>> {
    let vf = |dev: &str| port(reg, dev).and_then(|p| vf_of(p, dev));
    Some(match req {
        Request::Vf { dev, set } => vf(dev).and_then(|vf| {
            if let Some(set) = set {
                vf_set(vf.as_ref(), set).map_err(Response::err)?;
            }
            Ok(Response::ok(vf_view(dev, vf.as_ref())))
        }),
        Request::Mailbox { dev } => vf(dev).map(|vf| Response::ok(mailbox_view(dev, vf.as_ref()))),
        Request::Fault { dev, fault } if fault.clone().device_fault().is_none() => {
            vf(dev).map(|vf| {
                vf_fault(&vf, fault);
                Response::ok(json!({ "dev": dev, "fault": fault }))
            })
        }
        _ => return None,
    })
}

/// The VF control of port `p`, or why it has none.
fn vf_of(p: &PortInfo, dev: &str) -> Result<Arc<dyn VfControl>, Response> {
    p.vf.clone().ok_or_else(|| {
        Response::err(format!(
            "{dev} is a {} port, not a VF (igbvf, ixgbevf)",
            p.port.model()
        ))
    })
}

/// A fault of a VF's PF side.
fn vf_fault(vf: &Arc<dyn VfControl>, f: &FaultSpec) {
    match f {
        FaultSpec::MbxNack { n } => vf.mbx_nack(*n),
        FaultSpec::MbxDrop { n } => vf.mbx_drop(*n),
        FaultSpec::PfReset => vf.pf_reset(),
        FaultSpec::Vflr => vf.vflr(),
        _ => {}
    }
}

/// `ctl vf DEV SETTING …`: one of the host's settings changed, checked as
/// `--device` checks it.
fn vf_set(vf: &dyn VfControl, set: &VfSet) -> Result<(), String> {
    let mut a = vf.admin();
    let on = |s: &Switch| *s == Switch::On;
    match set {
        VfSet::Mac { mac } => {
            let m = crate::config::parse_mac(mac)
                .ok_or_else(|| format!("mac '{mac}' is not like 52:54:00:12:34:56"))?;
            if !nicemu_device_models::vf::agent::valid_unicast(&m) {
                return Err(format!(
                    "mac '{mac}' is multicast or zero: use a unicast address"
                ));
            }
            a.mac = Some(m);
        }
        VfSet::Vlan { vlan: 0, .. } => a.vlan = None,
        VfSet::Vlan { vlan, qos } => {
            if *vlan > 4094 || *qos > 7 {
                return Err(format!(
                    "vlan {vlan} qos {qos}: the VLAN ID must be 0 to 4094, the priority 0 to 7"
                ));
            }
            a.vlan = Some((*vlan, *qos));
        }
        VfSet::Spoofchk { state } => a.spoofchk = on(state),
        VfSet::Trust { state } => a.trust = on(state),
        VfSet::QueryRss { state } => a.rss_query = on(state),
        VfSet::State { state } => {
            a.link = match state {
                VfState::Auto => LinkMode::Auto,
                VfState::Enable => LinkMode::Enable,
                VfState::Disable => LinkMode::Disable,
            };
        }
    }
    vf.set_admin(a);
    Ok(())
}

/// The MAC address as text.
fn mac_string(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `ctl vf DEV`: the host's settings and the agent's view of the VF.
fn vf_view(dev: &str, vf: &dyn VfControl) -> serde_json::Value {
    let a = vf.agent();
    let ad = a.admin;
    json!({
        "dev": dev,
        "vf": vf.vf_index(),
        "mac": mac_string(&a.mac),
        "admin_mac": ad.mac.map(|m| mac_string(&m)),
        "vlan": ad.vlan.map_or(0, |v| v.0),
        "qos": ad.vlan.map_or(0, |v| v.1),
        "spoofchk": ad.spoofchk,
        "trust": ad.trust,
        "link_state": format!("{:?}", ad.link).to_lowercase(),
        "query_rss": ad.rss_query,
        "clear_to_send": a.cts,
        "api": a.api,
        "xcast": format!("{:?}", a.xcast).to_lowercase(),
        "max_frame": a.max_frame,
        "vlans": a.vlans,
        "mc_hashes": a.mc.len(),
        "uc_filters": a.uc.iter().map(mac_string).collect::<Vec<_>>(),
        "nacks": a.nacks,
    })
}

/// `ctl mailbox DEV`: counters and the message trace.
fn mailbox_view(dev: &str, vf: &dyn VfControl) -> serde_json::Value {
    let (st, nacks) = vf.mailbox_stats();
    let trace: Vec<_> = vf
        .mailbox_trace()
        .iter()
        .map(|t| {
            let words: Vec<String> = t.words[..usize::from(t.len).min(4)]
                .iter()
                .map(|w| format!("{w:#010x}"))
                .collect();
            json!({ "from": if t.from_vf { "vf" } else { "pf" }, "words": words, "len": t.len })
        })
        .collect();
    json!({
        "dev": dev,
        "requests": st.requests, "pf_messages": st.pf_messages, "acks": st.acks,
        "unlocked_writes": st.unlocked_writes, "replaced": st.replaced, "nacks": nacks,
        "trace": trace,
    })
}
