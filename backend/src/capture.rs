//! Packet capture of a port (`nicemu ctl capture DEV FILE`): frames as they
//! leave or enter the port, written as a pcap file (Ethernet link type) with
//! the maintained `pcap-file` crate, readable by tcpdump and Wireshark.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;

/// Why a capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The pcap header could not be written.
    #[error("cannot write pcap header: {0}")]
    Header(String),
}

struct Active {
    writer: PcapWriter<File>,
    remaining: Option<u64>,
    frames: u64,
}

/// A port's capture slot: empty until a capture starts. Checking an empty
/// slot costs one atomic load per frame.
#[derive(Default)]
pub struct CaptureSlot {
    on: AtomicBool,
    active: Mutex<Option<Active>>,
}

impl std::fmt::Debug for CaptureSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureSlot")
            .field("on", &self.on.load(Ordering::Relaxed))
            .finish()
    }
}

impl CaptureSlot {
    /// Starts capturing into the new file `f` (replacing a running
    /// capture), for at most `count` frames if given.
    pub fn start(&self, f: File, count: Option<u64>) -> Result<(), CaptureError> {
        let header = PcapHeader {
            datalink: DataLink::ETHERNET,
            snaplen: 65535,
            ..Default::default()
        };
        let writer =
            PcapWriter::with_header(f, header).map_err(|e| CaptureError::Header(e.to_string()))?;
        let mut a = self.active.lock().unwrap_or_else(|e| e.into_inner());
        *a = Some(Active {
            writer,
            remaining: count,
            frames: 0,
        });
        self.on.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops the capture, flushing the file; returns the frames written.
    pub fn stop(&self) -> Option<u64> {
        self.on.store(false, Ordering::Release);
        let mut a = self.active.lock().unwrap_or_else(|e| e.into_inner());
        a.take().map(|act| act.frames)
    }

    /// Frames written so far by the running capture.
    pub fn frames(&self) -> Option<u64> {
        self.active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|a| a.frames)
    }

    /// Records a frame if a capture runs.
    pub fn record(&self, frame: &[u8]) {
        if !self.on.load(Ordering::Acquire) {
            return;
        }
        let mut guard = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = guard.as_mut() else { return };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let pkt = PcapPacket::new(ts, frame.len() as u32, frame);
        if let Err(e) = a.writer.write_packet(&pkt) {
            log::warn!("capture write failed: {e}; capture stopped");
            *guard = None;
            self.on.store(false, Ordering::Release);
            return;
        }
        a.frames += 1;
        if let Some(r) = a.remaining.as_mut() {
            *r = r.saturating_sub(1);
            if *r == 0 {
                *guard = None;
                self.on.store(false, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn writes_a_readable_pcap_and_stops_after_count() {
        let p = std::env::temp_dir().join(format!("nicemu-cap-{}.pcap", std::process::id()));
        let slot = CaptureSlot::default();
        slot.record(&[1; 60]);
        slot.start(File::create(&p).unwrap(), Some(2)).unwrap();
        slot.record(&[0xaa; 60]);
        slot.record(&[0xbb; 98]);
        slot.record(&[0xcc; 60]);
        assert_eq!(slot.stop(), None, "stopped by itself after 2 frames");
        let mut r = PcapReader::new(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        let a = r.next_packet().unwrap().unwrap();
        assert_eq!(&a.data[..], &[0xaa; 60][..]);
        let b = r.next_packet().unwrap().unwrap();
        assert_eq!(b.orig_len, 98);
        assert!(r.next_packet().is_none());
        std::fs::remove_file(p).unwrap();
    }
}
