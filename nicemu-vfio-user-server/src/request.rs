// SPDX-License-Identifier: Apache-2.0
//! A command message parsed into what it asks (§"Commands"), with the
//! descriptors it carried.
//!
//! Parsing checks what the message alone shows: its type, its descriptors
//! and its payload. What depends on the device or the session (negotiation,
//! region and interrupt tables) is the dispatcher's ([`crate::dispatch`]).

use std::fs::File;

use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TYPE_MASK, VFIO_IRQ_SET_DATA_BOOL, VFIO_IRQ_SET_DATA_EVENTFD,
    VFIO_IRQ_SET_DATA_NONE, VFIO_IRQ_SET_DATA_TYPE_MASK,
};

use crate::codec::{
    self, CodecError, Command, DeviceInfo, DmaMap, DmaUnmap, Header, IrqInfoRequest, RegionAccess,
    RegionInfoRequest, RegionIoFdsRequest, SetIrqs, Version,
};
use crate::error::RequestError;
use crate::fds::Fds;
use crate::limits::{MAX_DATA_XFER, MAX_MSG_FDS};

/// One command, parsed.
#[derive(Debug)]
pub(crate) enum Request<'a> {
    /// VERSION: the client's proposal.
    Version(Version),
    /// DMA_MAP, with the file backing the range (none: memory the device
    /// cannot reach).
    DmaMap { map: DmaMap, fd: Option<File> },
    /// DMA_UNMAP.
    DmaUnmap(DmaUnmap),
    /// DEVICE_GET_INFO.
    DeviceGetInfo,
    /// DEVICE_GET_REGION_INFO of a region.
    DeviceGetRegionInfo { index: u32 },
    /// DEVICE_GET_REGION_IO_FDS of a region.
    DeviceGetRegionIoFds { index: u32 },
    /// DEVICE_GET_IRQ_INFO of an interrupt type.
    DeviceGetIrqInfo { index: u32 },
    /// DEVICE_SET_IRQS.
    DeviceSetIrqs(IrqSet),
    /// REGION_READ.
    RegionRead(RegionAccess),
    /// REGION_WRITE with its data.
    RegionWrite {
        access: RegionAccess,
        data: &'a [u8],
    },
    /// DEVICE_RESET.
    DeviceReset,
}

/// DEVICE_SET_IRQS with one data type and one action (kernel VFIO's
/// `VFIO_DEVICE_SET_IRQS` semantics).
#[derive(Debug)]
pub(crate) struct IrqSet {
    /// Interrupt type.
    pub index: u32,
    /// `VFIO_IRQ_SET_DATA_*` | `VFIO_IRQ_SET_ACTION_*`, one bit of each.
    pub flags: u32,
    /// First vector.
    pub start: u32,
    /// Number of vectors.
    pub count: u32,
    /// What the request carries.
    pub data: IrqData,
}

/// The data of a SET_IRQS request.
#[derive(Debug)]
pub(crate) enum IrqData {
    /// `VFIO_IRQ_SET_DATA_NONE`.
    None,
    /// `VFIO_IRQ_SET_DATA_BOOL` (a boolean per vector in the payload).
    Bool,
    /// `VFIO_IRQ_SET_DATA_EVENTFD`: one eventfd per vector, or none to
    /// de-assign them.
    Eventfds(Vec<File>),
}

/// The command a message holds, once its type and the number of its
/// descriptors fit one the server serves.
#[inline]
pub(crate) fn command_of(hdr: &Header, fds: &Fds) -> Result<Command, RequestError> {
    if hdr.msg_type() != codec::flags::COMMAND {
        return Err(RequestError::NotCommand(hdr.msg_type()));
    }
    let cmd = Command::from_u16(hdr.command);
    if fds.overflow {
        return Err(RequestError::TooManyFds);
    }
    let max = max_fds(cmd);
    if fds.len > max {
        return Err(RequestError::UnexpectedFds { got: fds.len, max });
    }
    cmd.ok_or(RequestError::UnknownCommand(hdr.command))
}

/// Most descriptors each command may carry.
#[inline]
fn max_fds(cmd: Option<Command>) -> usize {
    match cmd {
        Some(Command::DmaMap) => 1,
        Some(Command::DeviceSetIrqs) => MAX_MSG_FDS,
        _ => 0,
    }
}

impl<'a> Request<'a> {
    /// Parses the payload of `cmd`, taking the descriptors it uses from
    /// `fds`. REGION_READ may ask for at most `max_read` bytes (what the
    /// client accepts in a reply).
    #[inline]
    pub(crate) fn parse(
        cmd: Command,
        payload: &'a [u8],
        fds: &mut Fds,
        max_read: u32,
    ) -> Result<Request<'a>, RequestError> {
        Ok(match cmd {
            Command::Version => Request::Version(Version::parse(payload)?),
            Command::DmaMap => Request::DmaMap {
                map: DmaMap::parse(payload)?,
                fd: fds.take_one(),
            },
            Command::DmaUnmap => Request::DmaUnmap(DmaUnmap::parse(payload)?),
            Command::DeviceGetInfo => {
                // The request's fields are all zero but argsz, which a fixed
                // 16-byte reply does not need.
                if payload.len() < DeviceInfo::SIZE {
                    return Err(CodecError::Short {
                        what: "DEVICE_GET_INFO",
                        need: DeviceInfo::SIZE,
                        len: payload.len(),
                    }
                    .into());
                }
                Request::DeviceGetInfo
            }
            Command::DeviceGetRegionInfo => Request::DeviceGetRegionInfo {
                index: RegionInfoRequest::parse(payload)?.index,
            },
            Command::DeviceGetRegionIoFds => Request::DeviceGetRegionIoFds {
                index: RegionIoFdsRequest::parse(payload)?.index,
            },
            Command::DeviceGetIrqInfo => Request::DeviceGetIrqInfo {
                index: IrqInfoRequest::parse(payload)?.index,
            },
            Command::DeviceSetIrqs => Request::DeviceSetIrqs(IrqSet::parse(payload, fds)?),
            Command::RegionRead => {
                Request::RegionRead(RegionAccess::parse_read(payload, max_read)?)
            }
            Command::RegionWrite => {
                let (access, data) = RegionAccess::parse_write(payload, MAX_DATA_XFER)?;
                Request::RegionWrite { access, data }
            }
            Command::DeviceReset => Request::DeviceReset,
        })
    }
}

