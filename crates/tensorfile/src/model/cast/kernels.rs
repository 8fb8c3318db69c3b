//! The element conversions, each as torch's CPU casts do it on their vectorized path: every
//! source widens to `float32` bits (exactly, but for `float64`, which rounds to `float32`
//! first: torch casts `float64` to the narrower dtypes through `float32`, rounding twice),
//! then rounds to the target, to nearest with ties to even.
//!
//! What torch does at the edges, and these functions with it:
//! - `float8_e4m3fn` saturates: every finite value beyond 448, and both infinities, become
//!   ±448; `float8_e5m2`, `float16` and `bfloat16` overflow to infinity.
//! - NaNs keep their sign into `float16`, `float32` and the `float8`s (to `float8` as the one
//!   NaN code, `S.1111.111` and `S.11111.11`); into `float16` and `float32` with their payload's
//!   top bits and the quiet bit set, as x86's conversion instructions give them (`bfloat16`
//!   widens to `float32` without quieting). Into `bfloat16` a NaN becomes `0xFFFF` from
//!   `float32` and `float64`, `0x7FC0` from every other dtype.
//! - `float8_e4m3fn`'s NaN widens to `0x7FF00000` (with its sign); the one NaN of the `fnuz`
//!   dtypes and of `float8_e8m0fnu` to `0x7F800001`.

/// A dtype cast from: its width and how an element reads as `float32` bits.
pub(super) trait Source {
    /// Bytes per element.
    const WIDTH: usize;
    /// What a NaN of this source becomes in `bfloat16`.
    const BF16_NAN: u32 = 0x7FC0;
    /// The element (`WIDTH` little-endian bytes) as `float32` bits.
    fn decode(bytes: &[u8]) -> u32;
}

/// A dtype cast to: its width and how `float32` bits round to it.
pub(super) trait Target {
    /// Bytes per element.
    const WIDTH: usize;
    /// `float32` bits rounded to this dtype (its bits in the low `WIDTH` bytes); a NaN
    /// becomes `bf16_nan` in `bfloat16`.
    fn encode(f: u32, bf16_nan: u32) -> u32;
}

/// Cast every element of `src` into `dst` (each a whole number of elements, as many).
pub(super) fn run<S: Source, T: Target>(src: &[u8], dst: &mut [u8]) {
    for (i, o) in src.chunks_exact(S::WIDTH).zip(dst.chunks_exact_mut(T::WIDTH)) {
        let v = T::encode(S::decode(i), S::BF16_NAN);
        o.copy_from_slice(&v.to_le_bytes()[..T::WIDTH]);
    }
}

/// A one-byte source's cast as a table: the target bits of each of its 256 values.
pub(super) fn byte_table<S: Source, T: Target>() -> [u32; 256] {
    let mut table = [0; 256];
    for (b, t) in table.iter_mut().enumerate() {
        *t = T::encode(S::decode(&[b as u8]), S::BF16_NAN);
    }
    table
}

/// Cast every byte of `src` into `dst` through `table` ([`byte_table`]).
pub(super) fn run_table<T: Target>(table: &[u32; 256], src: &[u8], dst: &mut [u8]) {
    for (&b, o) in src.iter().zip(dst.chunks_exact_mut(T::WIDTH)) {
        o.copy_from_slice(&table[usize::from(b)].to_le_bytes()[..T::WIDTH]);
    }
}

fn le<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut a = [0; N];
    a.copy_from_slice(&bytes[..N]);
    a
}

const SIGN32: u32 = 0x8000_0000;
const INF32: u32 = 0x7F80_0000;

pub(super) struct F64;
pub(super) struct F32;
pub(super) struct F16;
pub(super) struct BF16;
pub(super) struct E4M3Fn;
pub(super) struct E5M2;
pub(super) struct E4M3Fnuz;
pub(super) struct E5M2Fnuz;
pub(super) struct E8M0Fnu;

impl Source for F64 {
    const WIDTH: usize = 8;
    const BF16_NAN: u32 = 0xFFFF;
    fn decode(bytes: &[u8]) -> u32 {
        let bits = u64::from_le_bytes(le(bytes));
        let x = f64::from_bits(bits);
        if x.is_nan() {
            // Sign, quiet bit, the payload's top 22 bits.
            ((bits >> 32) as u32 & SIGN32) | 0x7FC0_0000 | ((bits >> 29) as u32 & 0x003F_FFFF)
        } else {
            // Rust rounds to nearest, ties to even, and overflows to infinity.
            (x as f32).to_bits()
        }
    }
}

