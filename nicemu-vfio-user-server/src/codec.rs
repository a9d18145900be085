// SPDX-License-Identifier: Apache-2.0
//! The vfio-user codec: the message header and the payloads of the commands
//! this server serves, parsed from and encoded to bytes explicitly.
//!
//! Section names refer to QEMU's `docs/interop/vfio-user.rst` (the protocol
//! specification). The specification says messages are in the host's byte
//! order; this crate only builds for little-endian hosts (checked below), so every
//! field is read and written as little-endian.
//!
//! Parsing never panics and never allocates more than the bytes it was given:
//! every structure is checked against the length of the received payload.

use serde::{Deserialize, Serialize};

#[cfg(target_endian = "big")]
compile_error!("vfio-user messages are host-endian; this codec assumes little-endian");

/// Size of the header that starts every message (§"Header").
pub const HEADER_SIZE: usize = 16;

/// Protocol major version spoken (§"VFIO_USER_VERSION").
pub const MAJOR: u16 = 0;
/// Highest protocol minor version spoken.
pub const MINOR: u16 = 0;

/// Page size the server accepts DMA mappings in (4 KiB; §"VFIO_USER_VERSION",
/// capability `pgsizes`).
pub const PAGE_SIZE: u64 = 4096;

/// Header flag bits (§"Header", field *Flags*).
pub mod flags {
    /// Bits 0-3: message type.
    pub const TYPE_MASK: u32 = 0xf;
    /// Type: command message.
    pub const COMMAND: u32 = 0;
    /// Type: reply message.
    pub const REPLY: u32 = 1;
    /// The sender wants no reply to this command.
    pub const NO_REPLY: u32 = 1 << 4;
    /// The reply reports an error in the header's *Error* field.
    pub const ERROR: u32 = 1 << 5;
}

/// Command numbers (§"Commands").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `VFIO_USER_VERSION` (1).
    Version,
    /// `VFIO_USER_DMA_MAP` (2).
    DmaMap,
    /// `VFIO_USER_DMA_UNMAP` (3).
    DmaUnmap,
    /// `VFIO_USER_DEVICE_GET_INFO` (4).
    DeviceGetInfo,
    /// `VFIO_USER_DEVICE_GET_REGION_INFO` (5).
    DeviceGetRegionInfo,
    /// `VFIO_USER_DEVICE_GET_REGION_IO_FDS` (6).
    DeviceGetRegionIoFds,
    /// `VFIO_USER_DEVICE_GET_IRQ_INFO` (7).
    DeviceGetIrqInfo,
    /// `VFIO_USER_DEVICE_SET_IRQS` (8).
    DeviceSetIrqs,
    /// `VFIO_USER_REGION_READ` (9).
    RegionRead,
    /// `VFIO_USER_REGION_WRITE` (10).
    RegionWrite,
    /// `VFIO_USER_DEVICE_RESET` (13).
    DeviceReset,
}

impl Command {
    /// The command of a header's command number; `None` for numbers the server
    /// does not serve (unknown ones, server-to-client ones such as DMA_READ,
    /// and optional ones it does not advertise such as REGION_WRITE_MULTI).
    #[inline]
    pub fn from_u16(n: u16) -> Option<Command> {
        Some(match n {
            1 => Command::Version,
            2 => Command::DmaMap,
            3 => Command::DmaUnmap,
            4 => Command::DeviceGetInfo,
            5 => Command::DeviceGetRegionInfo,
            6 => Command::DeviceGetRegionIoFds,
            7 => Command::DeviceGetIrqInfo,
            8 => Command::DeviceSetIrqs,
            9 => Command::RegionRead,
            10 => Command::RegionWrite,
            13 => Command::DeviceReset,
            _ => return None,
        })
    }
}

