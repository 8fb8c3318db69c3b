//! The rules every part obeys whatever its layout (spec §2.4, §3.6 rules 3 and 4): a blob at
//! a multiple of 4096 from 4096 on, inside the data region of the file it is in (a shard's
//! from the root's table alone), blobs of one file identical or disjoint (the manifest blob
//! among this file's), a shard named by the table, and a registered logical type over its
//! own storage type.

use super::manifest::{Manifest, in_part};
use super::types::Element;
use super::{ALIGNMENT, FOOTER_LEN};
use crate::error::{Error, Result, Rule};

/// Check every part of `m`, in a file whose data region ends at `data_end`, with its
/// manifest blob at `manifest` (offset and length).
pub fn check(m: &Manifest, data_end: u64, manifest: (u64, u64)) -> Result<()> {
    // (file: 0 for this one, k + 1 for shard k; offset; length; object, or MAX for the manifest)
    let mut blobs: Vec<(usize, u64, u64, usize)> = vec![(0, manifest.0, manifest.1, usize::MAX)];
    for (k, o) in m.objects.iter().enumerate() {
        for p in &o.parts {
            let place = |e: Error| in_part(e, &p.name).for_tensor(&o.name);
            Element::of(p.dtype, p.logical.as_deref()).map_err(place)?;
            if p.offset % ALIGNMENT != 0 || p.offset < ALIGNMENT {
                return Err(place(Error::invalid(
                    Rule::Misaligned,
                    format!("blob at {}: not a multiple of {ALIGNMENT} from {ALIGNMENT} on", p.offset),
                )));
            }
            let (file, end) = match &p.shard {
                None => (0, data_end),
                Some(name) => {
                    let Some(s) = m.shards.iter().position(|s| s.name == *name) else {
                        return Err(place(Error::invalid(
                            Rule::ShardMismatch,
                            format!("shard {name:?} is not in the manifest's shard table"),
                        )));
                    };
                    // At least a footer long: checked with the table.
                    (s + 1, m.shards[s].size - FOOTER_LEN)
                }
            };
            if p.offset.checked_add(p.length).is_none_or(|e| e > end) {
                let file = p.shard.as_ref().map_or("this file".to_string(), |s| format!("shard {s:?}"));
                return Err(place(Error::invalid(
                    Rule::OutOfBounds,
                    format!("blob at {} (+{}) runs past the end of {file}'s data at {end}", p.offset, p.length),
                )));
            }
            // Empty blobs share no bytes with anything.
            if p.length > 0 {
                blobs.push((file, p.offset, p.length, k));
            }
        }
    }
    blobs.sort_unstable_by_key(|&(file, offset, len, _)| (file, offset, len));
    blobs.dedup_by_key(|&mut (file, offset, len, _)| (file, offset, len));
    for w in blobs.windows(2) {
        let ((fa, a, alen, oa), (fb, b, _, ob)) = (w[0], w[1]);
        if fa == fb && a + alen > b {
            let who = |k: usize| m.objects.get(k).map_or("the manifest".to_string(), |o| format!("{:?}", o.name));
            let e = Error::invalid(
                Rule::Overlap,
                format!("the blobs of {} at {a} (+{alen}) and of {} at {b} partly overlap", who(oa), who(ob)),
            );
            return Err(match m.objects.get(ob) {
                Some(o) => e.for_tensor(&o.name),
                None => e,
            });
        }
    }
    Ok(())
}
