//! Chunk reassembly over arbitrary chunks and end markers: never a panic,
//! never more than the limit held, and a real split always reassembles.
#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol::chunk::{Chunk, ChunkEnd, Reassembler, split};

const LIMIT: usize = 64 * 1024;

fuzz_target!(|input: (Vec<(u32, String)>, u64, u32, String, String)| {
    let (chunks, total_bytes, chunk_count, checksum, payload) = input;
    let mut r = Reassembler::new(LIMIT);
    let mut accepted = true;
    for (index, data) in chunks {
        if r.push(&Chunk { index, data }).is_err() {
            accepted = false;
            break;
        }
        assert!(r.received() <= r.max_chunks());
    }
    if accepted {
        let _ = r.finish(&ChunkEnd {
            total_bytes,
            chunk_count,
            checksum,
        });
    }
    if payload.len() <= LIMIT {
        let (chunks, end) = split(&payload);
        let mut r = Reassembler::new(LIMIT);
        for c in &chunks {
            r.push(c).expect("a real chunk is accepted");
        }
        assert_eq!(r.finish(&end).expect("a real split reassembles"), payload);
    }
});