/// A malformed or unacceptable message payload.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CodecError {
    /// The payload ends before the structure it must hold.
    #[error("{what} needs {need} payload bytes, message has {len}")]
    Short {
        /// The structure expected.
        what: &'static str,
        /// Bytes it needs.
        need: usize,
        /// Bytes the message carries.
        len: usize,
    },
    /// REGION_WRITE's count differs from the data bytes that follow.
    #[error("REGION_WRITE count {count} but {len} data bytes follow")]
    CountMismatch {
        /// The count field.
        count: u32,
        /// Data bytes present.
        len: usize,
    },
    /// A data transfer larger than the advertised `max_data_xfer_size`.
    #[error("count {count} above max_data_xfer_size {max}")]
    TooLarge {
        /// The count asked for.
        count: u32,
        /// The limit.
        max: u32,
    },
    /// VERSION data does not end with a NUL byte.
    #[error("VERSION capability data is not NUL-terminated")]
    NotTerminated,
    /// VERSION data is not a JSON object of the documented shape.
    #[error("VERSION capability data is not valid: {0}")]
    BadJson(String),
    /// A protocol major version the server does not speak.
    #[error("protocol version {major}.{minor} not supported (the server speaks {MAJOR}.{MINOR})")]
    Major {
        /// Major proposed.
        major: u16,
        /// Minor proposed.
        minor: u16,
    },
}

impl CodecError {
    /// The errno an error reply carries for this error.
    pub fn errno(&self) -> i32 {
        match self {
            CodecError::TooLarge { .. } => libc::E2BIG,
            CodecError::Major { .. } => libc::ENOTSUP,
            _ => libc::EINVAL,
        }
    }
}

/// Reads little-endian fields in order from a payload, failing (not
/// panicking) when the payload is too short.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
    what: &'static str,
    need: usize,
}

impl<'a> Fields<'a> {
    /// Starts reading `what`, which takes `need` bytes, from `b`.
    #[inline]
    fn new(b: &'a [u8], what: &'static str, need: usize) -> Result<Self, CodecError> {
        if b.len() < need {
            return Err(CodecError::Short {
                what,
                need,
                len: b.len(),
            });
        }
        Ok(Fields {
            b,
            at: 0,
            what,
            need,
        })
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        let end = self.at + N;
        let s = self.b.get(self.at..end).ok_or(CodecError::Short {
            what: self.what,
            need: self.need.max(end),
            len: self.b.len(),
        })?;
        self.at = end;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, CodecError> {
        self.take().map(u16::from_le_bytes)
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, CodecError> {
        self.take().map(u32::from_le_bytes)
    }

    #[inline]
    fn u64(&mut self) -> Result<u64, CodecError> {
        self.take().map(u64::from_le_bytes)
    }

    /// The bytes after the fields read so far.
    #[inline]
    fn rest(&self) -> &'a [u8] {
        self.b.get(self.at..).unwrap_or(&[])
    }
}

#[inline]
fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// The 16-byte header of every message (§"Header").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Message ID, echoed in the reply.
    pub message_id: u16,
    /// Command number.
    pub command: u16,
    /// Size of the whole message, header included.
    pub message_size: u32,
    /// [`flags`] bits.
    pub flags: u32,
    /// errno of an error reply; reserved in commands.
    pub error: u32,
}

impl Header {
    /// Parses a header.
    #[inline]
    pub fn parse(b: &[u8; HEADER_SIZE]) -> Header {
        let le16 = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let le32 = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Header {
            message_id: le16(0),
            command: le16(2),
            message_size: le32(4),
            flags: le32(8),
            error: le32(12),
        }
    }

