//! `.npz`: a zip of `.npy` members. Built here member by member (zip attacks live in `pt.rs`;
//! these are the attacks on the members), plus fixtures made by numpy.

use tensorfile::{Format, Rule};

use super::Fixtures;
use super::npy::{dict, npy};
use crate::build::zip::{Entry, build};
use crate::case::{Family as F, Folder};

fn npz(entries: &[Entry]) -> Vec<u8> {
    build(entries).bytes
}

fn f32s(n: usize) -> Vec<u8> {
    (0..n).flat_map(|i| (i as f32 * 0.25).to_le_bytes()).collect()
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("npz", Format::Npz, "npz");
    let a = npy(1, &dict("<f4", false, "(2, 3)"), &f32s(6));
    let b = npy(1, &dict(">i8", true, "(2, 2)"), &[1; 32]);
    f.valid("stored", F::Valid, "two stored members (one big-endian, Fortran order)", {
        npz(&[Entry::stored("a.npy", &a), Entry::stored("b.npy", &b)])
    });
    f.valid("deflated", F::Valid, "two deflated members, as savez_compressed writes them", {
        npz(&[Entry::deflated("a.npy", &a), Entry::deflated("nested/b.npy", &b)])
    });
    for (stem, path) in [("numpy-savez", "numpy/savez.npz"), ("numpy-savez-compressed", "numpy/savez_compressed.npz")] {
        f.valid(stem, F::Valid, &format!("{path} (fixture made by numpy)"), fx.read(path)?);
    }

    f.verify("object-member", F::BadField, Rule::UnknownDType, "an object array among numeric ones", {
        let o = npy(1, &dict("|O", false, "(2,)"), b"\x80\x04N.");
        npz(&[Entry::stored("a.npy", &a), Entry::stored("o.npy", &o)])
    });
    f.verify("member-data-short", F::Truncation, Rule::Truncated, "a member with 20 of its 24 data bytes", {
        npz(&[Entry::stored("a.npy", &a[..a.len() - 4])])
    });
    f.verify("member-bad-dict", F::BadField, Rule::BadField, "a member whose header is not a dict", {
        npz(&[Entry::stored("a.npy", &npy(1, "('descr', '<f4')", &[]))])
    });
    f.verify("member-bad-version", F::BadMagic, Rule::BadMagic, "a member of .npy format 7.0", {
        let mut m = a.clone();
        m[6] = 7;
        npz(&[Entry::stored("a.npy", &m)])
    });
    f.verify("member-shape-overflow", F::Overflow, Rule::ShapeOverflow, "a member of 2^64 elements", {
        npz(&[Entry::stored("a.npy", &npy(1, &dict("<f4", false, "(4294967296, 4294967296)"), &[]))])
    });
    f.verify("member-header-past-end", F::PastEnd, Rule::Truncated, "a header length past the member's end", {
        let mut m = a.clone();
        m[8..10].copy_from_slice(&1000u16.to_le_bytes());
        npz(&[Entry::stored("a.npy", &m)])
    });
    f.verify(
        "names-collide",
        F::DuplicateName,
        Rule::DuplicateName,
        "members a and a.npy: one name once .npy is dropped",
        npz(&[Entry::stored("a.npy", &a), Entry::stored("a", &a)]),
    );
    f.verify("member-crc", F::Checksum, Rule::ChecksumMismatch, "a stored member whose CRC-32 does not match", {
        let mut e = Entry::stored("a.npy", &a);
        e.crc ^= 1;
        npz(&[e])
    });
    f.verify("member-bad-deflate", F::BadCompressedData, Rule::BadCompressedData, "a deflated member of garbage", {
        let mut e = Entry::deflated("a.npy", &a);
        e.data = vec![0xff; e.data.len()];
        npz(&[e])
    });
    Ok(f)
}
