//! Opening a zTensor 2 file (spec §8): the footer, the manifest blob and its hash, the
//! manifest's deterministic CBOR and schema, every blob reference, every object's layout;
//! then the shards the readable objects need.

use super::assemble;
use super::footer::{self, ManifestBlob};
use super::layouts;
use super::manifest::{self, Digest, Manifest, Object, ShardEntry, check_digest};
use super::plan::{self, PartPlan, Plan};
use super::shards::{self, Shard};
use super::types::Element;
use super::{FOOTER_LEN, MAGIC, blobs};
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::{Encoding, Entry, MetaValue, Storage, TensorData};
use crate::source::{SPECULATIVE_READ, Source};

/// An opened zTensor 2 file (or zTensor 1.x file, whose objects `v1` reads into the same
/// structures).
pub struct Zt2Reader {
    src: Source,
    flavor: Flavor,
    attributes: Vec<(String, MetaValue)>,
    catalog: Catalog,
    /// Per readable entry, its parts in its layout's order.
    plans: Vec<Vec<PartPlan>>,
    /// Per unreadable object, its name and parts: their digests are still verified.
    structural: Vec<(String, Vec<PartPlan>)>,
    /// The shard table, and each shard opened (`None`: no readable entry needs it).
    table: Vec<ShardEntry>,
    shards: Vec<Option<Result<Shard>>>,
    /// The blobs of this file the manifest references (the manifest blob among them).
    blobs: Vec<(u64, u64)>,
}

/// Which zTensor a reader serves, with what its summary shows.
pub(in crate::formats::ztensor) enum Flavor {
    /// zTensor 2: the manifest blob the footer points at (`None`: a data shard).
    V2(Option<ManifestBlob>),
    /// zTensor 1.x: the version its manifest states, and the manifest's length.
    V1 { version: String, manifest_len: u64 },
}

impl Zt2Reader {
    /// The file it reads.
    pub(super) fn source(&self) -> &Source {
        &self.src
    }

    /// Which zTensor it serves, with its manifest blob.
    pub(super) fn flavor(&self) -> &Flavor {
        &self.flavor
    }