    /// Encodes the header.
    #[inline]
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[0..2].copy_from_slice(&self.message_id.to_le_bytes());
        b[2..4].copy_from_slice(&self.command.to_le_bytes());
        b[4..8].copy_from_slice(&self.message_size.to_le_bytes());
        b[8..12].copy_from_slice(&self.flags.to_le_bytes());
        b[12..16].copy_from_slice(&self.error.to_le_bytes());
        b
    }

    /// Message type bits ([`flags::COMMAND`] or [`flags::REPLY`]).
    #[inline]
    pub fn msg_type(&self) -> u32 {
        self.flags & flags::TYPE_MASK
    }

    /// The sender asked for no reply.
    #[inline]
    pub fn no_reply(&self) -> bool {
        self.flags & flags::NO_REPLY != 0
    }

    /// The successful reply header to this command, for a reply of
    /// `message_size` bytes in all.
    #[inline]
    pub fn reply(&self, message_size: u32) -> Header {
        Header {
            message_id: self.message_id,
            command: self.command,
            message_size,
            flags: flags::REPLY,
            error: 0,
        }
    }

    /// The error reply to this command: the header alone, with the Error
    /// flag and `errno` (§"Header": "If an error occurs, the reply message
    /// must only include the reply header").
    #[inline]
    pub fn error_reply(&self, errno: i32) -> Header {
        Header {
            message_id: self.message_id,
            command: self.command,
            message_size: HEADER_SIZE as u32,
            flags: flags::REPLY | flags::ERROR,
            error: errno.unsigned_abs(),
        }
    }
}

/// Capabilities exchanged in VERSION's JSON data (§"VFIO_USER_VERSION",
/// table "Capabilities"). Absent members take the specification's defaults;
/// members the server does not know are ignored (later minor versions add some).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Most file descriptors the sender accepts in one message (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_msg_fds: Option<u32>,
    /// Largest `count` of a data transfer the sender accepts (default 1 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_data_xfer_size: Option<u32>,
    /// Page sizes supported for DMA mappings, or'ed (default 4 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgsizes: Option<u64>,
    /// Most DMA mappings valid at once (default 65535).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_dma_maps: Option<u32>,
    /// Migration parameters (QEMU reads `pgsize` and `max_bitmap_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<Migration>,
    /// REGION_WRITE_MULTI supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_multiple: Option<bool>,
}

/// The `migration` capability object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// Dirty-page tracking granularity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgsize: Option<u64>,
    /// Largest dirty bitmap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bitmap_size: Option<u64>,
}

/// The JSON document of VERSION data: `{"capabilities": {...}}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionData {
    /// Capabilities of the sender (optional).
    #[serde(default)]
    pub capabilities: Capabilities,
}

/// VERSION request (§"VFIO_USER_VERSION", "Request").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// Major version proposed.
    pub major: u16,
    /// Minor version proposed.
    pub minor: u16,
    /// Capabilities proposed (defaults when the optional data is absent).
    pub data: VersionData,
}

impl Version {
    /// Parses a VERSION payload: major, minor, then optional NUL-terminated
    /// UTF-8 JSON. Major must be [`MAJOR`].
    pub fn parse(payload: &[u8]) -> Result<Version, CodecError> {
        let mut f = Fields::new(payload, "VERSION", 4)?;
        let major = f.u16()?;
        let minor = f.u16()?;
        if major != MAJOR {
            return Err(CodecError::Major { major, minor });
        }
        let json = f.rest();
        let data = if json.is_empty() {
            VersionData::default()
        } else {
            let Some((0, text)) = json.split_last() else {
                return Err(CodecError::NotTerminated);
            };
            let text = text.split(|&c| c == 0).next().unwrap_or(&[]);
            serde_json::from_slice(text).map_err(|e| {
                // serde quotes offending input; keep log lines short.
                CodecError::BadJson(e.to_string().chars().take(160).collect())
            })?
        };
        Ok(Version { major, minor, data })
    }

    /// Encodes a VERSION payload (the reply uses the request's format).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u16(out, self.major);
        put_u16(out, self.minor);
        // Serializing plain integers and options into a Vec cannot fail.
        if serde_json::to_writer(&mut *out, &self.data).is_err() {
            out.extend_from_slice(b"{}");
        }
        out.push(0);
    }
}

/// DMA_MAP flags (§"VFIO_USER_DMA_MAP": bit 0 readable, bit 1 writeable).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaMapFlags(pub u32);

impl DmaMapFlags {
    /// The device may read the region.
    pub const READ: DmaMapFlags = DmaMapFlags(1);
    /// The device may write the region.
    pub const WRITE: DmaMapFlags = DmaMapFlags(1 << 1);

