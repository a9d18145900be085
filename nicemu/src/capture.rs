// SPDX-License-Identifier: Apache-2.0
//! Packet capture of a port (`nicemu ctl capture DEV FILE`): frames as they
//! leave or enter the port, written as a pcap file (Ethernet link type) with
//! the maintained `pcap-file` crate, readable by tcpdump and Wireshark.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use nicemu_device_models::Frames;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::DataLink;

/// Bytes of a frame a capture keeps (the pcap header's snaplen); longer
/// frames are truncated, with their original length recorded.
pub const SNAPLEN: u32 = 65535;

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
            snaplen: SNAPLEN,
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

    /// Records a frame if a capture runs. Inlined: with no capture (the
    /// usual case) it is one load per frame, not a call.
    #[inline]
    pub fn record(&self, frame: &[u8]) {
        if self.on.load(Ordering::Acquire) {
            self.write(frame);
        }
    }

    /// Records `frames` if a capture runs: one load per batch while none
    /// does (the batch passes at one instant, so a capture started or
    /// stopped meanwhile takes all of it or none).
    #[inline]
    pub fn record_all(&self, frames: Frames<'_>) {
        if self.on.load(Ordering::Acquire) {
            self.write_all(frames);
        }
    }

    #[cold]
    #[inline(never)]
    fn write_all(&self, frames: Frames<'_>) {
        for f in frames.iter() {
            self.write(f);
        }
    }

    #[cold]
    #[inline(never)]
    fn write(&self, frame: &[u8]) {
        let mut guard = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let Some(a) = guard.as_mut() else { return };
        let ts = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let orig = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let kept = &frame[..frame.len().min(SNAPLEN as usize)];
        let pkt = PcapPacket::new(ts, orig, kept);
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

    #[test]
    fn a_frame_over_the_snaplen_is_truncated_and_the_capture_goes_on() {
        let p = std::env::temp_dir().join(format!("nicemu-cap-big-{}.pcap", std::process::id()));
        let _ = std::fs::remove_file(&p);
        let slot = CaptureSlot::default();
        slot.start(File::create(&p).unwrap(), None).unwrap();
        slot.record(&vec![0x11; 70_000]);
        slot.record(&[0x22; 60]);
        assert_eq!(slot.stop(), Some(2), "still capturing after the big frame");
        // Record headers read by hand: pcap-file's reader refuses
        // orig_len > snaplen, which the format allows (tcpdump -s writes it).
        let b = std::fs::read(&p).unwrap();
        let be = b[0..4] == [0xa1, 0xb2, 0xc3, 0xd4];
        let u32_at = |o: usize| {
            let w: [u8; 4] = b[o..o + 4].try_into().unwrap();
            if be {
                u32::from_be_bytes(w)
            } else {
                u32::from_le_bytes(w)
            }
        };
        assert_eq!(u32_at(16), SNAPLEN);
        assert_eq!((u32_at(24 + 8), u32_at(24 + 12)), (SNAPLEN, 70_000));
        let second = 24 + 16 + SNAPLEN as usize;
        assert_eq!((u32_at(second + 8), u32_at(second + 12)), (60, 60));
        assert_eq!(b.len(), second + 16 + 60);
        std::fs::remove_file(p).unwrap();
    }
}
