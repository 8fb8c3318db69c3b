//! Casting floating-point elements from one dtype to another, bit for bit as torch's
//! `Tensor.to()` casts them on the CPU (see the kernels' notes for NaNs, overflow and the
//! `float64` path): whole buffers ([`cast`]) or a tensor's bytes arriving in pieces that may
//! split an element ([`Caster`], [`cast_chunks`]). Bytes are little-endian in and out.

mod kernels;

use rayon::prelude::*;

use crate::error::{Error, Result, Rule};
use crate::model::{Chunks, DType};
use crate::source::{Bytes, FreshBuffer};

use kernels::{BF16, E4M3Fn, E4M3Fnuz, E5M2, E5M2Fnuz, E8M0Fnu, F16, F32, F64, Source, Target};

/// The dtypes elements can be cast to.
pub const TARGETS: [DType; 5] =
    [DType::Float32, DType::Float16, DType::BFloat16, DType::Float8E4M3Fn, DType::Float8E5M2];

/// The dtypes elements can be cast from: the real floating dtypes.
pub const SOURCES: [DType; 9] = [
    DType::Float64,
    DType::Float32,
    DType::Float16,
    DType::BFloat16,
    DType::Float8E4M3Fn,
    DType::Float8E5M2,
    DType::Float8E4M3Fnuz,
    DType::Float8E5M2Fnuz,
    DType::Float8E8M0Fnu,
];

/// Elements per task when a large buffer is cast on several threads.
const PARALLEL_BLOCK: usize = 1 << 16;

/// Whether elements of `dtype` can be cast (to any of [`TARGETS`]).
pub fn can_cast_from(dtype: DType) -> bool {
    SOURCES.contains(&dtype)
}

/// Whether elements can be cast to `dtype`.
pub fn can_cast_to(dtype: DType) -> bool {
    TARGETS.contains(&dtype)
}

/// The cast target called `name` ([`DType::name`], or the short spellings llama.cpp's tools
/// use: `f32`, `f16`, `bf16`), or a usage error naming the targets.
pub fn target(name: &str) -> Result<DType> {
    let short = match name {
        "f32" => Some(DType::Float32),
        "f16" => Some(DType::Float16),
        "bf16" => Some(DType::BFloat16),
        _ => None,
    };
    short.or_else(|| DType::from_name(name)).filter(|d| can_cast_to(*d)).ok_or_else(|| {
        let names: Vec<&str> = TARGETS.iter().map(|d| d.name()).collect();
        Error::usage(format!("cannot cast to {name:?}: the target dtype is one of {}", names.join(", ")))
    })
}

/// The width in bytes of an element of `from` and of `to`, or an error naming the dtype that
/// cannot be cast from or to.
pub(crate) fn widths(from: DType, to: DType) -> Result<(usize, usize)> {
    if !can_cast_from(from) {
        return Err(Error::unsupported(format!("{from} elements cannot be cast")));
    }
    if !can_cast_to(to) {
        let names: Vec<&str> = TARGETS.iter().map(|d| d.name()).collect();
        return Err(Error::unsupported(format!("cannot cast to {to}: only to {}", names.join(", "))));
    }
    let width = |d: DType| d.size().map_or(1, |s| s as usize);
    Ok((width(from), width(to)))
}

/// `bytes`, elements of `from`, cast to `to`. Errors when either dtype cannot be cast or the
/// bytes are not a whole number of elements.
pub fn cast(bytes: &[u8], from: DType, to: DType) -> Result<Vec<u8>> {
    cast_len(bytes.len(), from, to)?;
    let mut out = Vec::new();
    cast_onto(bytes, from, to, &mut out)?;
    Ok(out)
}

/// [`cast`] into fresh memory ([`FreshBuffer`]: a large output's pages made at once, not
/// faulted in one by one as the cast writes them), as bytes owned by the result alone.
pub(crate) fn cast_fresh(bytes: &[u8], from: DType, to: DType) -> Result<Bytes> {
    let mut out = FreshBuffer::zeroed(cast_len(bytes.len(), from, to)?, "cast elements")?;
    cast_into(bytes, from, to, out.as_mut_slice())?;
    Ok(out.into_bytes())
}

/// How many bytes `len` bytes of `from` make cast to `to`: an error when either dtype cannot be
/// cast, the bytes are not a whole number of elements or the result does not fit in memory.
fn cast_len(len: usize, from: DType, to: DType) -> Result<usize> {
    let (w_in, w_out) = widths(from, to)?;
    if len % w_in != 0 {
        return Err(Error::invalid(Rule::SizeMismatch, format!("{len} bytes are no whole number of {from} elements")));
    }
    let count = len / w_in;
    count.checked_mul(w_out).ok_or_else(|| Error::unsupported(format!("{count} elements of {to} do not fit in memory")))
}

