//! Delta snapshots (the `delta-snapshots` hello feature, issue 48): a
//! reconciliation snapshot in a binary form, deflated with an earlier
//! snapshot's binary form as the preset dictionary, so what did not change
//! since that snapshot costs a few bytes of back-references.
//!
//! The binary form ([`to_binary`]) is the snapshot's JSON value written so
//! that an unchanged value is the same bytes as before: every number in
//! eight bytes (its `u64`, `i64` or `f64` bits, so nothing is rounded),
//! strings and lists with a four-byte length. It is game-agnostic: any
//! [`GameWire::Snapshot`](game_api::GameWire::Snapshot) goes through it,
//! and [`from_binary`] gives back exactly the value that went in.
//!
//! Measured on five bots' snapshots (`engine/examples/snapshot_bytes.rs`,
//! docs/benchmarks.md), a delta against the snapshot a second earlier is
//! about 42-44% of the deflated JSON the `compact` form sends.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::chunk::MAX_PAYLOAD_BYTES;

/// The deflate level: the snapshots are small, the best ratio is cheap.
const LEVEL: u32 = 9;

/// How deep a binary value may nest (a snapshot nests four or five).
const MAX_DEPTH: usize = 32;

/// Why a delta could not be made or read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DeltaError {
    /// The value has no JSON form (a map with non-string keys, say).
    #[error("the value has no JSON form: {0}")]
    NotJson(String),
    /// The bytes are not a binary value, or not the type asked for.
    #[error("not a binary snapshot: {0}")]
    Malformed(String),
    /// The compressor failed.
    #[error("the snapshot does not deflate: {0}")]
    Deflate(String),
    /// The deflate stream is broken, or was made with another base.
    #[error("the delta does not inflate against its base: {0}")]
    Inflate(String),
    /// Inflated, it would be larger than any message may carry.
    #[error("the delta inflates past {MAX_PAYLOAD_BYTES} bytes")]
    TooLarge,
}

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const UNSIGNED: u8 = 3;
const SIGNED: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// `value` in the binary form.
///
/// # Errors
///
/// The value has no JSON form.
pub fn to_binary<T: Serialize>(value: &T) -> Result<Vec<u8>, DeltaError> {
    let value = serde_json::to_value(value).map_err(|e| DeltaError::NotJson(e.to_string()))?;
    let mut out = Vec::with_capacity(4096);
    write(&value, &mut out);
    Ok(out)
}

fn write_len(n: usize, out: &mut Vec<u8>) {
    // Messages are far below 4 GiB (MAX_PAYLOAD_BYTES): a length fits.
    out.extend(u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(NULL),
        Value::Bool(b) => out.push(if *b { TRUE } else { FALSE }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(UNSIGNED);
                out.extend(u.to_le_bytes());
            } else if let Some(i) = n.as_i64() {
                out.push(SIGNED);
                out.extend(i.to_le_bytes());
            } else {
                out.push(FLOAT);
                out.extend(n.as_f64().unwrap_or_default().to_bits().to_le_bytes());
            }
        }
        Value::String(s) => {
            out.push(STRING);
            write_len(s.len(), out);
            out.extend(s.as_bytes());
        }
        Value::Array(items) => {
            out.push(ARRAY);
            write_len(items.len(), out);
            for item in items {
                write(item, out);
            }
        }
        Value::Object(fields) => {
            out.push(OBJECT);
            write_len(fields.len(), out);
            for (key, item) in fields {
                write_len(key.len(), out);
                out.extend(key.as_bytes());
                write(item, out);
            }
        }
    }
}

