// SPDX-License-Identifier: Apache-2.0
//! The VEB (virtual Ethernet bridge) of one SR-IOV adapter: frames one of
//! its VFs sends to another of its VFs, or to the adapter's PF port
//! (`--device igb|ixgbe,…,adapter=NAME`), and frames the PF port sends to
//! a VF, are switched inside the adapter and counted in the VFs' loopback
//! counters (82576 datasheet §7.8.3.x "VM to VM switching", the PF being
//! one of the adapter's pools; the VF's VFGPTLBC/VFGOTLBC and
//! VFGPRLBC/VFGORLBC). The PF port has no loopback counters of its own
//! here.
//! The frames themselves take the network's switch as every frame does
//! (its learning, its queues); the VEB counts what the adapter would
//! have looped back: a unicast to a sibling VF's address, or a broadcast
//! or multicast (once sent, received by every sibling). Also the port
//! security any igb or ixgbe port can have ([`LockedWire`]).

use std::sync::{Arc, RwLock};

use nicemu_device_models::vf::VfControl;
use nicemu_device_models::{FrameBatch, FrameSink};

/// The VFs of one adapter, in the order they were started, and the MAC
/// address of its PF port, if it has one.
#[derive(Default)]
pub struct Adapter {
    vfs: RwLock<Vec<Arc<dyn VfControl>>>,
    pf: RwLock<Option<[u8; 6]>>,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.vfs.read().map_or(0, |v| v.len());
        f.debug_struct("Adapter").field("vfs", &n).finish()
    }
}

impl Adapter {
    /// The place the next VF added will have.
    pub fn next_index(&self) -> usize {
        self.vfs.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Adds a VF (at [`Self::next_index`]).
    pub fn add(&self, vf: Arc<dyn VfControl>) {
        self.vfs.write().unwrap_or_else(|e| e.into_inner()).push(vf);
    }

    /// The adapter's PF port has address `mac` (the one it was configured
    /// with: the VEB does not follow a PF driver's change of it).
    pub fn set_pf(&self, mac: [u8; 6]) {
        *self.pf.write().unwrap_or_else(|e| e.into_inner()) = Some(mac);
    }

    /// Counts a frame VF `from` (`None`: the PF port) sent that the adapter
    /// loops back to its other VFs or its PF port, if any.
    pub fn count(&self, from: Option<usize>, frame: &[u8]) {
        if frame.len() < 14 {
            return;
        }
        let vfs = self.vfs.read().unwrap_or_else(|e| e.into_inner());
        let octets = frame.len() as u64 + 4;
        let dst = &frame[..6];
        let group = dst[0] & 1 != 0;
        let mut looped = from.is_some()
            && self
                .pf
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .is_some_and(|pf| group || pf == dst);
        for (i, vf) in vfs.iter().enumerate() {
            if Some(i) == from || !(group || vf.vf_mac() == dst) {
                continue;
            }
            vf.count_loopback(false, 1, octets);
            looped = true;
        }
        if looped {
            if let Some(me) = from.and_then(|i| vfs.get(i)) {
                me.count_loopback(true, 1, octets);
            }
        }
    }
}

/// A VF's or the PF port's transmit path through its adapter's VEB to the
/// network.
pub struct VebWire {
    adapter: Arc<Adapter>,
    index: Option<usize>,
    inner: Arc<dyn FrameSink>,
}

impl VebWire {
    /// The wire of the VF at `index` in `adapter`, onto `inner`.
    pub fn new(adapter: Arc<Adapter>, index: usize, inner: Arc<dyn FrameSink>) -> Self {
        VebWire {
            adapter,
            index: Some(index),
            inner,
        }
    }

    /// The wire of `adapter`'s PF port, onto `inner`.
    pub fn pf(adapter: Arc<Adapter>, inner: Arc<dyn FrameSink>) -> Self {
        VebWire {
            adapter,
            index: None,
            inner,
        }
    }
}

impl FrameSink for VebWire {
    fn transmit(&self, frame: &[u8]) {
        self.adapter.count(self.index, frame);
        self.inner.transmit(frame);
    }

    fn transmit_at(&self, frame: &[u8], sent_ns: u64) {
        self.adapter.count(self.index, frame);
        self.inner.transmit_at(frame, sent_ns);
    }

    fn transmit_batch(&self, batch: &FrameBatch) {
        for f in batch.frames().iter() {
            self.adapter.count(self.index, f);
        }
        self.inner.transmit_batch(batch);
    }
}

/// A port whose frames must come from its own MAC address
/// (`port-security=on`): any other source is dropped and counted
/// (`spoof_drops` of its switch port), so it cannot take another port's
/// unicast by sending with that port's address.
pub struct LockedWire {
    mac: [u8; 6],
    counters: Arc<crate::switch::PortCounters>,
    inner: Arc<dyn FrameSink>,
}

impl LockedWire {
    /// The wire of a port locked to `mac`, counting in `counters`.
    pub fn new(
        mac: [u8; 6],
        counters: Arc<crate::switch::PortCounters>,
        inner: Arc<dyn FrameSink>,
    ) -> Self {
        LockedWire {
            mac,
            counters,
            inner,
        }
    }

    /// The frame comes from the port's address; else it is counted.
    fn own(&self, frame: &[u8]) -> bool {
        let ok = frame.len() < 12 || frame[6..12] == self.mac;
        if !ok {
            self.counters
                .spoof_drops
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        ok
    }
}

impl FrameSink for LockedWire {
    fn transmit(&self, frame: &[u8]) {
        if self.own(frame) {
            self.inner.transmit(frame);
        }
    }

    fn transmit_at(&self, frame: &[u8], sent_ns: u64) {
        if self.own(frame) {
            self.inner.transmit_at(frame, sent_ns);
        }
    }

