//! Writing zTensor 2 files in canonical form (spec §6.3), streaming: the magic, each part's
//! bytes as they arrive at the next multiple of 64 KiB (zero padding, the first at 64 KiB),
//! then the manifest at the next multiple of 64 KiB and the 40-byte footer.
//!
//! Every part carries its XXH3-64 digest, computed as it is written. A part whose bytes equal
//! those of a part already written shares its blob: candidates are found by length and
//! digest, and confirmed by reading the earlier blob back, since a digest alone could alias
//! two different tensors. Parts are placed object by object in the order the plan gives,
//! each object's parts in name order: a plan in name order ([`write_order`]) gives the
//! canonical file, byte for byte the same for the same tensors. Memory holds one tensor and
//! the manifest.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};

use twox_hash::XxHash3_64;

use super::canonical::{self, Cbor, MAGIC, MAX_MANIFEST};
use super::describe::{ObjectPlan, describe};
use crate::checked;
use crate::error::{Error, Result};
use crate::formats::{FormatWriter, Output, WriteOptions, check_data};
use crate::model::{Layout, SparseFormat, TensorData, TensorInfo};
use crate::source::Bytes;

/// The order canonical form stores a plan in: by name, bytewise.
pub(crate) fn write_order(plan: &[TensorInfo]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by(|&a, &b| plan[a].name().cmp(plan[b].name()));
    order
}

/// A streaming zTensor 2 writer for the tensors of a plan, in its order.
pub(crate) struct Zt2Writer<'w> {
    out: Box<dyn Output + 'w>,
    /// Bytes written so far: the end of the file as it stands.
    pos: u64,
    plan: Vec<TensorInfo>,
    objects: Vec<ObjectPlan>,
    /// Each written object's manifest entry, in plan order.
    written: Vec<Cbor>,
    /// Blobs written, by (length, digest): their offsets.
    blobs: HashMap<(u64, u64), Vec<u64>>,
    attributes: Option<Cbor>,
}

/// The zTensor 2 writer for `plan`; errors naming the first tensor it cannot hold.
pub(crate) fn writer<'w>(
    out: Box<dyn Output + 'w>,
    plan: &[TensorInfo],
    options: &WriteOptions,
) -> Result<Box<dyn FormatWriter + 'w>> {
    Ok(Box::new(Zt2Writer::new(out, plan, options)?))
}

impl<'w> Zt2Writer<'w> {
    fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], options: &WriteOptions) -> Result<Self> {
        let objects = plan
            .iter()
            .map(|info| describe(info).map_err(|e| e.for_tensor(info.name())))
            .collect::<Result<Vec<_>>>()?;
        let mut names: Vec<&str> = plan.iter().map(TensorInfo::name).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::usage(format!("two tensors named {:?}", w[0])));
        }
        let mut attributes = Vec::with_capacity(options.metadata.len());
        for (key, value) in &options.metadata {
            canonical::check_name("file attribute key", key)?;
            attributes.push((key.clone(), Cbor::from_meta(value)?));
        }
        let attributes = (!attributes.is_empty()).then(|| Cbor::map(attributes));
        if let Some(a) = &attributes {
            // Duplicate keys and depth are found now rather than after the data. The file's
            // attributes sit one level below the manifest's root.
            Cbor::Array(vec![a.clone()]).encode("the file metadata")?;
        }
        out.write_all(MAGIC)?;
        Ok(Zt2Writer {
            out,
            pos: MAGIC.len() as u64,
            plan: plan.to_vec(),
            objects,
            written: Vec::with_capacity(plan.len()),
            blobs: HashMap::new(),
            attributes,
        })
    }

    /// Zeros up to `to`.
    fn pad_to(&mut self, to: u64) -> Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        while self.pos < to {
            let n = (to - self.pos).min(ZEROS.len() as u64) as usize;
            self.out.write_all(&ZEROS[..n])?;
            self.pos += n as u64;
        }
        Ok(())
    }

    /// Store `bytes` as a blob, or find the blob already holding the same bytes: its offset.
    fn blob(&mut self, bytes: &Bytes, digest: u64) -> Result<u64> {
        let key = (bytes.len() as u64, digest);
        let candidates = self.blobs.get(&key).cloned().unwrap_or_default();
        for offset in candidates {
            if self.written_equals(offset, bytes)? {
                return Ok(offset);
            }
        }
        let offset = canonical::align_up(self.pos)?;
        self.pad_to(offset)?;
        self.out.write_bytes(bytes)?;
        self.pos = checked::add(offset, key.0, "blob end")?;
        self.blobs.entry(key).or_default().push(offset);
        Ok(offset)
    }

    /// Whether the bytes written at `offset` are `bytes`, read back a piece at a time.
    fn written_equals(&mut self, offset: u64, bytes: &[u8]) -> Result<bool> {
        const PIECE: usize = 1 << 20;
        let mut buf = vec![0u8; PIECE.min(bytes.len())];
        self.out.seek(SeekFrom::Start(offset))?;
        let mut same = true;
        for piece in bytes.chunks(PIECE) {
            let got = &mut buf[..piece.len()];
            self.out.read_exact(got)?;
            if got != piece {
                same = false;
                break;
            }
        }
        self.out.seek(SeekFrom::Start(self.pos))?;
        Ok(same)
    }
}

