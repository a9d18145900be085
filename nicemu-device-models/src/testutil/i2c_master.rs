// SPDX-License-Identifier: Apache-2.0
//! The bit-banged I2C master of the ixgbe driver's `ixgbe_read_i2c_byte_generic`
//! (start, address, offset, repeated start, read, NACK, stop), line by line, over any pair
//! of lines: the SFP module's bus itself or the I2CCTL register (82599 datasheet §8.2.3.1.8).

/// The two lines a master drives and reads back.
pub trait I2cLines {
    /// Drives SCL and SDA (SDA is open drain: `true` releases it).
    fn drive(&mut self, scl: bool, sda: bool);
    /// (SCL, SDA) as the master drives them now.
    fn driven(&mut self) -> (bool, bool);
    /// The SDA line's level (the master's and the slave's wired AND).
    fn sda_in(&mut self) -> bool;
}

/// A master reading single bytes as the driver does.
#[derive(Debug)]
pub struct I2cMaster<L>(pub L);

impl<L: I2cLines> I2cMaster<L> {
    fn start(&mut self) {
        let (scl, _) = self.0.driven();
        self.0.drive(scl, true);
        self.0.drive(true, true);
        self.0.drive(true, false);
        self.0.drive(false, false);
    }

    fn stop(&mut self) {
        self.0.drive(false, false);
        self.0.drive(true, false);
        self.0.drive(true, true);
    }

    fn out_bit(&mut self, b: bool) {
        self.0.drive(false, b);
        if b {
            assert!(self.0.sda_in(), "data line verifies high");
        }
        self.0.drive(true, b);
        self.0.drive(false, b);
    }

    fn in_bit(&mut self) -> bool {
        self.0.drive(true, true);
        let v = self.0.sda_in();
        self.0.drive(false, true);
        v
    }

    /// Sends a byte; true when the slave acknowledged it.
    fn out_byte(&mut self, v: u8) -> bool {
        for i in (0..8).rev() {
            self.out_bit(v & (1 << i) != 0);
        }
        self.0.drive(false, true); // release SDA for the acknowledge
        !self.in_bit()
    }

    /// Reads the byte at `off` of the device at address `dev`; `None` when the device does
    /// not acknowledge (the bus is stopped and left free, as the driver's retry expects).
    pub fn read(&mut self, dev: u8, off: u8) -> Option<u8> {
        self.start();
        if !self.out_byte(dev) || !self.out_byte(off) {
            self.stop();
            return None;
        }
        self.start();
        if !self.out_byte(dev | 1) {
            self.stop();
            return None;
        }
        let v = (0..8).fold(0u8, |acc, _| (acc << 1) | u8::from(self.in_bit()));
        self.out_bit(true); // NACK: one byte only
        self.stop();
        Some(v)
    }
}
