//! Chunking and validated reassembly of large peer messages (spec §6 step 7,
//! §7): a serialized payload (a map, a level-transition payload) travels as
//! fixed-size [`Chunk`]s followed by a [`ChunkEnd`] marker carrying the total
//! size, the chunk count and a checksum.
//!
//! [`split`] cuts a payload at UTF-8 character boundaries into pieces of at
//! most [`CHUNK_SIZE_BYTES`] bytes. A [`Reassembler`] accepts chunks strictly
//! in order, bounds the total size, and on the end marker checks the count,
//! the size and the checksum before the caller parses the text. Every
//! failure is a [`ChunkError`] value; nothing here panics on peer input.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest chunk payload, in bytes (16 KiB: the conventional safe size for
/// one data-channel message, well under the ~64 KiB cross-browser floor).
pub const CHUNK_SIZE_BYTES: usize = 16 * 1024;

/// Largest payload a [`Reassembler`] accepts by default (a 512x512 map with
/// its entities fits comfortably).
pub const MAX_PAYLOAD_BYTES: usize = 8 * 1024 * 1024;

/// One piece of a chunked payload.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// Position of this chunk, from 0.
    pub index: u32,
    /// The piece of the serialized payload.
    pub data: String,
}

/// The end marker sent after the last chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkEnd {
    /// Total payload size in bytes (UTF-8).
    pub total_bytes: u64,
    /// Number of chunks sent.
    pub chunk_count: u32,
    /// FNV-1a 64 of the whole payload, 16 lowercase hex digits.
    pub checksum: String,
}

/// Why a chunked payload was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ChunkError {
    /// A chunk arrived out of order (or twice).
    #[error("chunk {got} arrived but chunk {expected} was expected")]
    OutOfOrder {
        /// The index the reassembler expected next.
        expected: u32,
        /// The index that arrived.
        got: u32,
    },
    /// One chunk is larger than [`CHUNK_SIZE_BYTES`].
    #[error("chunk {index} holds {len} bytes, more than {CHUNK_SIZE_BYTES}")]
    ChunkTooLarge {
        /// Which chunk.
        index: u32,
        /// Its size.
        len: usize,
    },
    /// A chunk carried no data (a sender never makes one).
    #[error("chunk {index} is empty")]
    EmptyChunk {
        /// Which chunk.
        index: u32,
    },
    /// More chunks than a payload within the limit can take.
    #[error("more than {limit} chunks")]
    TooManyChunks {
        /// Most chunks accepted.
        limit: u32,
    },
    /// The payload grew beyond the reassembler's limit.
    #[error("payload exceeds {limit} bytes")]
    PayloadTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The end marker's count differs from the chunks received.
    #[error("end marker announces {expected} chunks but {got} arrived")]
    CountMismatch {
        /// Announced.
        expected: u32,
        /// Received.
        got: u32,
    },
    /// The end marker's size differs from the bytes received.
    #[error("end marker announces {expected} bytes but {got} arrived")]
    SizeMismatch {
        /// Announced.
        expected: u64,
        /// Received.
        got: u64,
    },
    /// The checksum differs: some chunk was corrupted.
    #[error("checksum mismatch: announced {expected}, computed {got}")]
    ChecksumMismatch {
        /// Announced.
        expected: String,
        /// Computed.
        got: String,
    },
    /// The reassembled text is not the expected JSON.
    #[error("reassembled payload does not parse: {0}")]
    Parse(String),
}