    /// Open a zTensor 2 file: only its footer and manifest are read (for a remote file, one
    /// speculative read of its end, and a second when the manifest is longer), and the
    /// shards its readable objects need are opened beside it.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let len = src.len();
        let head = src.range(0, (MAGIC.len() as u64).min(len))?;
        let (start, tail) = src.tail(SPECULATIVE_READ)?;
        let footer_bytes = if len >= FOOTER_LEN { &tail[(len - FOOTER_LEN - start) as usize..] } else { &[][..] };
        let Some(blob) = footer::parse(len, &head, footer_bytes)? else {
            return Zt2Reader::from_manifest(src, Manifest::default(), Flavor::V2(None));
        };
        let bytes = src.range(blob.offset, blob.len)?;
        let hash = twox_hash::XxHash3_64::oneshot(&bytes);
        if hash != blob.hash {
            return Err(Error::invalid(
                Rule::ChecksumMismatch,
                format!("the manifest's XXH3-64 is {hash:#018x}; the footer says {:#018x}", blob.hash),
            ));
        }
        let m = manifest::parse(&bytes)?;
        blobs::check(&m, len - FOOTER_LEN, (blob.offset, blob.len))?;
        Zt2Reader::from_manifest(src, m, Flavor::V2(Some(blob)))
    }

    /// A reader of the objects of `m`, whose blob references were checked: each object's
    /// layout interpreted (a broken rule refuses the file), the shards the readable ones
    /// need opened.
    pub(in crate::formats::ztensor) fn from_manifest(src: Source, m: Manifest, flavor: Flavor) -> Result<Self> {
        let mut interpreted = Vec::with_capacity(m.objects.len());
        for o in &m.objects {
            interpreted.push(layouts::interpret(o).map_err(|e| e.for_tensor(&o.name))?);
        }
        let Manifest { attributes, shards: table, objects } = m;
        let shards = open_shards(&src, &table, &interpreted);
        let blobs = match &flavor {
            Flavor::V2(Some(blob)) => local_blobs(&objects, blob),
            _ => Vec::new(),
        };
        let mut reader = Zt2Reader {
            blobs,
            src,
            flavor,
            attributes,
            catalog: Catalog::default(),
            plans: Vec::new(),
            structural: Vec::new(),
            table,
            shards,
        };
        for (o, result) in objects.iter().zip(interpreted) {
            match result.and_then(|plan| reader.shards_of(plan)) {
                Ok(plan) => {
                    let storage = storage(&plan.parts);
                    reader.catalog.push(Entry::new(plan.info, storage)?);
                    reader.plans.push(plan.parts);
                }
                Err(e) => {
                    reader.catalog.push_unreadable(o.name.clone(), dtype_text(o), o.shape.clone(), e);
                    let parts = o.parts.iter().map(|p| plan::plan("", p, Element::plain(p.dtype))).collect();
                    reader.structural.push((o.name.clone(), parts));
                }
            }
        }
        Ok(reader)
    }

    /// `plan`, when every shard it needs is open; else why not.
    fn shards_of(&self, plan: Plan) -> Result<Plan> {
        for p in &plan.parts {
            if let Err(e) = self.file_of(p) {
                return Err(manifest::in_part(e, &p.part.name));
            }
        }
        Ok(plan)
    }

    /// The file part `p` is in: this one, or its shard.
    fn file_of(&self, p: &PartPlan) -> Result<&Source> {
        let Some(name) = &p.part.shard else { return Ok(&self.src) };
        // The blobs were checked to name shards of the table, and the table's shards needed
        // by readable entries were opened.
        let k = self.table.iter().position(|s| s.name == *name);
        match k.and_then(|k| self.shards.get(k)).and_then(Option::as_ref) {
            Some(Ok(shard)) => Ok(&shard.src),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::usage(format!("shard {name:?} was not opened"))),
        }
    }

    /// Whether the file is a data shard (no manifest: bytes a root file refers to).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_data_shard(&self) -> bool {
        matches!(self.flavor, Flavor::V2(None))
    }

    /// The parts of readable entry `index`, in its layout's order.
    pub(super) fn plan(&self, index: usize) -> Result<&[PartPlan]> {
        self.plans
            .get(index)
            .map(Vec::as_slice)
            .ok_or_else(|| Error::usage(format!("entry index {index} out of range")))
    }

    /// Earlier footers left in the file by appends (spec §2.5), found in the bytes no blob of
    /// the manifest covers; `None` for a remote file (which is not scanned).
    fn earlier_footers(&self) -> Option<u64> {
        let bytes = self.src.as_local()?;
        let end = bytes.len().saturating_sub(FOOTER_LEN as usize);
        let mut count = 0;
        let mut from = MAGIC.len();
        for &(offset, len) in self.blobs.iter().chain(std::iter::once(&(end as u64, 0))) {
            let to = (offset as usize).min(end);
            if to > from {
                count += footers_in(&bytes[..to], from);
            }
            from = from.max((offset + len) as usize);
        }
        Some(count)
    }
}

/// Footers (of version 2, ending with the magic) lying whole in `bytes[from..]`.
fn footers_in(bytes: &[u8], from: usize) -> u64 {
    let footer = FOOTER_LEN as usize;
    (from + footer..=bytes.len())
        .filter(|&end| bytes[end - MAGIC.len()] == MAGIC[0] && footer::check_footer(&bytes[end - footer..end]).is_ok())
        .count() as u64
}

/// This file's blobs (the manifest's own among them), sorted: what `info` does not count as
/// earlier generations.
fn local_blobs(objects: &[Object], manifest: &ManifestBlob) -> Vec<(u64, u64)> {
    let parts = objects.iter().flat_map(|o| &o.parts).filter(|p| p.shard.is_none());
    let mut blobs: Vec<(u64, u64)> = parts.map(|p| (p.offset, p.length)).collect();
    blobs.push((manifest.offset, manifest.len));
    blobs.sort_unstable();
    blobs
}

