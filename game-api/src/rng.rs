//! mulberry32, the spec's PRNG (§3, "The PRNG state gap"): bit-compatible
//! with the browser engine's `mulberry32(seed)`, with its raw 32-bit state
//! readable and resumable. A game's shared stream (the raycaster's) and the
//! simulated network's losses and jitter draw from it.

use serde::{Deserialize, Serialize};

/// A mulberry32 generator. Its whole state is one `u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Mulberry32 {
    state: u32,
}

impl Mulberry32 {
    /// A stream seeded like `mulberry32(seed)`: the seed is the initial state.
    pub fn new(seed: u32) -> Self {
        Self { state: seed }
    }

    /// The raw internal state; [`Mulberry32::from_state`] resumes from it.
    pub fn state(&self) -> u32 {
        self.state
    }

    /// Resumes the stream at a raw state (not a reseed: the next draw is the
    /// one the stream that produced `state` would have drawn).
    pub fn from_state(state: u32) -> Self {
        Self { state }
    }

    /// The next raw 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        self.state = self.state.wrapping_add(0x6D2B_79F5);
        let mut t = self.state;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        t ^= t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 61));
        t ^ (t >> 14)
    }

    /// The next value in `[0, 1)`, exactly as the JavaScript version returns it.
    pub fn next_f64(&mut self) -> f64 {
        f64::from(self.next_u32()) / 4_294_967_296.0
    }

    /// A value in `[-1, 1)`.
    pub fn next_signed(&mut self) -> f64 {
        self.next_f64() * 2.0 - 1.0
    }

    /// An integer in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        // The float product is < n, so the truncation stays in range.
        (self.next_f64() * f64::from(n)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_javascript_reference() {
        // mulberry32(1) in JS: 0.6270739405881613, 0.002735721180215478, 0.5274470399599522
        let mut r = Mulberry32::new(1);
        assert_eq!(r.next_f64(), 0.6270739405881613);
        assert_eq!(r.next_f64(), 0.002735721180215478);
        assert_eq!(r.next_f64(), 0.5274470399599522);
    }

    #[test]
    fn resumes_from_raw_state() {
        let mut a = Mulberry32::new(42);
        a.next_u32();
        let mut b = Mulberry32::from_state(a.state());
        assert_eq!(a.next_u32(), b.next_u32());
        assert!(Mulberry32::new(7).below(10) < 10);
    }
}
