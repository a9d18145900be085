//! The control socket server: answers requests about the running ports.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::json;

use super::protocol::{Request, Response};
use crate::error::Error;
use crate::ports::{PortInfo, Registry};
use crate::trace::{open_sink, TraceFilter};

/// Longest request line accepted.
const MAX_LINE: usize = 64 * 1024;

/// Binds the control socket and serves it on a thread.
pub fn start(path: &Path, reg: Arc<Registry>) -> Result<PathBuf, Error> {
    let l = crate::socket::listen(path)?;
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            for c in l.incoming().flatten() {
                let reg = reg.clone();
                let _ = std::thread::Builder::new()
                    .name("control-conn".into())
                    .spawn(move || serve_conn(c, &reg));
            }
        })
        .map_err(|source| Error::Listen {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(path.to_path_buf())
}

fn serve_conn(s: UnixStream, reg: &Registry) {
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
            Ok(req) => handle(reg, req),
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
            .chain(reg.virtio.iter().map(|v| v.0.as_str()))
            .collect();
        Response::err(format!("no device '{dev}' (devices: {})", ids.join(", ")))
    })
}

/// Answers one request.
pub fn handle(reg: &Registry, req: Request) -> Response {
    match run(reg, req) {
        Ok(r) | Err(r) => r,
    }
}

/// Requests about a virtio-net port; `None` when `dev` is not one.
fn run_virtio(reg: &Registry, req: &Request) -> Option<Result<Response, Response>> {
    let dev = match req {
        Request::Stats { dev }
        | Request::Link { dev, .. }
        | Request::Trace { dev, .. }
        | Request::Capture { dev, .. }
        | Request::CaptureStop { dev }
        | Request::Fault { dev, .. } => dev,
        Request::List => return None,
    };
    let (_, _, p) = reg.virtio.iter().find(|(id, _, _)| id == dev)?;
    Some(match req {
        Request::Stats { .. } => Ok(Response::ok(json!({
            "dev": dev,
            "port": p.port_stats(),
            "queues": p.queue_stats(),
            "net": net_stats(p.net_counters()),
            "connected": p.connected(),
        }))),
        Request::Link { up, .. } => {
            p.set_link(*up);
            Ok(Response::ok(
                json!({ "dev": dev, "link": if *up { "up" } else { "down" } }),
            ))
        }
        _ => Err(Response::err(format!(
            "{dev} is a virtio-net port: it supports list, stats and link"
        ))),
    })
}

/// The counters of a port's network (its switch's MAC table).
pub fn net_stats(n: &crate::switch::NetCounters) -> serde_json::Value {
    json!({
        "fdb_entries": n.fdb_entries.load(Ordering::Relaxed),
        "fdb_aged": n.fdb_aged.load(Ordering::Relaxed),
        "fdb_evictions": n.fdb_evictions.load(Ordering::Relaxed),
    })
}

fn run(reg: &Registry, req: Request) -> Result<Response, Response> {
    if let Some(r) = run_virtio(reg, &req) {
        return r;
    }
    match req {
        Request::List => {
            let ports: Vec<_> = reg
                .ports
                .iter()
                .map(|p| {
                    let v = p.dev.driver_view();
                    json!({
                        "id": p.id, "model": p.model, "socket": p.socket, "net": p.net, "mac": p.mac,
                        "link": if v.link_up { "up" } else { "down" },
                        "driver_loaded": v.driver_loaded,
                        "rx_enabled": v.rx_enabled, "tx_enabled": v.tx_enabled,
                        "rx_queues": v.rx_queues, "tx_queues": v.tx_queues,
                        "interrupts": v.interrupts,
                        "tracing": p.tracer.enabled(),
                        "capturing": p.counters.capture.frames().is_some(),
                    })
                })
                .collect();
            let mut ports = ports;
            ports.extend(reg.virtio.iter().map(|(id, net, p)| {
                json!({
                    "id": id, "model": "virtio-net", "socket": p.socket(), "net": net, "mac": "",
                    "link": if p.link_up() { "up" } else { "down" },
                    "driver_loaded": p.connected(),
                    "rx_queues": (0..p.queue_stats().len()).collect::<Vec<_>>(),
                    "tx_queues": (0..p.queue_stats().len()).collect::<Vec<_>>(),
                    "interrupts": "vhost-user",
                })
            }));
            Ok(Response::ok(json!({ "devices": ports })))
        }
        Request::Stats { dev } => {
            let p = port(reg, &dev)?;
            let (counters, errors) = {
                let d = &p.dev;
                (d.counters(), d.error_counters())
            };
            let c = &p.counters;
            Ok(Response::ok(json!({
                "dev": dev,
                "counters": counters.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "guest_errors": errors.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
                "switch": {
                    "tx_frames": c.tx_frames.load(Ordering::Relaxed),
                    "rx_frames": c.rx_frames.load(Ordering::Relaxed),
                    "rx_drops": c.rx_drops.load(Ordering::Relaxed),
                    "runt_drops": c.runt_drops.load(Ordering::Relaxed),
                },
                "net": net_stats(&c.net),
            })))
        }
        Request::Trace {
            dev,
            on,
            filter,
            file,
        } => {
            let p = port(reg, &dev)?;
            let filter = filter
                .as_deref()
                .map(TraceFilter::parse)
                .transpose()
                .map_err(Response::err)?;
            let sink = match &file {
                Some(f) => {
                    Some(open_sink(Some(Path::new(f))).map_err(|e| Response::err(e.to_string()))?)
                }
                None => None,
            };
            p.tracer.set(on, filter, sink);
            Ok(Response::ok(json!({ "dev": dev, "tracing": on })))
        }
        Request::Capture { dev, file, count } => {
            let p = port(reg, &dev)?;
            p.counters
                .capture
                .start(Path::new(&file), count)
                .map_err(|e| Response::err(e.to_string()))?;
            Ok(Response::ok(json!({ "dev": dev, "file": file })))
        }
        Request::CaptureStop { dev } => {
            let p = port(reg, &dev)?;
            let n = p.counters.capture.stop();
            Ok(Response::ok(json!({ "dev": dev, "frames": n })))
        }
        Request::Link { dev, up } => {
            let p = port(reg, &dev)?;
            p.dev.set_link(up);
            Ok(Response::ok(
                json!({ "dev": dev, "link": if up { "up" } else { "down" } }),
            ))
        }
        Request::Fault { dev, fault } => {
            let p = port(reg, &dev)?;
            p.dev
                .inject(fault.clone().into())
                .map_err(|e| Response::err(e.to_string()))?;
            Ok(Response::ok(json!({ "dev": dev, "fault": fault })))
        }
    }
}