impl FormatWriter for Zt2Writer<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let k = self.written.len();
        let info = self.plan.get(k).ok_or_else(|| Error::usage("more tensors written than planned"))?.clone();
        let name = info.name();
        check_data(&info, data).map_err(|e| e.for_tensor(name))?;
        check_profile_data(&info, data).map_err(|e| e.for_tensor(name))?;
        let object = self.objects[k].clone();
        let mut parts = Vec::with_capacity(object.parts.len());
        for part in &object.parts {
            let empty = Bytes::from_vec(Vec::new());
            let bytes = data.part(part.source).unwrap_or(&empty);
            if bytes.len() as u64 != part.nbytes {
                return Err(Error::usage(format!(
                    "{} bytes given for part {}, which needs {}",
                    bytes.len(),
                    part.source,
                    part.nbytes
                ))
                .for_tensor(name));
            }
            if part.logical == Some("bool") && bytes.iter().any(|&b| b > 1) {
                return Err(
                    Error::unsupported("zTensor 2 booleans are bytes 0 or 1; this tensor has others").for_tensor(name)
                );
            }
            let digest = XxHash3_64::oneshot(&bytes[..]);
            let offset = self.blob(bytes, digest)?;
            let mut fields = vec![
                ("dtype", Cbor::text(part.dtype)),
                ("blob", Cbor::Array(vec![Cbor::Uint(offset), Cbor::Uint(part.nbytes)])),
                ("digest", Cbor::text(format!("xxh3:{digest:016x}"))),
            ];
            if let Some(logical) = part.logical {
                fields.push(("type", Cbor::text(logical)));
            }
            parts.push((part.name, Cbor::map(fields)));
        }
        let mut fields = vec![
            ("shape", Cbor::Array(info.shape().iter().map(|&d| Cbor::Uint(d)).collect())),
            ("layout", Cbor::text(object.layout)),
            ("parts", Cbor::map(parts)),
        ];
        if !object.attributes.is_empty() {
            fields.push(("attributes", Cbor::map(object.attributes)));
        }
        self.written.push(Cbor::map(fields));
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.written.len() != self.plan.len() {
            return Err(Error::usage(format!("{} of {} planned tensors written", self.written.len(), self.plan.len())));
        }
        let objects = self.plan.iter().map(|i| i.name().to_string()).zip(std::mem::take(&mut self.written));
        let mut root = vec![("objects", Cbor::map(objects))];
        if let Some(a) = self.attributes.take() {
            root.push(("attributes", a));
        }
        let manifest = Cbor::map(root).encode("the manifest")?;
        if manifest.len() as u64 > MAX_MANIFEST {
            return Err(Error::unsupported(format!(
                "a manifest of {} bytes, more than zTensor 2 readers accept (1 GiB)",
                manifest.len()
            )));
        }
        let offset = canonical::align_up(self.pos)?;
        self.pad_to(offset)?;
        self.out.write_all(&manifest)?;
        self.out.write_all(&super::footer::for_manifest(offset, &manifest))?;
        self.out.flush()?;
        Ok(())
    }
}