impl Source for F32 {
    const WIDTH: usize = 4;
    const BF16_NAN: u32 = 0xFFFF;
    fn decode(bytes: &[u8]) -> u32 {
        u32::from_le_bytes(le(bytes))
    }
}

impl Source for F16 {
    const WIDTH: usize = 2;
    fn decode(bytes: &[u8]) -> u32 {
        f16_bits(u32::from(u16::from_le_bytes(le(bytes))))
    }
}

impl Source for BF16 {
    const WIDTH: usize = 2;
    fn decode(bytes: &[u8]) -> u32 {
        u32::from(u16::from_le_bytes(le(bytes))) << 16
    }
}

macro_rules! byte_source {
    ($t:ty, $table:ident) => {
        impl Source for $t {
            const WIDTH: usize = 1;
            fn decode(bytes: &[u8]) -> u32 {
                $table[usize::from(bytes[0])]
            }
        }
    };
}

byte_source!(E4M3Fn, E4M3FN_TABLE);
byte_source!(E5M2, E5M2_TABLE);
byte_source!(E4M3Fnuz, E4M3FNUZ_TABLE);
byte_source!(E5M2Fnuz, E5M2FNUZ_TABLE);
byte_source!(E8M0Fnu, E8M0FNU_TABLE);

/// `m * 2^-k` as `float32` bits, for `m` small enough to be exact.
const fn scaled(m: u32, k: u32) -> u32 {
    if m == 0 {
        return 0;
    }
    let top = 31 - m.leading_zeros();
    ((top + 127 - k) << 23) | ((m << (23 - top)) & 0x007F_FFFF)
}

/// `float16` bits (in the low 16) as `float32` bits.
const fn f16_bits(h: u32) -> u32 {
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1F;
    let man = h & 0x3FF;
    if exp == 0 {
        sign | scaled(man, 24)
    } else if exp == 0x1F {
        if man == 0 { sign | INF32 } else { sign | 0x7FC0_0000 | (man << 13) }
    } else {
        sign | ((exp + 112) << 23) | (man << 13)
    }
}

/// One byte of a `float8` dtype as `float32` bits, by kind: 0 `e4m3fn`, 1 `e5m2`,
/// 2 `e4m3fnuz`, 3 `e5m2fnuz`, 4 `e8m0fnu`.
const fn byte_bits(kind: u8, b: u32) -> u32 {
    let sign = (b & 0x80) << 24;
    match kind {
        0 => {
            let (exp, man) = ((b >> 3) & 0xF, b & 0x7);
            if exp == 0xF && man == 0x7 {
                sign | 0x7FF0_0000
            } else if exp == 0 {
                sign | scaled(man, 9)
            } else {
                sign | ((exp + 120) << 23) | (man << 20)
            }
        }
        1 => f16_bits(b << 8),
        2 | 3 if b == 0x80 => 0x7F80_0001,
        2 => {
            let (exp, man) = ((b >> 3) & 0xF, b & 0x7);
            if exp == 0 { sign | scaled(man, 10) } else { sign | ((exp + 119) << 23) | (man << 20) }
        }
        3 => {
            let (exp, man) = ((b >> 2) & 0x1F, b & 0x3);
            if exp == 0 { sign | scaled(man, 17) } else { sign | ((exp + 111) << 23) | (man << 21) }
        }
        _ => match b {
            0 => 0x0040_0000,
            0xFF => 0x7F80_0001,
            _ => b << 23,
        },
    }
}

const fn table(kind: u8) -> [u32; 256] {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = byte_bits(kind, b as u32);
        b += 1;
    }
    t
}

static E4M3FN_TABLE: [u32; 256] = table(0);
static E5M2_TABLE: [u32; 256] = table(1);
static E4M3FNUZ_TABLE: [u32; 256] = table(2);
static E5M2FNUZ_TABLE: [u32; 256] = table(3);
static E8M0FNU_TABLE: [u32; 256] = table(4);

