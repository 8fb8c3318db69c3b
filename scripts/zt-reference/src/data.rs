//! Deterministic tensor contents: the same names always give the same bytes.

use ztensor::DType;

/// A 64-bit linear congruential generator (Knuth's MMIX constants) seeded with the FNV-1a hash
/// of a name. Only the high half of the state is used: an LCG's low bits are weak.
pub struct Lcg(u64);

impl Lcg {
    pub fn new(name: &str) -> Self {
        let seed =
            name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        Lcg(seed)
    }

    pub fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        (u64::from(self.next_u32()) << 32) | u64::from(self.next_u32())
    }

    /// Uniform in [-100, 100): finite and well inside every float dtype's range.
    fn next_float(&mut self) -> f64 {
        f64::from(self.next_u32()) / f64::from(u32::MAX) * 200.0 - 100.0
    }
}

/// `count` fresh pseudo-random elements of `dtype`, as little-endian bytes. Floats are finite,
/// bools are 0 or 1.
pub fn random(dtype: &DType, count: usize, rng: &mut Lcg) -> Vec<u8> {
    let mut out = Vec::with_capacity(count * dtype.byte_size().unwrap());
    for _ in 0..count {
        push_element(dtype, rng, &mut out);
    }
    out
}

fn push_element(dtype: &DType, rng: &mut Lcg, out: &mut Vec<u8>) {
    let size = dtype.byte_size().unwrap();
    match dtype {
        DType::Float64 => out.extend(rng.next_float().to_le_bytes()),
        DType::Float32 => out.extend((rng.next_float() as f32).to_le_bytes()),
        DType::BFloat16 => out.extend((((rng.next_float() as f32).to_bits() >> 16) as u16).to_le_bytes()),
        DType::Float16 => out.extend(f16_bits(rng.next_float() as f32).to_le_bytes()),
        DType::Bool => out.push((rng.next_u32() >> 31) as u8),
        // Integers: the low bytes of a random u64, so every bit pattern occurs.
        _ => out.extend(&rng.next_u64().to_le_bytes()[..size]),
    }
}

/// IEEE half-precision bits of `x` by truncation; values below the smallest normal half
/// become signed zero. Only meant for |x| < 65504.
fn f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    if exponent <= 0 {
        return sign;
    }
    sign | ((exponent as u16) << 10) | ((bits >> 13) & 0x3ff) as u16
}

/// `count` elements that compress well without being trivial: a random block of `period`
/// elements, repeated, with `edits` random elements of the block replaced before each copy,
/// so the content drifts and a compressor needs long back-references plus fresh literals.
pub fn drifting(dtype: &DType, count: usize, period: usize, edits: usize, rng: &mut Lcg) -> Vec<u8> {
    let size = dtype.byte_size().unwrap();
    let mut block = random(dtype, period, rng);
    let mut out = Vec::with_capacity(count * size);
    while out.len() < count * size {
        for _ in 0..edits {
            let at = rng.next_u32() as usize % period * size;
            let fresh = random(dtype, 1, rng);
            block[at..at + size].copy_from_slice(&fresh);
        }
        out.extend_from_slice(&block);
    }
    out.truncate(count * size);
    out
}