/// The data rules of the sparse profiles beyond what the model checks: COO coordinates name
/// distinct cells; CSR column indices increase strictly within each row.
fn check_profile_data(info: &TensorInfo, data: &TensorData) -> Result<()> {
    let Layout::Sparse { format, .. } = info.layout() else { return Ok(()) };
    let s = data.to_sparse()?;
    let unsupported = |what: &str| Err(Error::unsupported(format!("zTensor 2 sparse tensors need {what}")));
    match format {
        SparseFormat::Coo => {
            let nnz = checked::to_usize(s.nnz(), "nnz")?;
            let mut cells = vec![0u64; nnz];
            for (dim, &extent) in info.shape().iter().enumerate() {
                for (cell, &i) in cells.iter_mut().zip(&s.indices()[dim * nnz..(dim + 1) * nnz]) {
                    *cell = checked::add(checked::mul(*cell, extent, "COO cell")?, i, "COO cell")?;
                }
            }
            cells.sort_unstable();
            if cells.windows(2).any(|w| w[0] == w[1]) {
                return unsupported("distinct coordinates (this one repeats some: coalesce it first)");
            }
        }
        SparseFormat::Csr => {
            for w in s.indptr().windows(2) {
                let (from, to) = (checked::to_usize(w[0], "indptr")?, checked::to_usize(w[1], "indptr")?);
                if s.indices()[from..to].windows(2).any(|c| c[1] <= c[0]) {
                    return unsupported("column indices increasing within each row");
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::formats::ztensor::v2::canonical::CANONICAL_ALIGN;
    use crate::model::DType;
    use crate::source::Bytes;

    fn dense(bytes: &[u8]) -> TensorData {
        TensorData::dense(Bytes::from_vec(bytes.to_vec()))
    }

    #[test]
    fn a_digest_match_is_shared_only_when_the_bytes_are_equal() {
        let plan = ["a", "b", "c"].map(|n| TensorInfo::dense(n, DType::UInt8, vec![4])).to_vec();
        let mut file = Cursor::new(Vec::new());
        let mut w = Zt2Writer::new(Box::new(&mut file), &plan, &WriteOptions::default()).unwrap();
        w.write(&dense(&[1, 2, 3, 4])).unwrap();
        let a = w.blobs[&(4, XxHash3_64::oneshot(&[1, 2, 3, 4]))][0];
        // A collision: the digest of b's bytes made to point at a's blob.
        w.blobs.insert((4, XxHash3_64::oneshot(&[5, 6, 7, 8])), vec![a]);
        w.write(&dense(&[5, 6, 7, 8])).unwrap();
        let b = w.blobs[&(4, XxHash3_64::oneshot(&[5, 6, 7, 8]))].clone();
        assert_eq!(b.len(), 2, "b was written beside the blob it collided with");
        assert_eq!((a, b[1]), (CANONICAL_ALIGN, 2 * CANONICAL_ALIGN));
        // Equal bytes: shared, nothing written.
        let end = w.pos;
        w.write(&dense(&[1, 2, 3, 4])).unwrap();
        assert_eq!(w.pos, end);
        let Cbor::Map(fields) = &w.written[2] else { panic!("an object is a map") };
        let parts = &fields.iter().find(|(k, _)| *k == Cbor::text("parts")).unwrap().1;
        let Cbor::Map(parts) = parts else { panic!("parts is a map") };
        let Cbor::Map(data) = &parts[0].1 else { panic!("a part is a map") };
        let blob = &data.iter().find(|(k, _)| *k == Cbor::text("blob")).unwrap().1;
        assert_eq!(*blob, Cbor::Array(vec![Cbor::Uint(a), Cbor::Uint(4)]));
        Box::new(w).finish().unwrap();
        let bytes = file.into_inner();
        assert_eq!(&bytes[a as usize..a as usize + 4], &[1, 2, 3, 4]);
        assert_eq!(&bytes[b[1] as usize..b[1] as usize + 4], &[5, 6, 7, 8]);
    }
}
