//! HDF5 as other producers write it (`tests/fixtures/hdf5/wild`, made with h5py, hdf5storage
//! and netCDF4): a 1024-byte user block, a MATLAB v7.3 file, undefined fill values, huge
//! attributes, enum and bitfield datasets, netCDF-4, filters in PyTables' order; and one broken file per rule these
//! structures add: a user block of no allowed size, a huge object missing from its B-tree or
//! past the end, a huge objects' B-tree of the wrong type, a fill value both undefined and
//! defined, an enum of too many members, a bitfield of part of its bytes, a null dataspace;
//! array datatypes (read as trailing dimensions) and the ones that break their rules (a size
//! that is not the array's, a rank of 0, a dimension of 0); a long double and an array of
//! strings (refused: no tensor dtype holds them).

use tensorfile::formats::hdf5::lookup3;
use tensorfile::{Format, Rule};

use super::Fixtures;
use crate::case::{Family as F, Folder};

/// Where `needle` first occurs in `bytes`.
fn find(bytes: &[u8], needle: &[u8]) -> Result<usize, String> {
    bytes.windows(needle.len()).position(|w| w == needle).ok_or_else(|| format!("no {needle:?} in a fixture"))
}

/// `bytes[at..at + len]`'s lookup3 checksum written after it.
fn reseal(bytes: &mut [u8], at: usize, len: usize) {
    let sum = lookup3(&bytes[at..at + len]);
    bytes[at + len..at + len + 4].copy_from_slice(&sum.to_le_bytes());
}

