// SPDX-License-Identifier: Apache-2.0
//! PCI configuration space shared by the NIC models.
//!
//! Type-0 header (PCI Local Bus spec 3.0 §6.1), BARs with size probing, and a
//! capability list builder for the capabilities Intel NICs carry: power
//! management, MSI, MSI-X and PCI Express (82576 datasheet §9.5, 82599 §9.3).

pub mod caps;
mod config;

pub use caps::{MsiCap, MsixCap, PcieCap, PmCap};
pub use config::{Bar, BarKind, ConfigSpace, ConfigSpaceBuilder, CONFIG_SPACE_SIZE};
