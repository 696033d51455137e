//! The world hash: 64-bit FNV-1a over the canonical JSON encoding of the
//! simulation state. Hand-written (a dozen lines) rather than a dependency;
//! JSON gives a canonical order for free because every collection in the
//! state is a `Vec` or a `BTreeMap`, and floats print in their shortest
//! round-tripping form.

use serde::Serialize;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a 64 accumulator that doubles as an `io::Write` sink, so a value
/// can be hashed while it is serialized, without building the string.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(u64);

impl Fnv64 {
    /// A fresh accumulator.
    pub fn new() -> Self {
        Self(FNV_OFFSET)
    }

    /// Feeds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    fn default() -> Self {
        Self::new()
    }
}

impl std::io::Write for Fnv64 {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Hashes a value's JSON encoding. A value that cannot be encoded (a
/// non-finite float, which the simulation never produces) hashes what was
/// written before the failure plus a marker, so the result stays defined.
pub fn hash_json<T: Serialize>(value: &T) -> u64 {
    let mut h = Fnv64::new();
    if serde_json::to_writer(&mut h, value).is_err() {
        h.update(b"\0unencodable");
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        let mut h = Fnv64::new();
        h.update(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(hash_json(&[1, 2]), hash_json(&[2, 1]));
    }
}