/// Append the cast of `src` (whole elements of `from`) to `out`.
fn cast_onto(src: &[u8], from: DType, to: DType, out: &mut Vec<u8>) -> Result<()> {
    let (w_in, w_out) = widths(from, to)?;
    let count = src.len() / w_in;
    let start = out.len();
    let len = count
        .checked_mul(w_out)
        .ok_or_else(|| Error::unsupported(format!("{count} elements of {to} do not fit in memory")))?;
    out.try_reserve_exact(len)
        .map_err(|_| Error::unsupported(format!("cannot allocate {len} bytes to cast {count} elements into")))?;
    out.resize(start + len, 0);
    cast_into(&src[..count * w_in], from, to, &mut out[start..])
}

/// `bytes`, elements of `from`, cast to `to` into `out`, which holds as many elements of `to`
/// (an error otherwise, or when either dtype cannot be cast).
pub fn cast_into(bytes: &[u8], from: DType, to: DType, out: &mut [u8]) -> Result<()> {
    let (w_in, w_out) = widths(from, to)?;
    let count = bytes.len() / w_in;
    if bytes.len() % w_in != 0 || out.len() / w_out != count || out.len() % w_out != 0 {
        return Err(Error::usage(format!(
            "{} bytes of {from} cast into {} bytes of {to}: not as many whole elements",
            bytes.len(),
            out.len()
        )));
    }
    if from == to {
        out.copy_from_slice(bytes);
        return Ok(());
    }
    let (src, dst) = (bytes, out);
    match from {
        DType::Float64 => to_target::<F64>(to, src, dst),
        DType::Float32 => to_target::<F32>(to, src, dst),
        DType::Float16 => to_target::<F16>(to, src, dst),
        DType::BFloat16 => to_target::<BF16>(to, src, dst),
        DType::Float8E4M3Fn => to_target::<E4M3Fn>(to, src, dst),
        DType::Float8E5M2 => to_target::<E5M2>(to, src, dst),
        DType::Float8E4M3Fnuz => to_target::<E4M3Fnuz>(to, src, dst),
        DType::Float8E5M2Fnuz => to_target::<E5M2Fnuz>(to, src, dst),
        _ => to_target::<E8M0Fnu>(to, src, dst),
    }
    Ok(())
}

fn to_target<S: Source>(to: DType, src: &[u8], dst: &mut [u8]) {
    match to {
        DType::Float32 => parallel::<S, F32>(src, dst),
        DType::Float16 => parallel::<S, F16>(src, dst),
        DType::BFloat16 => parallel::<S, BF16>(src, dst),
        DType::Float8E4M3Fn => parallel::<S, E4M3Fn>(src, dst),
        _ => parallel::<S, E5M2>(src, dst),
    }
}

/// The kernel over `src`, in blocks on rayon's threads when there are several blocks; for a
/// one-byte source, a lookup in the table of its 256 values' casts.
fn parallel<S: Source, T: Target>(src: &[u8], dst: &mut [u8]) {
    let table = (S::WIDTH == 1).then(kernels::byte_table::<S, T>);
    let run = |s: &[u8], d: &mut [u8]| match &table {
        Some(table) => kernels::run_table::<T>(table, s, d),
        None => kernels::run::<S, T>(s, d),
    };
    if src.len() / S::WIDTH <= PARALLEL_BLOCK {
        return run(src, dst);
    }
    src.par_chunks(PARALLEL_BLOCK * S::WIDTH)
        .zip(dst.par_chunks_mut(PARALLEL_BLOCK * T::WIDTH))
        .for_each(|(s, d)| run(s, d));
}

/// Casts a tensor's bytes handed over in pieces that may end inside an element: the bytes of a
/// split element wait for the rest.
#[derive(Debug)]
pub struct Caster {
    from: DType,
    to: DType,
    width: usize,
    carry: Vec<u8>,
}

impl Caster {
    /// A caster from `from` to `to`; an error when either cannot be cast.
    pub fn new(from: DType, to: DType) -> Result<Self> {
        let (width, _) = widths(from, to)?;
        Ok(Caster { from, to, width, carry: Vec::with_capacity(width) })
    }

