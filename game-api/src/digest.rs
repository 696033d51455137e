//! How a game computes its world hash: 64-bit FNV-1a over a compact
//! binary walk of its state's `Serialize` implementation (the raycaster's
//! and tag's). Hand-written (no hashing dependency). The walk is canonical because every collection in the state
//! is a `Vec` or a `BTreeMap`; floats are hashed by their exact bits; struct
//! fields go in declaration order; lengths, option tags and enum variant
//! indices are hashed too, so different shapes cannot collide by
//! concatenation.

use serde::Serialize;
use serde::ser;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a 64 accumulator.
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

/// Hashes a value through its `Serialize` implementation.
pub fn hash_value<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut h = Fnv64::new();
    // The hashing serializer never fails; an error would only come from a
    // user `Serialize` impl, and then the partial hash is still defined.
    if value.serialize(&mut h).is_err() {
        h.update(b"\0error");
    }
    h.finish()
}

/// The serializer never fails on its own.
#[derive(Debug)]
pub struct HashError(String);

impl std::fmt::Display for HashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HashError {}

impl ser::Error for HashError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        HashError(msg.to_string())
    }
}

impl Fnv64 {
    fn len(&mut self, len: Option<usize>) {
        self.update(&(len.map_or(u64::MAX, |l| l as u64)).to_le_bytes());
    }
}

type Res = Result<(), HashError>;

impl ser::Serializer for &mut Fnv64 {
    type Ok = ();
    type Error = HashError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn serialize_bool(self, v: bool) -> Res {
        self.update(&[u8::from(v)]);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Res {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Res {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Res {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Res {
        self.update(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Res {
        self.update(&[v]);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Res {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Res {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Res {
        self.update(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Res {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Res {
        self.update(&v.to_bits().to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Res {
        self.serialize_u64(u64::from(u32::from(v)))
    }
    fn serialize_str(self, v: &str) -> Res {
        self.serialize_bytes(v.as_bytes())
    }
    fn serialize_bytes(self, v: &[u8]) -> Res {
        self.len(Some(v.len()));
        self.update(v);
        Ok(())
    }
    fn serialize_none(self) -> Res {
        self.update(&[0]);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Res {
        self.update(&[1]);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Res {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Res {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, index: u32, _: &'static str) -> Res {
        self.serialize_u32(index)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Res {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        value: &T,
    ) -> Res {
        self.serialize_u32(index)?;
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self, HashError> {
        self.len(len);
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, HashError> {
        self.update(&index.to_le_bytes());
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self, HashError> {
        self.len(len);
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, HashError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, HashError> {
        self.update(&index.to_le_bytes());
        Ok(self)
    }
}

macro_rules! compound {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for &mut Fnv64 {
            type Ok = ();
            type Error = HashError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Res {
                value.serialize(&mut **self)
            }
            fn end(self) -> Res {
                Ok(())
            }
        }
    )*};
}

compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for &mut Fnv64 {
    type Ok = ();
    type Error = HashError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Res {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Res {
        value.serialize(&mut **self)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Fnv64 {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> Res {
        value.serialize(&mut **self)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Fnv64 {
    type Ok = ();
    type Error = HashError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, value: &T) -> Res {
        value.serialize(&mut **self)
    }
    fn end(self) -> Res {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector_and_shape_sensitivity() {
        let mut h = Fnv64::new();
        h.update(b"a");
        assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(hash_value(&[1u32, 2]), hash_value(&[2u32, 1]));
        // Lengths are hashed: moving an element between two lists changes the hash.
        assert_ne!(
            hash_value(&(vec![1u8], vec![2u8, 3])),
            hash_value(&(vec![1u8, 2], vec![3u8]))
        );
        assert_ne!(hash_value(&Some(0u8)), hash_value(&None::<u8>));
        assert_ne!(hash_value(&0.0f64), hash_value(&-0.0f64));
    }
}