    /// All bits of `other` are set.
    pub fn contains(self, other: DmaMapFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// DMA_UNMAP flags. The specification leaves them unused; QEMU sets the
/// kernel VFIO's `VFIO_DMA_UNMAP_FLAG_ALL` (bit 1) to drop every mapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaUnmapFlags(pub u32);

impl DmaUnmapFlags {
    /// Unmap everything (address and size are then 0).
    pub const ALL: DmaUnmapFlags = DmaUnmapFlags(1 << 1);

    /// All bits of `other` are set.
    pub fn contains(self, other: DmaUnmapFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// DMA_MAP request (§"VFIO_USER_DMA_MAP"); the file descriptor, if any,
/// travels as SCM_RIGHTS data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaMap {
    /// Size of the structure.
    pub argsz: u32,
    /// Access flags.
    pub flags: DmaMapFlags,
    /// File offset of the region in the fd.
    pub offset: u64,
    /// DMA (guest physical) address.
    pub address: u64,
    /// Size in bytes.
    pub size: u64,
}

impl DmaMap {
    /// Bytes of the payload.
    pub const SIZE: usize = 32;

    /// Parses the payload.
    pub fn parse(payload: &[u8]) -> Result<DmaMap, CodecError> {
        let mut f = Fields::new(payload, "DMA_MAP", Self::SIZE)?;
        Ok(DmaMap {
            argsz: f.u32()?,
            flags: DmaMapFlags(f.u32()?),
            offset: f.u64()?,
            address: f.u64()?,
            size: f.u64()?,
        })
    }
}

/// DMA_UNMAP request and reply (§"VFIO_USER_DMA_UNMAP": "The server
/// responds with the original DMA entry in the request").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaUnmap {
    /// Largest reply payload the client takes.
    pub argsz: u32,
    /// Flags.
    pub flags: DmaUnmapFlags,
    /// DMA address of the mapping.
    pub address: u64,
    /// Its size.
    pub size: u64,
}

impl DmaUnmap {
    /// Bytes of the payload.
    pub const SIZE: usize = 24;

    /// Parses the payload.
    pub fn parse(payload: &[u8]) -> Result<DmaUnmap, CodecError> {
        let mut f = Fields::new(payload, "DMA_UNMAP", Self::SIZE)?;
        Ok(DmaUnmap {
            argsz: f.u32()?,
            flags: DmaUnmapFlags(f.u32()?),
            address: f.u64()?,
            size: f.u64()?,
        })
    }

    /// Encodes the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, self.argsz);
        put_u32(out, self.flags.0);
        put_u64(out, self.address);
        put_u64(out, self.size);
    }
}

/// DEVICE_GET_INFO reply (§"VFIO_USER_DEVICE_GET_INFO"). The request carries
/// the same structure with only `argsz` set, which the server does not need: the
/// reply is always the fixed 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions.
    pub num_regions: u32,
    /// Number of interrupt types.
    pub num_irqs: u32,
}

impl DeviceInfo {
    /// Bytes of the payload.
    pub const SIZE: usize = 16;

    /// Encodes the reply payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, Self::SIZE as u32);
        put_u32(out, self.flags);
        put_u32(out, self.num_regions);
        put_u32(out, self.num_irqs);
    }
}

/// DEVICE_GET_REGION_INFO request (§"VFIO_USER_DEVICE_GET_REGION_INFO");
/// only `argsz` and `index` are meaningful.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfoRequest {
    /// Largest reply payload the client takes.
    pub argsz: u32,
    /// Region queried.
    pub index: u32,
}

impl RegionInfoRequest {
    /// Bytes of the payload (a `struct vfio_region_info`).
    pub const SIZE: usize = 32;

    /// Parses the payload.
    pub fn parse(payload: &[u8]) -> Result<RegionInfoRequest, CodecError> {
        let mut f = Fields::new(payload, "DEVICE_GET_REGION_INFO", Self::SIZE)?;
        let argsz = f.u32()?;
        let _flags = f.u32()?;
        let index = f.u32()?;
        Ok(RegionInfoRequest { argsz, index })
    }
}