    /// The cast of the whole elements `piece` completes (with what earlier pieces left).
    pub fn push(&mut self, piece: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut piece = piece;
        if !self.carry.is_empty() {
            let take = (self.width - self.carry.len()).min(piece.len());
            self.carry.extend_from_slice(&piece[..take]);
            piece = &piece[take..];
            if self.carry.len() < self.width {
                return Ok(out);
            }
            cast_onto(&self.carry, self.from, self.to, &mut out)?;
            self.carry.clear();
        }
        let whole = piece.len() - piece.len() % self.width;
        cast_onto(&piece[..whole], self.from, self.to, &mut out)?;
        self.carry.extend_from_slice(&piece[whole..]);
        Ok(out)
    }

    /// The end of the pieces: an error when they stopped inside an element.
    pub fn finish(self) -> Result<()> {
        if self.carry.is_empty() {
            return Ok(());
        }
        Err(Error::invalid(
            Rule::SizeMismatch,
            format!("the data ends {} bytes into a {} element", self.carry.len(), self.from),
        ))
    }
}

/// Pieces of a dense tensor of `from`, cast to `to` as they come (see [`Caster`]); the pieces
/// end with an error when they stop inside an element.
pub fn cast_chunks<'a>(mut chunks: Chunks<'a>, from: DType, to: DType) -> Result<Chunks<'a>> {
    let mut caster = Some(Caster::new(from, to)?);
    Ok(Box::new(std::iter::from_fn(move || {
        loop {
            let c = caster.as_mut()?;
            match chunks.next() {
                Some(Ok(piece)) => match c.push(&piece) {
                    Ok(out) if out.is_empty() => continue,
                    Ok(out) => return Some(Ok(Bytes::from_vec(out))),
                    Err(e) => return Some(Err(e)),
                },
                Some(Err(e)) => return Some(Err(e)),
                None => return caster.take().and_then(|c| c.finish().err()).map(Err),
            }
        }
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn pieces_that_split_elements_cast_as_the_whole() {
        let values: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) * 0.37).collect();
        let bytes = f32s(&values);
        for to in TARGETS {
            let whole = cast(&bytes, DType::Float32, to).unwrap();
            for step in [1, 3, 5, 4096] {
                let pieces: Vec<Result<Bytes>> = bytes.chunks(step).map(|c| Ok(Bytes::from_vec(c.to_vec()))).collect();
                let cast = cast_chunks(Box::new(pieces.into_iter()), DType::Float32, to).unwrap();
                let joined: Vec<u8> = cast.map(|p| p.unwrap().to_vec()).collect::<Vec<_>>().concat();
                assert_eq!(joined, whole, "{to}, pieces of {step}");
            }
        }
    }

    #[test]
    fn a_split_element_at_the_end_is_an_error() {
        let pieces: Vec<Result<Bytes>> = vec![Ok(Bytes::from_vec(vec![0; 6]))];
        let out: Vec<Result<Bytes>> =
            cast_chunks(Box::new(pieces.into_iter()), DType::Float32, DType::BFloat16).unwrap().collect();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].as_ref().unwrap_err().rule(), Some(Rule::SizeMismatch));
        assert_eq!(cast(&[0; 6], DType::Float32, DType::Float16).unwrap_err().rule(), Some(Rule::SizeMismatch));
    }

    #[test]
    fn only_floating_dtypes_cast_and_only_to_the_targets() {
        assert!(cast(&[0; 4], DType::Int32, DType::Float16).is_err());
        assert!(cast(&[0; 4], DType::Float32, DType::Float64).is_err());
        assert!(cast(&[0; 4], DType::Float32, DType::Float8E4M3Fnuz).is_err());
        // The same dtype: the bytes as they are, NaN payloads included.
        let nan = 0x7F80_0001u32.to_le_bytes();
        assert_eq!(cast(&nan, DType::Float32, DType::Float32).unwrap(), nan);
        let mut out = [0; 3];
        assert!(cast_into(&[0; 8], DType::Float32, DType::BFloat16, &mut out).is_err());
        assert!(cast_into(&[0; 8], DType::Float32, DType::BFloat16, &mut out[..2]).is_err());
        cast_into(&[0, 0, 0x80, 0x3F], DType::Float32, DType::BFloat16, &mut out[..2]).unwrap();
        assert_eq!(out, [0x80, 0x3F, 0]);
    }

    #[test]
    fn large_buffers_cast_on_threads_as_on_one() {
        let bytes: Vec<u8> =
            (0..(3 * PARALLEL_BLOCK as u32 + 7)).flat_map(|i| i.wrapping_mul(2654435761).to_le_bytes()).collect();
        let threaded = cast(&bytes, DType::Float32, DType::BFloat16).unwrap();
        let mut single = vec![0; bytes.len() / 2];
        kernels::run::<F32, BF16>(&bytes, &mut single);
        assert_eq!(threaded, single);
    }
}