impl IrqSet {
    /// Parses SET_IRQS: exactly one data type and one action, and with
    /// `DATA_EVENTFD` either no descriptor (de-assign) or one per vector, as
    /// QEMU sends them.
    fn parse(payload: &[u8], fds: &mut Fds) -> Result<IrqSet, RequestError> {
        let s = SetIrqs::parse(payload)?;
        let data = s.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = s.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        if data.count_ones() != 1
            || action.count_ones() != 1
            || s.flags & !(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK) != 0
        {
            return Err(RequestError::IrqFlags(s.flags));
        }
        let data = match data {
            VFIO_IRQ_SET_DATA_BOOL => IrqData::Bool,
            VFIO_IRQ_SET_DATA_EVENTFD if fds.len != 0 && fds.len != s.count as usize => {
                return Err(RequestError::FdCount {
                    count: s.count,
                    fds: fds.len,
                })
            }
            VFIO_IRQ_SET_DATA_EVENTFD => IrqData::Eventfds(fds.take_files()),
            VFIO_IRQ_SET_DATA_NONE if fds.len != 0 => {
                return Err(RequestError::UnexpectedFds {
                    got: fds.len,
                    max: 0,
                })
            }
            _ => IrqData::None,
        };
        Ok(IrqSet {
            index: s.index,
            flags: s.flags,
            start: s.start,
            count: s.count,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vfio_bindings::bindings::vfio::VFIO_IRQ_SET_ACTION_TRIGGER;

    fn set_irqs(flags: u32, count: u32) -> Vec<u8> {
        [20, flags, 4, 0, count]
            .iter()
            .flat_map(|v: &u32| v.to_le_bytes())
            .collect()
    }

    fn parse(cmd: Command, payload: &[u8]) -> Result<Request<'_>, RequestError> {
        Request::parse(cmd, payload, &mut Fds::new(), MAX_DATA_XFER)
    }

    #[test]
    fn set_irqs_needs_one_data_type_and_one_action() {
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER;
        for bad in [
            0,
            trig,
            VFIO_IRQ_SET_DATA_NONE,
            trig | VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_DATA_EVENTFD,
            trig | VFIO_IRQ_SET_DATA_NONE | 1 << 8,
        ] {
            let p = set_irqs(bad, 1);
            let r = parse(Command::DeviceSetIrqs, &p);
            assert!(
                matches!(r, Err(RequestError::IrqFlags(_))),
                "{bad:#x}: {r:?}"
            );
        }
        let p = set_irqs(trig | VFIO_IRQ_SET_DATA_EVENTFD, 3);
        match parse(Command::DeviceSetIrqs, &p) {
            Ok(Request::DeviceSetIrqs(s)) => {
                assert_eq!((s.index, s.count), (4, 3));
                assert!(matches!(s.data, IrqData::Eventfds(f) if f.is_empty()));
            }
            other => panic!("{other:?}"),
        }
        let p = set_irqs(trig | VFIO_IRQ_SET_DATA_BOOL, 1);
        assert!(matches!(
            parse(Command::DeviceSetIrqs, &p),
            Ok(Request::DeviceSetIrqs(IrqSet {
                data: IrqData::Bool,
                ..
            }))
        ));
    }

    #[test]
    fn commands_check_type_and_descriptor_counts() {
        let hdr = |command, flags| Header {
            message_id: 1,
            command,
            message_size: 16,
            flags,
            error: 0,
        };
        let fds = Fds::new();
        assert!(matches!(
            command_of(&hdr(9, codec::flags::REPLY), &fds),
            Err(RequestError::NotCommand(1))
        ));
        assert!(matches!(
            command_of(&hdr(99, 0), &fds),
            Err(RequestError::UnknownCommand(99))
        ));
        assert_eq!(
            command_of(&hdr(13, 0), &fds).ok(),
            Some(Command::DeviceReset)
        );
        assert_eq!(max_fds(Some(Command::DmaMap)), 1);
        assert_eq!(max_fds(Some(Command::RegionWrite)), 0);
        assert_eq!(max_fds(None), 0);
    }

    #[test]
    fn short_payloads_are_codec_errors() {
        for cmd in [
            Command::DmaMap,
            Command::DmaUnmap,
            Command::DeviceGetInfo,
            Command::DeviceGetRegionInfo,
            Command::DeviceGetRegionIoFds,
            Command::DeviceGetIrqInfo,
            Command::DeviceSetIrqs,
            Command::RegionRead,
            Command::RegionWrite,
        ] {
            let r = parse(cmd, &[0; 3]);
            assert!(
                matches!(r, Err(RequestError::Codec(CodecError::Short { .. }))),
                "{cmd:?}: {r:?}"
            );
        }
        assert!(matches!(
            parse(Command::DeviceReset, &[]),
            Ok(Request::DeviceReset)
        ));
    }
}
