//! Explicit SIMD for the hottest kernels, chosen at run time: AVX2 on x86-64 where the CPU has
//! it. Each SIMD kernel does the scalar kernel's floating-point operations in the same order
//! (separate multiply and add, x86's truncating conversions, the scalar half-precision
//! rounding of scales), so its bytes are the scalar kernel's: the scalar code stays the
//! reference, runs on every other CPU, and takes the blocks the SIMD code leaves to it (a NaN
//! where the order of a maximum or of a sum's operands decides, a tie between 0 and -0).
//!
//! - `quantize_x86`: Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 without importance, block by block; MXFP4;
//!   the digits of TQ1_0 and TQ2_0; BF16.
//! - `search_x86`: ggml's `make_q3_quants` of a Q3_K block's 16 groups side by side; the
//!   candidate fits of IQ4_NL and IQ4_XS side by side.
//! - `dequantize_x86`: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K.
//! - `tests`: each against the scalar code, byte for byte and bit for bit.
//!
//! No AVX-512 (AVX2 reaches ggml's C and the memory's speed here) and no NEON yet.
//!
//! `TENSORFILE_SIMD=off` (or `0`, `scalar`) in the environment turns the SIMD kernels off for
//! the process: the scalar ones run everywhere (for comparing, or for ruling them out).

#[cfg(target_arch = "x86_64")]
pub(super) mod dequantize_x86;
#[cfg(target_arch = "x86_64")]
pub(super) mod quantize_x86;
#[cfg(target_arch = "x86_64")]
pub(super) mod search_x86;

#[cfg(all(test, target_arch = "x86_64"))]
mod tests;

use std::sync::atomic::{AtomicU8, Ordering};

/// Not detected yet.
const UNKNOWN: u8 = 0;
/// Scalar kernels only: no AVX2, another architecture, or `TENSORFILE_SIMD=off`.
const SCALAR: u8 = 1;
/// AVX2 (with the CPU's F16C and FMA not used: ggml's arithmetic has no fused operations).
const AVX2: u8 = 2;

/// What this process runs, detected once.
static LEVEL: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether the environment turns the SIMD kernels off.
fn turned_off() -> bool {
    std::env::var("TENSORFILE_SIMD")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "off" | "0" | "scalar" | "no" | "false"))
}

/// The CPU's level, without the environment.
fn cpu_level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return AVX2;
    }
    SCALAR
}

/// Whether the AVX2 kernels run in this process (the CPU has AVX2 and the environment allows).
#[inline]
pub(super) fn avx2() -> bool {
    let mut level = LEVEL.load(Ordering::Relaxed);
    if level == UNKNOWN {
        level = if turned_off() { SCALAR } else { cpu_level() };
        LEVEL.store(level, Ordering::Relaxed);
    }
    level == AVX2
}