/// One region as advertised in DEVICE_GET_REGION_INFO replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*` (the server never sets MMAP or CAPS).
    pub flags: u32,
    /// Region index.
    pub index: u32,
    /// Size in bytes; 0 for regions the function does not have.
    pub size: u64,
}

impl RegionInfo {
    /// Encodes the reply payload (`struct vfio_region_info`, no
    /// capabilities, so `argsz` is 32 and `cap_offset` 0).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, RegionInfoRequest::SIZE as u32);
        put_u32(out, self.flags);
        put_u32(out, self.index);
        put_u32(out, 0);
        put_u64(out, self.size);
        put_u64(out, 0);
    }
}

/// DEVICE_GET_REGION_IO_FDS request (§"VFIO_USER_DEVICE_GET_REGION_IO_FDS").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionIoFdsRequest {
    /// Largest reply payload the client takes.
    pub argsz: u32,
    /// Must be 0.
    pub flags: u32,
    /// Region queried.
    pub index: u32,
    /// Must be 0.
    pub count: u32,
}

impl RegionIoFdsRequest {
    /// Bytes of the payload.
    pub const SIZE: usize = 16;

    /// Parses the payload.
    pub fn parse(payload: &[u8]) -> Result<RegionIoFdsRequest, CodecError> {
        let mut f = Fields::new(payload, "DEVICE_GET_REGION_IO_FDS", Self::SIZE)?;
        Ok(RegionIoFdsRequest {
            argsz: f.u32()?,
            flags: f.u32()?,
            index: f.u32()?,
            count: f.u32()?,
        })
    }
}

/// DEVICE_GET_IRQ_INFO request (§"VFIO_USER_DEVICE_GET_IRQ_INFO"); only
/// `index` is meaningful.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrqInfoRequest {
    /// Largest reply payload the client takes.
    pub argsz: u32,
    /// Interrupt type queried.
    pub index: u32,
}

impl IrqInfoRequest {
    /// Bytes of the payload (a `struct vfio_irq_info`).
    pub const SIZE: usize = 16;

    /// Parses the payload.
    pub fn parse(payload: &[u8]) -> Result<IrqInfoRequest, CodecError> {
        let mut f = Fields::new(payload, "DEVICE_GET_IRQ_INFO", Self::SIZE)?;
        let argsz = f.u32()?;
        let _flags = f.u32()?;
        let index = f.u32()?;
        Ok(IrqInfoRequest { argsz, index })
    }
}

/// One interrupt type as advertised in DEVICE_GET_IRQ_INFO replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqInfo {
    /// Interrupt type index (`VFIO_PCI_*_IRQ_INDEX`).
    pub index: u32,
    /// Number of vectors.
    pub count: u32,
    /// `VFIO_IRQ_INFO_*`.
    pub flags: u32,
}

impl IrqInfo {
    /// Encodes the reply payload (`struct vfio_irq_info`).
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u32(out, IrqInfoRequest::SIZE as u32);
        put_u32(out, self.flags);
        put_u32(out, self.index);
        put_u32(out, self.count);
    }
}

/// DEVICE_SET_IRQS request (§"VFIO_USER_DEVICE_SET_IRQS"); eventfds travel
/// as SCM_RIGHTS data, `data` holds the booleans of `VFIO_IRQ_SET_DATA_BOOL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SetIrqs<'a> {
    /// Size of the request payload.
    pub argsz: u32,
    /// `VFIO_IRQ_SET_DATA_*` | `VFIO_IRQ_SET_ACTION_*`.
    pub flags: u32,
    /// Interrupt type.
    pub index: u32,
    /// First vector.
    pub start: u32,
    /// Number of vectors.
    pub count: u32,
    /// Bytes after the fixed part.
    pub data: &'a [u8],
}

impl<'a> SetIrqs<'a> {
    /// Bytes of the fixed part.
    pub const SIZE: usize = 20;