/// A non-NaN magnitude `a` (`float32` bits, sign clear) rounded to nearest, ties to even, into
/// a dtype of `M` mantissa bits and exponent bias `BIAS`: its code, or `over` past `max`
/// (the largest finite code). Both roundings are computed and one chosen, without branches
/// (data that mixes zeros and normal values would mispredict them).
#[inline(always)]
fn round<const M: u32, const BIAS: u32>(a: u32, max: u32, over: u32) -> u32 {
    // Below the target's smallest normal its steps are 2^(1 - BIAS - M): adding a power of two
    // whose float32 step is that rounds the value onto them (as IEEE addition rounds).
    let magic = f32::from_bits((151 - BIAS - M) << 23);
    let subnormal = (f32::from_bits(a) + magic).to_bits().wrapping_sub(magic.to_bits());
    // Above it, round the float32 mantissa at the target's last bit and rebias the exponent.
    let shift = 23 - M;
    let odd = (a >> shift) & 1;
    let normal = ((a + (1 << (shift - 1)) - 1 + odd) >> shift).wrapping_sub((127 - BIAS) << M);
    // The target's smallest normal, as float32 bits.
    let code = if a < (128 - BIAS) << 23 { subnormal } else { normal };
    if code > max { over } else { code }
}

impl Target for F32 {
    const WIDTH: usize = 4;
    fn encode(f: u32, _: u32) -> u32 {
        f
    }
}

impl Target for F16 {
    const WIDTH: usize = 2;
    fn encode(f: u32, _: u32) -> u32 {
        let sign = (f >> 16) & 0x8000;
        let a = f & !SIGN32;
        let nan = sign | 0x7E00 | ((a >> 13) & 0x3FF);
        if a > INF32 { nan } else { sign | round::<10, 15>(a, 0x7BFF, 0x7C00) }
    }
}

impl Target for BF16 {
    const WIDTH: usize = 2;
    fn encode(f: u32, bf16_nan: u32) -> u32 {
        let a = f & !SIGN32;
        if a > INF32 { bf16_nan } else { ((f >> 16) & 0x8000) | round::<7, 127>(a, 0x7F7F, 0x7F80) }
    }
}

impl Target for E4M3Fn {
    const WIDTH: usize = 1;
    fn encode(f: u32, _: u32) -> u32 {
        let sign = (f >> 24) & 0x80;
        let a = f & !SIGN32;
        // Saturating: past 448 (infinity included) is 448.
        if a > INF32 { sign | 0x7F } else { sign | round::<3, 7>(a, 0x7E, 0x7E) }
    }
}

impl Target for E5M2 {
    const WIDTH: usize = 1;
    fn encode(f: u32, _: u32) -> u32 {
        let sign = (f >> 24) & 0x80;
        let a = f & !SIGN32;
        if a > INF32 { sign | 0x7F } else { sign | round::<2, 15>(a, 0x7B, 0x7C) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<S: Source, T: Target>(bytes: &[u8]) -> u32 {
        T::encode(S::decode(bytes), S::BF16_NAN)
    }

    #[test]
    fn every_float16_round_trips_through_float32() {
        for h in 0..=u16::MAX {
            let back = one::<F32, F16>(&one::<F16, F32>(&h.to_le_bytes()).to_le_bytes());
            // NaNs come back quieted; everything else exactly.
            let expect = if h & 0x7C00 == 0x7C00 && h & 0x3FF != 0 { u32::from(h) | 0x200 } else { u32::from(h) };
            assert_eq!(back, expect, "{h:#06x}");
        }
    }

    #[test]
    fn every_float8_widens_exactly() {
        for b in 0..=255u8 {
            let wide = E4M3FN_TABLE[usize::from(b)];
            if b & 0x7F != 0x7F {
                assert_eq!(one::<F32, E4M3Fn>(&wide.to_le_bytes()), u32::from(b), "{b:#04x}");
            }
            let wide = E5M2_TABLE[usize::from(b)];
            if b & 0x7C != 0x7C {
                assert_eq!(one::<F32, E5M2>(&wide.to_le_bytes()), u32::from(b), "{b:#04x}");
            }
        }
        assert_eq!(f32::from_bits(E8M0FNU_TABLE[127]), 1.0);
        assert_eq!(f32::from_bits(E4M3FNUZ_TABLE[0x7F]), 240.0);
        assert_eq!(f32::from_bits(E5M2FNUZ_TABLE[0x7F]), 57344.0);
    }
}