/// FNV-1a 64 of `bytes` as 16 lowercase hex digits.
pub fn checksum(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Splits `payload` into chunks of at most [`CHUNK_SIZE_BYTES`] bytes, cut
/// at character boundaries, and the matching end marker. An empty payload
/// gives no chunks.
pub fn split(payload: &str) -> (Vec<Chunk>, ChunkEnd) {
    let mut chunks = Vec::new();
    let mut rest = payload;
    let mut index = 0u32;
    while !rest.is_empty() {
        let mut cut = rest.len().min(CHUNK_SIZE_BYTES);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = rest.split_at(cut);
        chunks.push(Chunk {
            index,
            data: head.to_owned(),
        });
        index += 1;
        rest = tail;
    }
    let end = ChunkEnd {
        total_bytes: payload.len() as u64,
        chunk_count: index,
        checksum: checksum(payload.as_bytes()),
    };
    (chunks, end)
}

/// Collects chunks in order and validates them against the end marker.
#[derive(Clone, Debug)]
pub struct Reassembler {
    buffer: String,
    next: u32,
    limit: usize,
}

impl Default for Reassembler {
    fn default() -> Self {
        Self::new(MAX_PAYLOAD_BYTES)
    }
}

impl Reassembler {
    /// A reassembler accepting at most `limit` payload bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            buffer: String::new(),
            next: 0,
            limit,
        }
    }

    /// Chunks accepted so far.
    pub fn received(&self) -> u32 {
        self.next
    }

    /// Most chunks a payload within the limit needs: [`split`] fills every
    /// chunk but the last, cutting up to 3 bytes short at a character
    /// boundary.
    pub fn max_chunks(&self) -> u32 {
        u32::try_from(self.limit.div_ceil(CHUNK_SIZE_BYTES - 3))
            .unwrap_or(u32::MAX)
            .max(1)
    }

    /// Accepts the next chunk; rejects gaps, repeats, empty and oversized
    /// chunks, more chunks than the limit needs, and payloads over the limit.
    pub fn push(&mut self, chunk: &Chunk) -> Result<(), ChunkError> {
        if chunk.index != self.next {
            return Err(ChunkError::OutOfOrder {
                expected: self.next,
                got: chunk.index,
            });
        }
        if chunk.data.is_empty() {
            return Err(ChunkError::EmptyChunk { index: chunk.index });
        }
        if self.next >= self.max_chunks() {
            return Err(ChunkError::TooManyChunks {
                limit: self.max_chunks(),
            });
        }
        if chunk.data.len() > CHUNK_SIZE_BYTES {
            return Err(ChunkError::ChunkTooLarge {
                index: chunk.index,
                len: chunk.data.len(),
            });
        }
        if self.buffer.len() + chunk.data.len() > self.limit {
            return Err(ChunkError::PayloadTooLarge { limit: self.limit });
        }
        self.buffer.push_str(&chunk.data);
        self.next += 1;
        Ok(())
    }

    /// Checks the end marker and returns the payload text.
    pub fn finish(self, end: &ChunkEnd) -> Result<String, ChunkError> {
        if end.chunk_count != self.next {
            return Err(ChunkError::CountMismatch {
                expected: end.chunk_count,
                got: self.next,
            });
        }
        let got = self.buffer.len() as u64;
        if end.total_bytes != got {
            return Err(ChunkError::SizeMismatch {
                expected: end.total_bytes,
                got,
            });
        }
        let sum = checksum(self.buffer.as_bytes());
        if sum != end.checksum {
            return Err(ChunkError::ChecksumMismatch {
                expected: end.checksum.clone(),
                got: sum,
            });
        }
        Ok(self.buffer)
    }

    /// [`Reassembler::finish`], then parses the payload as JSON.
    pub fn finish_parse<T: DeserializeOwned>(self, end: &ChunkEnd) -> Result<T, ChunkError> {
        let text = self.finish(end)?;
        serde_json::from_str(&text).map_err(|e| ChunkError::Parse(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reassemble(chunks: &[Chunk], end: &ChunkEnd) -> Result<String, ChunkError> {
        let mut r = Reassembler::default();
        for c in chunks {
            r.push(c)?;
        }
        r.finish(end)
    }

    fn big() -> String {
        let mut s = String::from("[");
        for i in 0..9000 {
            s.push_str(&format!("{{\"n\":{i},\"s\":\"é✓\"}},"));
        }
        s.push_str("0]");
        s
    }

    #[test]
    fn large_payload_splits_into_bounded_chunks() {
        let payload = big();
        let (chunks, end) = split(&payload);
        assert!(chunks.len() > 3);
        assert!(chunks.iter().all(|c| c.data.len() <= CHUNK_SIZE_BYTES));
        assert_eq!(end.chunk_count as usize, chunks.len());
        assert_eq!(reassemble(&chunks, &end).unwrap(), payload);
        let parsed: Result<serde_json::Value, _> = {
            let mut r = Reassembler::default();
            chunks.iter().for_each(|c| r.push(c).unwrap());
            r.finish_parse(&end)
        };
        assert!(parsed.is_ok());
    }

    #[test]
    fn corrupted_chunk_is_rejected() {
        let payload = big();
        let (mut chunks, end) = split(&payload);
        chunks[1].data = chunks[1].data.replacen("\"n\"", "\"m\"", 1);
        assert!(matches!(
            reassemble(&chunks, &end),
            Err(ChunkError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn truncated_chunk_or_missing_chunk_is_rejected() {
        let payload = big();
        let (mut chunks, end) = split(&payload);
        chunks[2].data.truncate(100);
        assert!(matches!(
            reassemble(&chunks, &end),
            Err(ChunkError::SizeMismatch { .. })
        ));
        let (mut chunks, end) = split(&payload);
        chunks.pop();
        assert!(matches!(
            reassemble(&chunks, &end),
            Err(ChunkError::CountMismatch { .. })
        ));
    }

    #[test]
    fn out_of_order_and_repeated_chunks_are_rejected() {
        let (mut chunks, end) = split(&big());
        chunks.swap(0, 1);
        assert_eq!(
            reassemble(&chunks, &end),
            Err(ChunkError::OutOfOrder {
                expected: 0,
                got: 1
            })
        );
        let (chunks, _) = split(&big());
        let mut r = Reassembler::default();
        r.push(&chunks[0]).unwrap();
        assert!(matches!(
            r.push(&chunks[0]),
            Err(ChunkError::OutOfOrder { .. })
        ));
    }

    #[test]
    fn oversized_and_over_limit_payloads_are_rejected() {
        let mut r = Reassembler::default();
        let huge = Chunk {
            index: 0,
            data: "x".repeat(CHUNK_SIZE_BYTES + 1),
        };
        assert!(matches!(
            r.push(&huge),
            Err(ChunkError::ChunkTooLarge { .. })
        ));
        let mut r = Reassembler::new(10);
        let (chunks, _) = split(&"y".repeat(20));
        assert!(matches!(
            r.push(&chunks[0]),
            Err(ChunkError::PayloadTooLarge { .. })
        ));
    }

    #[test]
    fn empty_chunks_and_too_many_chunks_are_rejected() {
        let mut r = Reassembler::default();
        let empty = Chunk {
            index: 0,
            data: String::new(),
        };
        assert_eq!(r.push(&empty), Err(ChunkError::EmptyChunk { index: 0 }));
        assert_eq!(r.received(), 0, "nothing accepted");
        // One-byte chunks within the byte limit, but more of them than any
        // payload of that size needs.
        let mut r = Reassembler::new(3 * CHUNK_SIZE_BYTES);
        let limit = r.max_chunks();
        assert_eq!(limit, 4);
        for index in 0..limit {
            r.push(&Chunk {
                index,
                data: "x".into(),
            })
            .unwrap();
        }
        assert_eq!(
            r.push(&Chunk {
                index: limit,
                data: "x".into()
            }),
            Err(ChunkError::TooManyChunks { limit })
        );
        // A real payload at the limit fits.
        let payload: String = "é".repeat(3 * CHUNK_SIZE_BYTES / 2);
        let (chunks, end) = split(&payload);
        let mut r = Reassembler::new(payload.len());
        chunks.iter().for_each(|c| r.push(c).unwrap());
        assert_eq!(r.finish(&end).unwrap(), payload);
    }

    #[test]
    fn unparsable_payload_is_a_parse_error() {
        let (chunks, end) = split("{\"not\": valid");
        let mut r = Reassembler::default();
        chunks.iter().for_each(|c| r.push(c).unwrap());
        let got: Result<serde_json::Value, _> = r.finish_parse(&end);
        assert!(matches!(got, Err(ChunkError::Parse(_))));
    }

    proptest! {
        #[test]
        fn split_then_reassemble_is_identity(payload in ".{0,3000}", repeat in 1usize..40) {
            let payload = payload.repeat(repeat);
            let (chunks, end) = split(&payload);
            prop_assert!(chunks.iter().all(|c| c.data.len() <= CHUNK_SIZE_BYTES && !c.data.is_empty()));
            prop_assert_eq!(reassemble(&chunks, &end).unwrap(), payload);
        }

        #[test]
        fn any_dropped_chunk_is_detected(repeat in 2usize..6, drop in 0usize..100) {
            let payload = "abcdefgh".repeat(CHUNK_SIZE_BYTES / 8 * repeat);
            let (mut chunks, end) = split(&payload);
            let drop = drop % chunks.len();
            chunks.remove(drop);
            prop_assert!(reassemble(&chunks, &end).is_err());
        }
    }
}
