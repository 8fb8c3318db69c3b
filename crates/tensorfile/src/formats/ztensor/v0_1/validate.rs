//! Structural rules of a `.zt` file that involve several entries at once.

use std::collections::HashSet;

use super::{ALIGNMENT, MAGIC};
use crate::error::{Error, Result, Rule};

/// Where one entry's stored bytes are.
pub struct Placement<'a> {
    pub name: &'a str,
    pub offset: u64,
    pub size: u64,
}

/// Check that every blob is aligned, lies between the magic and the index, does not overlap
/// another blob, and that no two entries share a name.
pub fn check_placements(placements: &[Placement<'_>], index_start: u64) -> Result<()> {
    let mut names = HashSet::with_capacity(placements.len());
    for p in placements {
        let fail = |rule, msg: String| Err(Error::invalid(rule, msg).for_tensor(p.name));
        if !names.insert(p.name) {
            return fail(Rule::DuplicateName, format!("name {:?} is used by two entries", p.name));
        }
        if p.offset % ALIGNMENT != 0 {
            return fail(Rule::Misaligned, format!("offset {} is not a multiple of {ALIGNMENT}", p.offset));
        }
        if p.offset < MAGIC.len() as u64 {
            return fail(Rule::OutOfBounds, format!("offset {} lies inside the magic number", p.offset));
        }
        let end = p.offset.checked_add(p.size);
        if end.is_none_or(|e| e > index_start) {
            return fail(
                Rule::OutOfBounds,
                format!(
                    "bytes {}..{} run past the start of the index at {index_start}",
                    p.offset,
                    end.map_or("overflow".to_string(), |e| e.to_string())
                ),
            );
        }
    }
    // Zero-size blobs occupy no bytes and may share an offset with the next blob (the
    // reference writes them that way).
    let mut spans: Vec<(u64, u64, &str)> =
        placements.iter().filter(|p| p.size > 0).map(|p| (p.offset, p.offset + p.size, p.name)).collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let ((_, end_a, a), (start_b, _, b)) = (pair[0], pair[1]);
        if start_b < end_a {
            return Err(Error::invalid(
                Rule::Overlap,
                format!("bytes of {a:?} and {b:?} overlap (at offset {start_b})"),
            )
            .for_tensor(b));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, offset: u64, size: u64) -> Placement<'_> {
        Placement { name, offset, size }
    }

    fn rule(ps: &[Placement<'_>]) -> Rule {
        check_placements(ps, 1000).unwrap_err().rule().unwrap()
    }

    #[test]
    fn rules() {
        assert!(check_placements(&[p("a", 64, 10), p("b", 128, 0), p("c", 128, 64)], 1000).is_ok());
        assert_eq!(rule(&[p("a", 64, 10), p("a", 128, 1)]), Rule::DuplicateName);
        assert_eq!(rule(&[p("a", 65, 10)]), Rule::Misaligned);
        assert_eq!(rule(&[p("a", 0, 10)]), Rule::OutOfBounds);
        assert_eq!(rule(&[p("a", 960, 50)]), Rule::OutOfBounds);
        assert_eq!(rule(&[p("a", 64, u64::MAX)]), Rule::OutOfBounds);
        assert_eq!(rule(&[p("a", 64, 100), p("b", 128, 10)]), Rule::Overlap);
    }
}
