//! Packet capture files: pcapng written ([`write`], what `forwarder
//! capture` produces) and pcap or pcapng read ([`read`], for `forwarder
//! trace --pcap` and the tests that check captures byte for byte).
//!
//! The pcapng written is what tcpdump, tshark and Wireshark read: a
//! section header, one interface description block a captured port
//! (`if_name` the port's name, `if_tsresol` nanoseconds, link type
//! Ethernet), then an enhanced packet block a frame with `epb_flags`
//! saying the direction (inbound: received; outbound: sent) and, for a
//! frame the forwarder dropped, `opt_comment` `drop: REASON` (and
//! `punt: REASON` for one handed to the slow path), and, when the
//! capture ends, an interface statistics block a port with `isb_ifdrop`
//! the frames the capture lost (its ring was full).

pub mod write;

/// Block types.
const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const SPB: u32 = 3;
const ISB: u32 = 5;
const EPB: u32 = 6;
/// The byte-order magic of a section header.
const BOM: u32 = 0x1A2B_3C4D;
/// Link type Ethernet.
pub const LINKTYPE_ETHERNET: u16 = 1;

/// Option codes.
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const EPB_FLAGS: u16 = 2;
const ISB_IFDROP: u16 = 5;

/// `epb_flags` direction: inbound.
pub const INBOUND: u32 = 1;
/// `epb_flags` direction: outbound.
pub const OUTBOUND: u32 = 2;

/// A frame read from a capture file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// Its bytes (as captured).
    pub data: Vec<u8>,
    /// Its length on the wire.
    pub len: u32,
    /// The interface's index in its section (pcapng), 0 for pcap.
    pub interface: u32,
    /// Nanoseconds since the Unix epoch.
    pub time_ns: u64,
    /// `epb_flags` (pcapng), 0 when absent.
    pub flags: u32,
    /// `opt_comment`s.
    pub comments: Vec<String>,
}

/// What a capture file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    /// The interfaces' names (pcapng `if_name`; empty when not given).
    pub interfaces: Vec<String>,
    /// The frames, in order.
    pub frames: Vec<Frame>,
    /// Per interface, `isb_ifdrop` if an interface statistics block gave
    /// it.
    pub dropped: Vec<Option<u64>>,
}

/// Reads a pcap (microsecond or nanosecond, either byte order) or pcapng
/// file's frames. A file cut short ends its frames there; anything else
/// malformed is an error that says what and where.
pub fn read(b: &[u8]) -> Result<Capture, String> {
    let magic = b
        .get(..4)
        .map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]))
        .ok_or("shorter than a capture file's header")?;
    match magic {
        SHB => read_pcapng(b),
        0xa1b2_c3d4 | 0xa1b2_3c4d | 0xd4c3_b2a1 | 0x4d3c_b2a1 => read_pcap(b),
        m => Err(format!("not a pcap or pcapng file (magic {m:#010x})")),
    }
}

fn u32_at(b: &[u8], at: usize, be: bool) -> Option<u32> {
    let x: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if be {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    })
}

fn u16_at(b: &[u8], at: usize, be: bool) -> Option<u16> {
    let x: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if be {
        u16::from_be_bytes(x)
    } else {
        u16::from_le_bytes(x)
    })
}

fn read_pcap(b: &[u8]) -> Result<Capture, String> {
    let m = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let be = matches!(m, 0xd4c3_b2a1 | 0x4d3c_b2a1);
    let nanos = matches!(m, 0xa1b2_3c4d | 0x4d3c_b2a1);
    let link = u32_at(b, 20, be).ok_or("pcap header cut short")?;
    if link != LINKTYPE_ETHERNET as u32 {
        return Err(format!("link type {link}: only Ethernet (1) is read"));
    }
    let mut c = Capture {
        interfaces: vec![String::new()],
        dropped: vec![None],
        ..Capture::default()
    };
    let mut at = 24;
    while at + 16 <= b.len() {
        let (s, frac, incl, orig) = (
            u32_at(b, at, be).unwrap_or(0),
            u32_at(b, at + 4, be).unwrap_or(0),
            u32_at(b, at + 8, be).unwrap_or(0) as usize,
            u32_at(b, at + 12, be).unwrap_or(0),
        );
        let Some(data) = b.get(at + 16..at + 16 + incl) else {
            break;
        };
        c.frames.push(Frame {
            data: data.to_vec(),
            len: orig,
            time_ns: s as u64 * 1_000_000_000 + frac as u64 * if nanos { 1 } else { 1000 },
            ..Frame::default()
        });
        at += 16 + incl;
    }
    Ok(c)
}

/// One interface of a pcapng section: its name and its time unit.
struct Iface {
    name: String,
    /// Nanoseconds a timestamp unit is worth (or, negative, units a
    /// nanosecond).
    unit_ns: f64,
}

