//! How long a GGUF file should be, read leniently for `diagnose`: its key/values and tensor
//! infos walked as far as the sample goes.

use crate::error::Need;
use crate::formats::extent::le;
use crate::model::quant::GgmlType;
use crate::source::Sample;

/// A walk over the first bytes of a GGUF file; `None` from a read means the bytes ran out.
struct Walk<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
}

impl Walk<'_> {
    fn take(&mut self, n: u64) -> Option<&[u8]> {
        let end = self.pos.checked_add(usize::try_from(n).ok()?)?;
        let out = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn uint(&mut self, n: usize) -> Option<u64> {
        let big = self.big;
        let bytes = self.take(n as u64)?;
        let order: Box<dyn Iterator<Item = &u8>> =
            if big { Box::new(bytes.iter()) } else { Box::new(bytes.iter().rev()) };
        Some(order.fold(0u64, |v, &x| (v << 8) | u64::from(x)))
    }

    fn string(&mut self) -> Option<&[u8]> {
        let n = self.uint(8)?;
        self.take(n)
    }

    /// Skip a value of GGUF type `t` (arrays nest at most `depth` deep); `Err` for a type
    /// GGUF does not define.
    fn value(&mut self, t: u64, depth: u32) -> Result<Option<()>, ()> {
        let fixed = match t {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 => return Ok(self.string().map(drop)),
            9 if depth > 0 => {
                let (Some(inner), Some(count)) = (self.uint(4), self.uint(8)) else { return Ok(None) };
                for _ in 0..count {
                    match self.value(inner, depth - 1)? {
                        Some(()) => {}
                        None => return Ok(None),
                    }
                }
                return Ok(Some(()));
            }
            _ => return Err(()),
        };
        Ok(self.take(fixed).map(drop))
    }
}

/// Magic, version, counts, key/values, tensor infos; then data aligned to
/// `general.alignment` (32 unless stated), each tensor at its offset with its blocks' bytes.
pub(super) fn measure(s: &Sample) -> Option<Need> {
    let h = s.head();
    let version = le(h, 4, 4);
    let big = version.is_some_and(|v| v & 0xFFFF == 0 && v != 0);
    let mut w = Walk { b: h, pos: 4, big };
    let ran_out = || s.whole().then_some(Need::InHeader);
    let Some((_, tensors, kvs)) = w.uint(4).zip(w.uint(8)).zip(w.uint(8)).map(|((v, t), k)| (v, t, k)) else {
        return ran_out();
    };
    let mut alignment = 32u64;
    for _ in 0..kvs {
        let Some(key) = w.string().map(<[u8]>::to_vec) else { return ran_out() };
        let Some(t) = w.uint(4) else { return ran_out() };
        let at = w.pos;
        match w.value(t, 4) {
            Err(()) => return None,
            Ok(None) => return ran_out(),
            Ok(Some(())) if key == b"general.alignment" && t == 4 => {
                alignment = Walk { b: h, pos: at, big }.uint(4)?;
            }
            Ok(Some(())) => {}
        }
    }
    let mut ends = Vec::new();
    for _ in 0..tensors {
        let (Some(()), Some(rank)) = (w.string().map(drop), w.uint(4)) else { return ran_out() };
        if rank > crate::limits::MAX_RANK as u64 {
            return None;
        }
        let mut numel = 1u64;
        for _ in 0..rank {
            let Some(d) = w.uint(8) else { return ran_out() };
            numel = numel.checked_mul(d)?;
        }
        let (Some(t), Some(offset)) = (w.uint(4), w.uint(8)) else { return ran_out() };
        let t = GgmlType::from_id(u32::try_from(t).ok()?)?;
        let blocks = numel.checked_div(t.block_elements())?;
        ends.push(offset.checked_add(blocks.checked_mul(t.block_bytes())?)?);
    }
    let index_end = w.pos as u64;
    if alignment == 0 {
        return None;
    }
    let data = index_end.checked_next_multiple_of(alignment)?;
    let last = ends.into_iter().max().map_or(Some(index_end), |e| data.checked_add(e))?;
    Some(Need::Data(last))
}