    /// Parses the payload.
    pub fn parse(payload: &'a [u8]) -> Result<SetIrqs<'a>, CodecError> {
        let mut f = Fields::new(payload, "DEVICE_SET_IRQS", Self::SIZE)?;
        Ok(SetIrqs {
            argsz: f.u32()?,
            flags: f.u32()?,
            index: f.u32()?,
            start: f.u32()?,
            count: f.u32()?,
            data: f.rest(),
        })
    }
}

/// REGION_READ / REGION_WRITE fixed part (§"VFIO_USER_REGION_READ",
/// §"VFIO_USER_REGION_WRITE"), the same in requests and replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionAccess {
    /// Offset into the region.
    pub offset: u64,
    /// Region index.
    pub region: u32,
    /// Bytes transferred.
    pub count: u32,
}

impl RegionAccess {
    /// Bytes of the fixed part.
    pub const SIZE: usize = 16;

    /// Parses a REGION_READ payload; `count` must not exceed `max_xfer`.
    #[inline]
    pub fn parse_read(payload: &[u8], max_xfer: u32) -> Result<RegionAccess, CodecError> {
        let a = Self::parse(payload, "REGION_READ")?;
        if a.count > max_xfer {
            return Err(CodecError::TooLarge {
                count: a.count,
                max: max_xfer,
            });
        }
        Ok(a)
    }

    /// Parses a REGION_WRITE payload: the fixed part and exactly `count`
    /// data bytes, `count` not above `max_xfer`.
    #[inline]
    pub fn parse_write(payload: &[u8], max_xfer: u32) -> Result<(RegionAccess, &[u8]), CodecError> {
        let a = Self::parse(payload, "REGION_WRITE")?;
        if a.count > max_xfer {
            return Err(CodecError::TooLarge {
                count: a.count,
                max: max_xfer,
            });
        }
        let data = payload.get(Self::SIZE..).unwrap_or(&[]);
        if data.len() != a.count as usize {
            return Err(CodecError::CountMismatch {
                count: a.count,
                len: data.len(),
            });
        }
        Ok((a, data))
    }

    #[inline]
    fn parse(payload: &[u8], what: &'static str) -> Result<RegionAccess, CodecError> {
        let mut f = Fields::new(payload, what, Self::SIZE)?;
        Ok(RegionAccess {
            offset: f.u64()?,
            region: f.u32()?,
            count: f.u32()?,
        })
    }