fn options(b: &[u8], be: bool, mut f: impl FnMut(u16, &[u8])) {
    let mut at = 0;
    while at + 4 <= b.len() {
        let (code, len) = (
            u16_at(b, at, be).unwrap_or(0),
            u16_at(b, at + 2, be).unwrap_or(0) as usize,
        );
        if code == OPT_END {
            return;
        }
        let Some(v) = b.get(at + 4..at + 4 + len) else {
            return;
        };
        f(code, v);
        at += 4 + len.div_ceil(4) * 4;
    }
}

fn read_pcapng(b: &[u8]) -> Result<Capture, String> {
    let mut c = Capture::default();
    let mut ifaces: Vec<Iface> = Vec::new();
    let mut be = false;
    let mut at = 0;
    while at + 12 <= b.len() {
        let kind = u32_at(b, at, be).unwrap_or(0);
        if kind == SHB {
            be = match b.get(at + 8..at + 12) {
                Some([0x1a, 0x2b, 0x3c, 0x4d]) => true,
                Some([0x4d, 0x3c, 0x2b, 0x1a]) => false,
                _ => {
                    return Err(format!(
                        "byte {at}: a section header without its byte-order magic"
                    ))
                }
            };
            ifaces.clear();
        }
        let len = u32_at(b, at + 4, be).unwrap_or(0) as usize;
        if len < 12 || !len.is_multiple_of(4) {
            return Err(format!("byte {at}: a block of length {len}"));
        }
        let Some(block) = b.get(at..at + len) else {
            break;
        };
        let body = &block[8..len - 4];
        match kind {
            IDB => {
                let link = u16_at(body, 0, be).unwrap_or(0);
                if link != LINKTYPE_ETHERNET {
                    return Err(format!(
                        "interface {}: link type {link}: only Ethernet (1) is read",
                        ifaces.len()
                    ));
                }
                let mut i = Iface {
                    name: String::new(),
                    unit_ns: 1000.0,
                };
                options(body.get(8..).unwrap_or(&[]), be, |code, v| match code {
                    IF_NAME => {
                        i.name = String::from_utf8_lossy(v)
                            .trim_end_matches('\0')
                            .to_string()
                    }
                    IF_TSRESOL => {
                        let r = v.first().copied().unwrap_or(6);
                        let units_per_s = if r & 0x80 != 0 {
                            2f64.powi((r & 0x7f) as i32)
                        } else {
                            10f64.powi(r as i32)
                        };
                        i.unit_ns = 1e9 / units_per_s;
                    }
                    _ => {}
                });
                c.interfaces.push(i.name.clone());
                c.dropped.push(None);
                ifaces.push(i);
            }
            EPB => {
                let ifc = u32_at(body, 0, be).unwrap_or(0);
                let ts = (u32_at(body, 4, be).unwrap_or(0) as u64) << 32
                    | u32_at(body, 8, be).unwrap_or(0) as u64;
                let incl = u32_at(body, 12, be).unwrap_or(0) as usize;
                let orig = u32_at(body, 16, be).unwrap_or(0);
                let data = body
                    .get(20..20 + incl)
                    .ok_or_else(|| format!("byte {at}: a packet block longer than itself"))?;
                let unit = ifaces
                    .get(ifc as usize)
                    .ok_or_else(|| {
                        format!("byte {at}: a packet of interface {ifc}, which is not described")
                    })?
                    .unit_ns;
                let mut f = Frame {
                    data: data.to_vec(),
                    len: orig,
                    interface: ifc,
                    time_ns: (ts as f64 * unit) as u64,
                    ..Frame::default()
                };
                options(
                    body.get(20 + incl.div_ceil(4) * 4..).unwrap_or(&[]),
                    be,
                    |code, v| match code {
                        EPB_FLAGS => f.flags = u32_at(v, 0, be).unwrap_or(0),
                        OPT_COMMENT => f.comments.push(String::from_utf8_lossy(v).to_string()),
                        _ => {}
                    },
                );
                c.frames.push(f);
            }
            SPB => {
                let orig = u32_at(body, 0, be).unwrap_or(0);
                let data = body.get(4..).unwrap_or(&[]);
                let n = (orig as usize).min(data.len());
                c.frames.push(Frame {
                    data: data[..n].to_vec(),
                    len: orig,
                    ..Frame::default()
                });
            }
            ISB => {
                let ifc = u32_at(body, 0, be).unwrap_or(0) as usize;
                let mut dropped = None;
                options(body.get(12..).unwrap_or(&[]), be, |code, v| {
                    if code == ISB_IFDROP {
                        let x: Option<[u8; 8]> = v.get(..8).and_then(|x| x.try_into().ok());
                        dropped = x.map(|x| {
                            if be {
                                u64::from_be_bytes(x)
                            } else {
                                u64::from_le_bytes(x)
                            }
                        });
                    }
                });
                if let Some(d) = c.dropped.get_mut(ifc) {
                    *d = dropped;
                }
            }
            _ => {}
        }
        at += len;
    }
    Ok(c)
}

#[cfg(test)]
mod tests;