/// Each shard of `table` that a readable object needs, opened.
fn open_shards(src: &Source, table: &[ShardEntry], interpreted: &[plan::Interpreted]) -> Vec<Option<Result<Shard>>> {
    let needed = |name: &str| {
        interpreted.iter().flatten().flat_map(|plan| &plan.parts).any(|p| p.part.shard.as_deref() == Some(name))
    };
    table.iter().map(|entry| needed(&entry.name).then(|| shards::open(src, entry))).collect()
}

/// Where an entry's bytes are, for listings: its first part's offset, the stored bytes of all
/// its parts, zstd when any part is encoded, and the digest of a single part.
fn storage(parts: &[PartPlan]) -> Storage {
    let offset = parts.first().map_or(0, |p| p.part.offset);
    let len = parts.iter().fold(0u64, |sum, p| sum.saturating_add(p.part.length));
    let encoded = parts.iter().any(|p| p.part.encoding.is_some());
    let checksum = match parts {
        [only] => match &only.part.digest {
            Some(Digest::Known(c)) => Some(*c),
            _ => None,
        },
        _ => None,
    };
    Storage::new(offset, len)
        .with_encoding(if encoded { Encoding::Zstd } else { Encoding::Raw })
        .with_checksum(checksum)
}

/// An unreadable object's dtype, as the file gives it: its data (or values) part's, or its
/// first part's.
fn dtype_text(o: &Object) -> String {
    let main = o.parts.iter().find(|p| p.name == "data" || p.name == "values").or(o.parts.first());
    main.map_or_else(String::new, |p| match &p.logical {
        Some(t) => t.clone(),
        None => p.dtype.name().to_string(),
    })
}

impl FormatReader for Zt2Reader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        match self.flavor {
            Flavor::V2(_) => Format::Zt2,
            Flavor::V1 { .. } => Format::Zt1,
        }
    }

    fn summary(&self) -> FileSummary {
        let mut details = Vec::new();
        let int = |v: u64| MetaValue::Int(i128::from(v));
        let version = match &self.flavor {
            Flavor::V2(Some(m)) => {
                details.push(("manifest_offset".to_string(), int(m.offset)));
                details.push(("manifest_bytes".to_string(), int(m.len)));
                "2".to_string()
            }
            Flavor::V2(None) => {
                details.push(("data_shard".to_string(), MetaValue::Bool(true)));
                "2".to_string()
            }
            Flavor::V1 { version, manifest_len } => {
                details.push(("manifest_bytes".to_string(), int(*manifest_len)));
                version.clone()
            }
        };
        if !self.table.is_empty() {
            details.push(("shards".to_string(), int(self.table.len() as u64)));
        }
        if let Some(n) = self.earlier_footers().filter(|&n| n > 0) {
            details.push(("earlier_generations".to_string(), int(n)));
        }
        FileSummary { version, metadata: self.attributes.clone(), details, structure: None }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let entry = self.catalog.get(index)?;
        assemble::read(|p| self.file_of(p), entry, self.plan(index)?, verify)
    }

    /// Every part's digest (over its decoded bytes), and every opened shard's whole-file
    /// digest. The parts of unreadable objects are verified too, where they can be decoded
    /// (their encoding known, their file at hand).
    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        let mut problems = Vec::new();
        let mut checked = 0;
        let readable = self.catalog.entries().iter().map(|e| e.info().name()).zip(&self.plans);
        let structural = self.structural.iter().map(|(name, parts)| (name.as_str(), parts));
        for (name, plan) in readable.chain(structural) {
            for p in plan.iter().filter(|p| p.part.digest.is_some()) {
                if p.role.is_empty() && (!layouts::decodable(&p.part) || self.file_of(p).is_err()) {
                    continue;
                }
                match assemble::part_bytes(|p| self.file_of(p), p, true) {
                    Ok(_) => checked += 1,
                    Err(e) => problems.push(e.for_tensor(name)),
                }
            }
        }
        for (entry, shard) in self.table.iter().zip(&self.shards) {
            if let Some(Ok(shard)) = shard {
                match shard.src.whole().and_then(|bytes| check_digest(&entry.digest, &bytes)) {
                    Ok(()) => checked += 1,
                    Err(e) => problems.push(e.in_file(&shard.path)),
                }
            }
        }
        (problems, checked)
    }
}
