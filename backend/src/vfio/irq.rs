//! Interrupts of an igb/ixgbe function as its device model signals them:
//! the vfio-user server's eventfd [`Interrupts`] behind the model's
//! [`InterruptSink`].

use device_models::InterruptSink;
use vfio_user_server::Interrupts;

/// The eventfd-backed interrupts of one function, as a device model's
/// interrupt sink.
#[derive(Debug)]
pub struct EventIrq(Interrupts);

impl EventIrq {
    /// Interrupts of a function with `msix_count` MSI-X vectors, none
    /// assigned.
    pub fn new(msix_count: u16) -> Self {
        EventIrq(Interrupts::new(msix_count))
    }
}

impl std::ops::Deref for EventIrq {
    type Target = Interrupts;

    fn deref(&self) -> &Interrupts {
        &self.0
    }
}

impl InterruptSink for EventIrq {
    fn msix(&self, vector: u16) {
        self.0.msix(vector);
    }

    fn legacy(&self) {
        self.0.legacy();
    }
}