    /// Encodes the fixed part.
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.offset);
        put_u32(out, self.region);
        put_u32(out, self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_flags() {
        let h = Header {
            message_id: 0x1234,
            command: 10,
            message_size: 36,
            flags: flags::NO_REPLY,
            error: 0,
        };
        let b = h.encode();
        assert_eq!(&b[..8], &[0x34, 0x12, 10, 0, 36, 0, 0, 0]);
        assert_eq!(Header::parse(&b), h);
        assert!(h.no_reply());
        assert_eq!(h.msg_type(), flags::COMMAND);
        let r = h.reply(32);
        assert_eq!(
            (r.message_id, r.command, r.flags),
            (0x1234, 10, flags::REPLY)
        );
        let e = h.error_reply(libc::EINVAL);
        assert_eq!(e.message_size, 16);
        assert_eq!(e.flags, flags::REPLY | flags::ERROR);
        assert_eq!(e.error, libc::EINVAL as u32);
    }

    #[test]
    fn commands_known_and_unknown() {
        assert_eq!(Command::from_u16(1), Some(Command::Version));
        assert_eq!(Command::from_u16(13), Some(Command::DeviceReset));
        for n in [0, 11, 12, 14, 15, 16, 17, 18, 0xffff] {
            assert_eq!(Command::from_u16(n), None, "{n}");
        }
    }

    fn version_payload(major: u16, minor: u16, json: &[u8]) -> Vec<u8> {
        let mut p = major.to_le_bytes().to_vec();
        p.extend_from_slice(&minor.to_le_bytes());
        p.extend_from_slice(json);
        p
    }

    #[test]
    fn version_parses_qemu_capabilities() {
        let json = br#"{"capabilities":{"migration":{"pgsize":4096,"max_bitmap_size":268435456},"max_msg_fds":16,"max_data_xfer_size":1048576,"pgsizes":4096,"max_dma_maps":65535,"write_multiple":true}}"#;
        let mut p = version_payload(0, 0, json);
        p.push(0);
        let v = Version::parse(&p).unwrap();
        let c = &v.data.capabilities;
        assert_eq!(c.max_msg_fds, Some(16));
        assert_eq!(c.max_data_xfer_size, Some(1 << 20));
        assert_eq!(c.pgsizes, Some(4096));
        assert_eq!(c.write_multiple, Some(true));
        assert_eq!(c.migration.as_ref().unwrap().pgsize, Some(4096));
    }

    #[test]
    fn version_without_data_and_with_unknown_members() {
        let v = Version::parse(&version_payload(0, 1, b"")).unwrap();
        assert_eq!(v.data, VersionData::default());
        let v = Version::parse(&version_payload(
            0,
            3,
            b"{\"capabilities\":{\"new\":[1]},\"x\":1}\0",
        ))
        .unwrap();
        assert_eq!(v.minor, 3);
        let v = Version::parse(&version_payload(0, 0, b"{}\0")).unwrap();
        assert_eq!(v.data.capabilities.max_msg_fds, None);
    }

    #[test]
    fn malformed_version_is_an_error_not_a_panic() {
        assert!(matches!(
            Version::parse(&[0, 0, 0]),
            Err(CodecError::Short {
                need: 4,
                len: 3,
                ..
            })
        ));
        assert_eq!(
            Version::parse(&version_payload(0, 0, b"{}")),
            Err(CodecError::NotTerminated)
        );
        for bad in [
            &b"\xff\xfe\0"[..],
            b"{\"capabilities\":{\"max_msg_fds\":-1}}\0",
            b"{\"capabilities\":{\"max_msg_fds\":\"x\"}}\0",
            b"{\"capabilities\":7}\0",
            b"[1,2]\0",
            b"\0",
            b"{\0}\0",
        ] {
            let r = Version::parse(&version_payload(0, 0, bad));
            assert!(matches!(r, Err(CodecError::BadJson(_))), "{bad:?}: {r:?}");
            assert_eq!(r.unwrap_err().errno(), libc::EINVAL);
        }
        let long = format!(
            "{{\"capabilities\":{{\"max_msg_fds\":\"{}\"}}}}\0",
            "x".repeat(5000)
        );
        match Version::parse(&version_payload(0, 0, long.as_bytes())) {
            Err(CodecError::BadJson(m)) => assert!(m.chars().count() <= 160, "{m}"),
            other => panic!("{other:?}"),
        }
        let r = Version::parse(&version_payload(1, 0, b""));
        assert_eq!(r, Err(CodecError::Major { major: 1, minor: 0 }));
        assert_eq!(r.unwrap_err().errno(), libc::ENOTSUP);
    }

    #[test]
    fn version_encodes_nul_terminated_json() {
        let v = Version {
            major: 0,
            minor: 0,
            data: VersionData {
                capabilities: Capabilities {
                    max_msg_fds: Some(16),
                    pgsizes: Some(4096),
                    ..Default::default()
                },
            },
        };
        let mut out = Vec::new();
        v.encode(&mut out);
        assert_eq!(&out[..4], &[0, 0, 0, 0]);
        assert_eq!(out.last(), Some(&0));
        let text = std::str::from_utf8(&out[4..out.len() - 1]).unwrap();
        assert_eq!(
            text,
            r#"{"capabilities":{"max_msg_fds":16,"pgsizes":4096}}"#
        );
        assert_eq!(Version::parse(&out).unwrap(), v);
    }

    #[test]
    fn dma_structures() {
        let mut p = Vec::new();
        put_u32(&mut p, 32);
        put_u32(&mut p, 3);
        put_u64(&mut p, 0x1000);
        put_u64(&mut p, 0x8000_0000);
        put_u64(&mut p, 1 << 20);
        let m = DmaMap::parse(&p).unwrap();
        assert_eq!(
            (m.offset, m.address, m.size),
            (0x1000, 0x8000_0000, 1 << 20)
        );
        assert!(m.flags.contains(DmaMapFlags::READ) && m.flags.contains(DmaMapFlags::WRITE));
        DmaMap::parse(&p[..31]).unwrap_err();
        let u = DmaUnmap::parse(&p[..24]).unwrap();
        assert_eq!((u.argsz, u.address, u.size), (32, 0x1000, 0x8000_0000));
        assert!(u.flags.contains(DmaUnmapFlags::ALL), "bit 1 of flags 3");
        assert!(!DmaUnmapFlags(1).contains(DmaUnmapFlags::ALL));
        let mut out = Vec::new();
        u.encode(&mut out);
        assert_eq!(out, &p[..24]);
        DmaUnmap::parse(&p[..23]).unwrap_err();
    }

    #[test]
    fn info_replies_have_the_documented_layout() {
        let mut out = Vec::new();
        DeviceInfo {
            flags: 3,
            num_regions: 9,
            num_irqs: 5,
        }
        .encode(&mut out);
        assert_eq!(out, [16, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0]);
        out.clear();
        RegionInfo {
            flags: 3,
            index: 7,
            size: 0x4000,
        }
        .encode(&mut out);
        assert_eq!(out.len(), 32);
        assert_eq!(&out[..12], &[32, 0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(&out[16..24], &0x4000u64.to_le_bytes());
        out.clear();
        IrqInfo {
            index: 4,
            count: 10,
            flags: 1,
        }
        .encode(&mut out);
        assert_eq!(out, [16, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 10, 0, 0, 0]);
        let r = RegionInfoRequest::parse(&[32, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0].repeat(3)).unwrap();
        assert_eq!((r.argsz, r.index), (32, 2));
        RegionInfoRequest::parse(&[0; 31]).unwrap_err();
        let r = IrqInfoRequest::parse(&[16, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(r.index, 4);
        IrqInfoRequest::parse(&[0; 15]).unwrap_err();
        RegionIoFdsRequest::parse(&[0; 15]).unwrap_err();
        assert_eq!(RegionIoFdsRequest::parse(&[0; 16]).unwrap().index, 0);
    }

    #[test]
    fn set_irqs_fixed_part_and_data() {
        let mut p = Vec::new();
        for v in [20u32, 0x24, 4, 1, 2] {
            put_u32(&mut p, v);
        }
        let s = SetIrqs::parse(&p).unwrap();
        assert_eq!((s.index, s.start, s.count, s.data.len()), (4, 1, 2, 0));
        p.extend_from_slice(&[1, 0]);
        assert_eq!(SetIrqs::parse(&p).unwrap().data, &[1, 0]);
        SetIrqs::parse(&p[..19]).unwrap_err();
    }

    #[test]
    fn region_access_bounds() {
        let mut p = Vec::new();
        RegionAccess {
            offset: 0x2818,
            region: 0,
            count: 4,
        }
        .encode(&mut p);
        let r = RegionAccess::parse_read(&p, 4096).unwrap();
        assert_eq!((r.offset, r.region, r.count), (0x2818, 0, 4));
        assert!(matches!(
            RegionAccess::parse_write(&p, 4096),
            Err(CodecError::CountMismatch { count: 4, len: 0 })
        ));
        p.extend_from_slice(&7u32.to_le_bytes());
        let (w, data) = RegionAccess::parse_write(&p, 4096).unwrap();
        assert_eq!((w.count, data), (4, &7u32.to_le_bytes()[..]));
        p.push(0);
        assert!(
            RegionAccess::parse_write(&p, 4096).is_err(),
            "trailing byte"
        );
        let mut huge = Vec::new();
        RegionAccess {
            offset: 0,
            region: 0,
            count: u32::MAX,
        }
        .encode(&mut huge);
        let e = RegionAccess::parse_read(&huge, 4096).unwrap_err();
        assert_eq!(e.errno(), libc::E2BIG);
        RegionAccess::parse_write(&huge, 4096).unwrap_err();
        RegionAccess::parse_read(&huge[..15], 4096).unwrap_err();
    }
}