/// The value a binary form carries.
///
/// # Errors
///
/// The bytes are not one whole binary value, or not a `T`.
pub fn from_binary<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DeltaError> {
    let mut reader = Reader { bytes, at: 0 };
    let value = reader.value(0)?;
    if reader.at != bytes.len() {
        return Err(DeltaError::Malformed("bytes after the value".into()));
    }
    serde_json::from_value(value).map_err(|e| DeltaError::Malformed(e.to_string()))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DeltaError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| DeltaError::Malformed("cut short".into()))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn eight(&mut self) -> Result<[u8; 8], DeltaError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(b)
    }

    fn len(&mut self) -> Result<usize, DeltaError> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4)?);
        let n = u32::from_le_bytes(b) as usize;
        // Every item takes at least a byte: a length past what is left is
        // a lie, refused before anything is allocated for it.
        if n > self.bytes.len() - self.at {
            return Err(DeltaError::Malformed("a length past the end".into()));
        }
        Ok(n)
    }

    fn string(&mut self) -> Result<String, DeltaError> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| DeltaError::Malformed("a string that is not UTF-8".into()))
    }

    fn value(&mut self, depth: usize) -> Result<Value, DeltaError> {
        if depth > MAX_DEPTH {
            return Err(DeltaError::Malformed("nested too deep".into()));
        }
        let tag = self.take(1)?[0];
        Ok(match tag {
            NULL => Value::Null,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            UNSIGNED => Value::Number(u64::from_le_bytes(self.eight()?).into()),
            SIGNED => Value::Number(i64::from_le_bytes(self.eight()?).into()),
            FLOAT => {
                let f = f64::from_bits(u64::from_le_bytes(self.eight()?));
                Value::Number(
                    Number::from_f64(f)
                        .ok_or_else(|| DeltaError::Malformed("a number JSON cannot hold".into()))?,
                )
            }
            STRING => Value::String(self.string()?),
            ARRAY => {
                let n = self.len()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            OBJECT => {
                let n = self.len()?;
                let mut fields = Map::new();
                for _ in 0..n {
                    let key = self.string()?;
                    fields.insert(key, self.value(depth + 1)?);
                }
                Value::Object(fields)
            }
            other => return Err(DeltaError::Malformed(format!("unknown tag {other}"))),
        })
    }
}

/// `current` (a binary form) deflated with `base` (an earlier one, the
/// receiver's too) as the dictionary; with no base, on its own.
///
/// # Errors
///
/// The compressor refused the dictionary or the input (never seen; the
/// caller sends the snapshot whole instead).
pub fn encode(current: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>, DeltaError> {
    let mut compress = Compress::new(Compression::new(LEVEL), false);
    if let Some(base) = base {
        compress
            .set_dictionary(base)
            .map_err(|e| DeltaError::Deflate(e.to_string()))?;
    }
    let mut out = Vec::with_capacity(current.len() / 2 + 64);
    loop {
        let read = usize::try_from(compress.total_in()).unwrap_or(usize::MAX);
        let input = current.get(read..).unwrap_or_default();
        match compress.compress_vec(input, &mut out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) => return Ok(out),
            // Out of room: more, and on.
            Ok(Status::Ok | Status::BufError) => out.reserve(out.capacity().max(256)),
            Err(e) => return Err(DeltaError::Deflate(e.to_string())),
        }
    }
}

/// The binary form `delta` carries, inflated against `base` (the same base
/// [`encode`] was given).
///
/// # Errors
///
/// The stream is broken or was made against another base, or it would
/// inflate past the largest message.
pub fn decode(delta: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>, DeltaError> {
    let mut inflate = Decompress::new(false);
    if let Some(base) = base {
        inflate
            .set_dictionary(base)
            .map_err(|e| DeltaError::Inflate(e.to_string()))?;
    }
    let mut out = Vec::with_capacity(delta.len() * 4 + 256);
    loop {
        let (read, written) = (inflate.total_in(), out.len());
        let input = usize::try_from(read)
            .ok()
            .and_then(|r| delta.get(r..))
            .unwrap_or_default();
        let status = inflate
            .decompress_vec(input, &mut out, FlushDecompress::Finish)
            .map_err(|e| DeltaError::Inflate(e.to_string()))?;
        if out.len() > MAX_PAYLOAD_BYTES {
            return Err(DeltaError::TooLarge);
        }
        if status == Status::StreamEnd {
            return Ok(out);
        }
        if out.len() == out.capacity() {
            out.reserve(out.capacity().clamp(256, MAX_PAYLOAD_BYTES));
        } else if inflate.total_in() == read && out.len() == written {
            return Err(DeltaError::Inflate("the stream ends too early".into()));
        }
    }
}

#[cfg(test)]
mod tests;