    fn transmit_batch(&self, batch: &FrameBatch) {
        if batch
            .frames()
            .iter()
            .all(|f| f.len() < 12 || f[6..12] == self.mac)
        {
            self.inner.transmit_batch(batch);
            return;
        }
        let sent = batch.sent();
        for f in batch.frames().iter() {
            if self.own(f) {
                self.inner.transmit_at(f, sent);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicemu_device_models::testutil::driver::{DriverQueues, MAC};
    use nicemu_device_models::vf::double::{mbx_call, reset_handshake};
    use nicemu_device_models::vf::igbvf::I82576Vf;
    use nicemu_device_models::vf::Vf;

    #[derive(Default)]
    struct Sink(std::sync::Mutex<usize>);
    impl FrameSink for Sink {
        fn transmit(&self, _: &[u8]) {
            *self.0.lock().unwrap() += 1;
        }
    }

    fn total(
        vf: &Arc<dyn VfControl>,
        name: &str,
        port: &dyn nicemu_device_models::Introspect,
    ) -> u64 {
        let _ = vf;
        port.counters()
            .into_iter()
            .find(|(n, _)| n == name)
            .map_or(0, |c| c.1)
    }

    #[test]
    fn a_locked_port_drops_and_counts_frames_from_other_addresses() {
        let sink = Arc::new(Sink::default());
        let counters = Arc::new(crate::switch::PortCounters::default());
        let w = LockedWire::new(MAC, counters.clone(), sink.clone());
        let mut f = vec![0u8; 60];
        f[6..12].copy_from_slice(&MAC);
        w.transmit(&f);
        f[11] ^= 1;
        w.transmit_at(&f, 5);
        assert_eq!(*sink.0.lock().unwrap(), 1);
        assert_eq!(
            counters
                .spoof_drops
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    #[test]
    fn frames_between_vfs_of_an_adapter_are_counted_as_loopback() {
        let (a, _) = Vf::<I82576Vf>::dev();
        let (b, _) =
            Vf::<I82576Vf>::dev_with(Vf::<I82576Vf>::test_config([0x52, 0x54, 0, 0, 0, 0x77]));
        reset_handshake(&a);
        reset_handshake(&b);
        let _ = mbx_call::<I82576Vf>;
        let (a, b) = (Arc::new(a), Arc::new(b));
        let adapter = Arc::new(Adapter::default());
        adapter.add(a.clone());
        adapter.add(b.clone());
        let sink = Arc::new(Sink::default());
        let wire = VebWire::new(adapter.clone(), 0, sink.clone());
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 0x77]);
        f[6..12].copy_from_slice(&MAC);
        wire.transmit(&f);
        f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 0x99]);
        wire.transmit(&f);
        f[..6].copy_from_slice(&[0xff; 6]);
        wire.transmit(&f);
        assert_eq!(
            *sink.0.lock().unwrap(),
            3,
            "every frame goes on to the network"
        );
        let (ac, bc): (Arc<dyn VfControl>, Arc<dyn VfControl>) = (a.clone(), b.clone());
        assert_eq!(
            total(&ac, "GPTLBC", a.as_ref()),
            2,
            "to the sibling and broadcast"
        );
        assert_eq!(total(&ac, "GOTLBC", a.as_ref()), 128);
        assert_eq!(total(&bc, "GPRLBC", b.as_ref()), 2);
        assert_eq!(total(&ac, "GPRLBC", a.as_ref()), 0, "not to itself");
    }

    #[test]
    fn frames_between_a_vf_and_its_adapters_pf_port_are_loopback_too() {
        let (a, _) = Vf::<I82576Vf>::dev();
        reset_handshake(&a);
        let a = Arc::new(a);
        let adapter = Arc::new(Adapter::default());
        adapter.add(a.clone());
        let pf_mac = [0x52, 0x54, 0, 0, 0, 0x57];
        adapter.set_pf(pf_mac);
        let sink = Arc::new(Sink::default());
        let vf_wire = VebWire::new(adapter.clone(), 0, sink.clone());
        let pf_wire = VebWire::pf(adapter.clone(), sink.clone());
        let ac: Arc<dyn VfControl> = a.clone();
        let vf_mac = ac.vf_mac();
        let mut f = vec![0u8; 60];
        // VF to the PF port: the VF's transmit loopback.
        f[..6].copy_from_slice(&pf_mac);
        f[6..12].copy_from_slice(&vf_mac);
        vf_wire.transmit(&f);
        // VF to a station outside: not looped back.
        f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 0x99]);
        vf_wire.transmit(&f);
        // A broadcast from the VF reaches the PF port inside the adapter.
        f[..6].copy_from_slice(&[0xff; 6]);
        vf_wire.transmit(&f);
        assert_eq!(total(&ac, "GPTLBC", a.as_ref()), 2);
        assert_eq!(total(&ac, "GOTLBC", a.as_ref()), 128);
        // The PF port to the VF, a broadcast, and to a station outside.
        f[..6].copy_from_slice(&vf_mac);
        f[6..12].copy_from_slice(&pf_mac);
        pf_wire.transmit(&f);
        f[..6].copy_from_slice(&[0xff; 6]);
        pf_wire.transmit_at(&f, 1);
        f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 0x99]);
        pf_wire.transmit(&f);
        assert_eq!(total(&ac, "GPRLBC", a.as_ref()), 2);
        assert_eq!(total(&ac, "GORLBC", a.as_ref()), 128);
        assert_eq!(total(&ac, "GPTLBC", a.as_ref()), 2, "unchanged");
        assert_eq!(*sink.0.lock().unwrap(), 6, "every frame goes on");
    }
}
