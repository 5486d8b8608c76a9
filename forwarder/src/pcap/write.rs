//! A pcapng writer (little-endian): the blocks [`super`] describes.

use super::*;
use std::io::{self, Write};

/// Writes a pcapng stream.
pub struct Writer<W: Write> {
    out: W,
    interfaces: u32,
    buf: Vec<u8>,
}

/// An option: code, value, padded to 32 bits.
fn option(b: &mut Vec<u8>, code: u16, v: &[u8]) {
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(v.len() as u16).to_le_bytes());
    b.extend_from_slice(v);
    b.resize(b.len().div_ceil(4) * 4, 0);
}

impl<W: Write> Writer<W> {
    /// Starts a section with one interface a name of `interfaces`
    /// (Ethernet, nanosecond timestamps, `snaplen` bytes at most).
    pub fn new(out: W, interfaces: &[String], snaplen: u32) -> io::Result<Writer<W>> {
        let mut w = Writer {
            out,
            interfaces: interfaces.len() as u32,
            buf: Vec::with_capacity(4096),
        };
        let mut body = Vec::new();
        body.extend_from_slice(&BOM.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes());
        option(&mut body, 4, b"forwarder capture"); // shb_userappl
        option(&mut body, OPT_END, &[]);
        w.block(SHB, &body)?;
        for name in interfaces {
            let mut body = Vec::new();
            body.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
            body.extend_from_slice(&0u16.to_le_bytes());
            body.extend_from_slice(&snaplen.to_le_bytes());
            option(&mut body, IF_NAME, name.as_bytes());
            option(&mut body, IF_TSRESOL, &[9]);
            option(&mut body, OPT_END, &[]);
            w.block(IDB, &body)?;
        }
        Ok(w)
    }

    fn block(&mut self, kind: u32, body: &[u8]) -> io::Result<()> {
        let len = (12 + body.len()) as u32;
        self.buf.clear();
        self.buf.extend_from_slice(&kind.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(body);
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.out.write_all(&self.buf)
    }

    /// A frame of interface `iface` at `time_ns` (since the Unix epoch):
    /// `data` as captured, `len` bytes on the wire, `flags` the direction
    /// ([`INBOUND`], [`OUTBOUND`]), and a comment (why it was dropped).
    pub fn packet(
        &mut self,
        iface: u32,
        time_ns: u64,
        data: &[u8],
        len: u32,
        flags: u32,
        comment: Option<&str>,
    ) -> io::Result<()> {
        if iface >= self.interfaces {
            return Err(io::Error::other(format!(
                "interface {iface} was not described"
            )));
        }
        let mut body = Vec::with_capacity(48 + data.len());
        body.extend_from_slice(&iface.to_le_bytes());
        body.extend_from_slice(&((time_ns >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(time_ns as u32).to_le_bytes());
        body.extend_from_slice(&(data.len() as u32).to_le_bytes());
        body.extend_from_slice(&len.to_le_bytes());
        body.extend_from_slice(data);
        body.resize(body.len().div_ceil(4) * 4, 0);
        if flags != 0 {
            option(&mut body, EPB_FLAGS, &flags.to_le_bytes());
        }
        if let Some(c) = comment {
            option(&mut body, OPT_COMMENT, c.as_bytes());
        }
        if flags != 0 || comment.is_some() {
            option(&mut body, OPT_END, &[]);
        }
        self.block(EPB, &body)
    }

    /// The statistics of interface `iface` at `time_ns`: `dropped`
    /// frames the capture lost.
    pub fn stats(&mut self, iface: u32, time_ns: u64, dropped: u64) -> io::Result<()> {
        let mut body = Vec::new();
        body.extend_from_slice(&iface.to_le_bytes());
        body.extend_from_slice(&((time_ns >> 32) as u32).to_le_bytes());
        body.extend_from_slice(&(time_ns as u32).to_le_bytes());
        option(&mut body, ISB_IFDROP, &dropped.to_le_bytes());
        option(&mut body, OPT_END, &[]);
        self.block(ISB, &body)
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The stream written to.
    pub fn into_inner(self) -> W {
        self.out
    }
}