/// The leaf of the first huge objects' B-tree (type 1) of `bytes`: where it is. Its one record
/// (address, length, ID: 8 bytes each) follows the signature, version and type.
fn huge_leaf(bytes: &[u8]) -> Result<usize, String> {
    find(bytes, b"BTLF\x00\x01")
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("hdf5", Format::Hdf5, "h5");
    for (stem, path, what) in [
        ("h5py-userblock-1024", "hdf5/wild/userblock_1024.h5", "the superblock after a 1024-byte user block (h5py)"),
        ("matlab-v73", "hdf5/wild/matlab_v73.mat", "a MATLAB v7.3 MAT-file: a 512-byte user block (hdf5storage)"),
        ("undefined-fill", "hdf5/wild/undefined_fill.h5", "fill value messages of size -1: undefined (h5py)"),
        ("huge-attributes", "hdf5/wild/huge_attribute.h5", "attributes stored as huge fractal-heap objects (h5py)"),
        ("enum-bitfield", "hdf5/wild/enum_bitfield.h5", "enum datasets of int16 and uint8, bitfields (h5py)"),
        ("netcdf4", "hdf5/wild/netcdf4.nc", "a netCDF-4 file: dimension scales, a deflated variable (netCDF4)"),
        ("array-datatypes", "hdf5/wild/array_dtype.h5", "array datatypes of floats, big-endian ints, complex (h5py)"),
        (
            "pytables-filter-order",
            "hdf5/wild/pytables_filters.h5",
            "fletcher32 before shuffle and deflate: the checksum deflated with the data (PyTables' order, h5py)",
        ),
    ] {
        f.valid(stem, F::Valid, what, fx.read(path)?);
    }

    // 256 bytes of the user block taken out: the signature at 768.
    let b = fx.read("hdf5/wild/userblock_1024.h5")?;
    let moved = [&b[..768], &b[1024..]].concat();
    f.open("user-block-768", F::BadMagic, Rule::BadMagic, "the signature at 768, not 512·2^k", moved);

    let huge = fx.read("hdf5/wild/huge_attribute.h5")?;
    let mut b = huge.clone();
    let leaf = huge_leaf(&b)?;
    b[leaf + 6 + 16..leaf + 6 + 24].copy_from_slice(&99u64.to_le_bytes());
    reseal(&mut b, leaf, 6 + 24);
    f.verify(
        "huge-object-not-in-btree",
        F::OutOfRangeIndex,
        Rule::OutOfBounds,
        "a huge attribute's ID not in its B-tree",
        b,
    );
    let mut b = huge.clone();
    let leaf = huge_leaf(&b)?;
    b[leaf + 6..leaf + 6 + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    reseal(&mut b, leaf, 6 + 24);
    f.verify("huge-object-past-end", F::PastEnd, Rule::OutOfBounds, "a huge attribute at address 2^40", b);
    let mut b = huge;
    let header = find(&b, b"BTHD\x00\x01")?;
    b[header + 5] = 2;
    // Signature to total record count: 34 bytes with offsets and lengths of 8.
    reseal(&mut b, header, 34);
    let leaf = huge_leaf(&b)?;
    b[leaf + 5] = 2;
    reseal(&mut b, leaf, 6 + 24);
    f.verify(
        "huge-btree-type",
        F::BadField,
        Rule::BadField,
        "a huge objects' B-tree of type 2 in a heap without filters",
        b,
    );

    // Fill value message version 3, flags "undefined" and "defined" both (object header v1:
    // no checksum).
    let mut b = fx.read("hdf5/wild/undefined_fill.h5")?;
    let at = find(&b, &[2, 3, 2, 1, 0xff, 0xff, 0xff, 0xff])?;
    b[at..at + 8].copy_from_slice(&[3, 0x30, 0, 0, 0, 0, 0, 0]);
    f.verify("fill-undefined-and-defined", F::BadField, Rule::BadField, "a fill value both undefined and defined", b);

    let enums = fx.read("hdf5/wild/enum_bitfield.h5")?;
    let mut b = enums.clone();
    // The int16 enum of 3 members: class 8 version 1, then its member count.
    let at = find(&b, &[0x18, 3, 0, 0, 2, 0, 0, 0])?;
    b[at + 1..at + 3].copy_from_slice(&0xffffu16.to_le_bytes());
    f.verify("enum-too-many-members", F::Overflow, Rule::TooManyEntries, "an enum of 65,535 members", b);
    let mut b = enums;
    // The 2-byte bitfield: class 4 version 1, size 2, offset 0, precision 16.
    let at = find(&b, &[0x14, 0, 0, 0, 2, 0, 0, 0, 0, 0, 16, 0])?;
    b[at + 10] = 12;
    f.verify("bitfield-partial", F::BadField, Rule::UnknownDType, "a bitfield of 12 of its 16 bits", b);

    let arrays = fx.read("hdf5/wild/array_dtype.h5")?;
    // `vec3`'s datatype: class 10 version 2, size 12, rank 1, 3 reserved bytes, dimension 3
    // (object header v1: no checksum).
    let at = find(&arrays, &[0x2a, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0])?;
    let mut b = arrays.clone();
    b[at] = 0x1a;
    f.valid("array-datatype-v1", F::Valid, "an array datatype message of version 1, as HDF5 1.4 wrote it", b);
    let mut b = arrays.clone();
    b[at + 4] = 16;
    f.verify("array-size-mismatch", F::SizeMismatch, Rule::SizeMismatch, "an array of 3 floats of 16 bytes", b);
    let mut b = arrays.clone();
    b[at + 8] = 0;
    f.verify("array-rank-0", F::BadField, Rule::BadField, "an array datatype of rank 0", b);
    let mut b = arrays;
    b[at + 12] = 0;
    f.verify("array-dimension-0", F::BadField, Rule::BadField, "an array datatype of dimension 0", b);
    let b = fx.read("hdf5/wild/unrepresentable.h5")?;
    f.verify(
        "long-double-and-string-array",
        F::BadField,
        Rule::UnknownDType,
        "an 80-bit long double and an array of strings beside an int32 dataset (h5py)",
        b,
    );

    let b = fx.read("hdf5/wild/null_dataspace.h5")?;
    f.verify("null-dataspace", F::BadField, Rule::Unsupported, "a dataset of null dataspace (h5py.Empty)", b);
    Ok(f)
}
