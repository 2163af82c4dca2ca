//! The bench's deterministic draws: an op's key ([`op_key`], independent
//! of timing) and the RNG of one draw ([`draw_rng`], seeded from the run's
//! seed, the fault, the key and the step alone), so that the same seed
//! gives the same ops and the same fault plan whatever the timing; and
//! [`ns`], a duration as the u64 ns the clocks and plans count in.
//!
//! Core layer: imports nothing of the crate.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The deterministic identity of an op, independent of timing: the
/// generator stream it came from (0 = ingest, r + 1 = resolver r), its
/// index in that stream, and the client's resend number (HTTP retries).
pub fn op_key(stream: u32, index: u64, resend: u32) -> u64 {
    ((stream as u64) << 48) ^ (index & ((1 << 40) - 1)) ^ ((resend as u64 & 0xff) << 40)
}

/// The RNG of one draw: ChaCha8 seeded from (seed, fault, key, step) by a
/// SplitMix64 mix, so no draw depends on any other.
pub fn draw_rng(seed: u64, fault: u32, key: u64, step: u32) -> ChaCha8Rng {
    let mut x = seed;
    for v in [fault as u64, key, step as u64] {
        x = splitmix(x ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    ChaCha8Rng::seed_from_u64(x)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A duration in ns, saturating (durations of 584 years and more).
pub fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
