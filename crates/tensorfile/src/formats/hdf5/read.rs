//! Opening an HDF5 file: the superblock, then every object reachable from the root group by
//! hard links, depth first with links in name order (the order of h5py's `visititems`), each
//! object once. Datasets become entries named by their path without the leading `/`; their
//! attributes are their fields; the root's attributes are the file's metadata and other
//! groups' attributes are metadata keyed `group/path/name`. A part that cannot be decoded is
//! listed with its reason and loses nothing else: a dataset, a group whose links or an object
//! whose header cannot be read is an unreadable entry; an attribute that cannot be decoded is
//! shown as such where its value would be and named in the summary's
//! `unreadable_attributes`.

use std::collections::HashSet;

use super::attribute::{Attribute, attributes};
use super::dataset::{self, Dataset};
use super::group::{self, Link, Target};
use super::io::H5Io;
use super::object_header::{self, kind};
use super::superblock::{self, Superblock};
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::limits::{MAX_ENTRIES, MAX_NESTING};
use crate::model::{Entry, Kind, Layout, MetaValue, Storage, TensorData, TensorInfo};
use crate::source::Source;

/// An opened HDF5 file.
pub struct Hdf5Reader {
    io: H5Io,
    superblock: Superblock,
    metadata: Vec<(String, MetaValue)>,
    /// Links not followed: the path and why.
    skipped: Vec<(String, String)>,
    /// Attributes that cannot be decoded: the object's path (`/` for the root), the
    /// attribute's name and why.
    unreadable_attributes: Vec<(String, String, Error)>,
    /// The datasets of the readable entries, in the same order.
    datasets: Vec<Dataset>,
    catalog: Catalog,
}

/// The walk from the root: what it found and what it has seen.
struct Walk<'a> {
    io: &'a H5Io,
    seen: HashSet<u64>,
    metadata: Vec<(String, MetaValue)>,
    skipped: Vec<(String, String)>,
    unreadable_attributes: Vec<(String, String, Error)>,
    datasets: Vec<Dataset>,
    catalog: Catalog,
}

/// An HDF5 group or other object that is not a tensor, in the listing of unreadable entries.
const GROUP: &str = "hdf5 group";
const OBJECT: &str = "hdf5 object";

/// The field of an enum dataset's entry that holds its members' names and values.
const ENUM_FIELD: &str = "hdf5_enum";

impl Hdf5Reader {
    /// Open an HDF5 file: its superblock, its groups and their links, the headers of its
    /// datasets (a dataset's elements are read when asked for).
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let (sb, io) = superblock::read(src.into())?;
        let mut walk = Walk {
            io: &io,
            seen: HashSet::new(),
            metadata: Vec::new(),
            skipped: Vec::new(),
            unreadable_attributes: Vec::new(),
            datasets: Vec::new(),
            catalog: Catalog::default(),
        };
        walk.seen.insert(sb.root);
        // Without the root's header nothing can be reached.
        let messages = object_header::messages(&io, sb.root)?;
        walk.metadata = walk.attributes("/", attributes(&io, &messages));
        walk.group("", &messages, sb.root_cache, 0)?;
        let Walk { metadata, skipped, unreadable_attributes, datasets, catalog, .. } = walk;
        Ok(Hdf5Reader { superblock: sb, metadata, skipped, unreadable_attributes, datasets, catalog, io })
    }
}

impl Walk<'_> {
    /// The attributes of the object at `path` as values: one that cannot be decoded is
    /// described with its reason, and remembered for the summary.
    fn attributes(&mut self, path: &str, read: Vec<Attribute>) -> Vec<(String, MetaValue)> {
        let mut out = Vec::with_capacity(read.len());
        for (name, value) in read {
            match value {
                Ok(v) => out.push((name, v)),
                Err(e) => {
                    if !name.is_empty() {
                        out.push((name.clone(), MetaValue::Text(format!("<unreadable hdf5 attribute: {e}>"))));
                    }
                    self.unreadable_attributes.push((path.to_string(), name, e));
                }
            }
        }
        out
    }

    /// The members of the group at `path` whose header holds `messages`. A member that
    /// cannot be read is listed unreadable; so is this group when its links cannot be read.
    /// Only the limits on the whole file (objects) end the walk.
    fn group(
        &mut self,
        path: &str,
        messages: &[object_header::Message],
        cache: Option<(u64, u64)>,
        depth: usize,
    ) -> Result<()> {
        let unreadable = |walk: &mut Self, e: Error| {
            walk.catalog.push_unreadable(group_name(path).to_string(), GROUP.into(), Vec::new(), e.for_tensor(group_name(path)));
        };
        if depth > MAX_NESTING {
            let e = Error::invalid(Rule::TooDeep, format!("groups nested deeper than {MAX_NESTING} at {path:?}"));
            unreadable(self, e);
            return Ok(());
        }
        let mut links = match group::links(self.io, messages, cache) {
            Ok(links) => links,
            Err(e) => {
                unreadable(self, e);
                return Ok(());
            }
        };
        links.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if let Some(w) = links.windows(2).find(|w| w[0].name == w[1].name) {
            unreadable(self, Error::invalid(Rule::DuplicateName, format!("two links named {:?}", w[0].name)));
            return Ok(());
        }
        for Link { name, target } in links {
            let child = if path.is_empty() { name } else { format!("{path}/{name}") };
            let addr = match target {
                Target::Hard(addr) => addr,
                Target::Soft(to) => {
                    self.skipped.push((child, format!("soft link to {to}: not followed")));
                    continue;
                }
                Target::External(file, to) => {
                    self.skipped.push((child, format!("external link to {to} in {file}: not followed")));
                    continue;
                }
                Target::Other(t) => {
                    self.skipped.push((child, format!("link of type {t}: not followed")));
                    continue;
                }
            };
            // An object reached again (a second hard link, or a link back up) is listed once,
            // under the first path.
            if !self.seen.insert(addr) {
                continue;
            }
            if self.seen.len() > MAX_ENTRIES {
                return Err(Error::invalid(Rule::TooManyEntries, format!("more than {MAX_ENTRIES} objects")));
            }
            let messages = match object_header::messages(self.io, addr) {
                Ok(messages) => messages,
                Err(e) => {
                    let e = e.for_tensor(&child);
                    self.catalog.push_unreadable(child, OBJECT.into(), Vec::new(), e);
                    continue;
                }
            };
            if group::is_group(&messages) {
                let read = attributes(self.io, &messages);
                for (key, value) in self.attributes(&child, read) {
                    self.metadata.push((format!("{child}/{key}"), value));
                }
                self.group(&child, &messages, None, depth + 1)?;
            } else if object_header::find(&messages, kind::LAYOUT).is_some() {
                self.dataset(child, &messages);
            }
        }
        Ok(())
    }

    /// A dataset: an entry, or an unreadable one with its reason.
    fn dataset(&mut self, name: String, messages: &[object_header::Message]) {
        let found = Dataset::from_messages(self.io, messages).and_then(|d| {
            let read = attributes(self.io, messages);
            let mut extra = self.attributes(&name, read);
            if let Some(members) = d.enum_members() {
                // h5py's enum mapping (`h5py.check_enum_dtype`), ahead of the attributes.
                let map = members.iter().map(|(k, v)| (MetaValue::Text(k.clone()), MetaValue::Int(*v))).collect();
                extra.insert(0, (ENUM_FIELD.to_string(), MetaValue::Map(map)));
            }
            let info = TensorInfo::new(name.clone(), Kind::Tensor, d.dtype(), d.shape().to_vec(), Layout::Dense)?;
            let storage = match d.contiguous_range() {
                Some((addr, len)) => Storage::new(self.io.absolute(addr, len, "dataset")?, len),
                // Decoded when read: no single range of stored bytes.
                None => Storage::new(0, 0),
            };
            Ok((Entry::new(info.with_extra(extra), storage)?, d))
        });
        match found {
            Ok((entry, d)) => {
                self.catalog.push(entry);
                self.datasets.push(d);
            }
            Err(e) => {
                let (dtype, shape) = dataset::describe(self.io, messages);
                self.catalog.push_unreadable(name.clone(), dtype, shape, e.for_tensor(&name));
            }
        }
    }
}

/// How a group is named in errors (the root: `/`).
fn group_name(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

impl FormatReader for Hdf5Reader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Hdf5
    }

    fn summary(&self) -> FileSummary {
        let mut details = vec![
            ("superblock_version".into(), MetaValue::Int(i128::from(self.superblock.version))),
            ("offset_size".into(), MetaValue::Int(i128::from(self.superblock.offset_size))),
            ("length_size".into(), MetaValue::Int(i128::from(self.superblock.length_size))),
        ];
        if self.io.base_address() > 0 {
            details.push(("base_address".into(), MetaValue::Int(i128::from(self.io.base_address()))));
        }
        if self.superblock.at > 0 {
            details.push(("user_block_bytes".into(), MetaValue::Int(i128::from(self.superblock.at))));
        }
        if !self.unreadable_attributes.is_empty() {
            let listed = self
                .unreadable_attributes
                .iter()
                .map(|(object, name, e)| MetaValue::Text(format!("{object}: {name}: {e}")))
                .collect();
            details.push(("unreadable_attributes".into(), MetaValue::Array(listed)));
        }
        if !self.skipped.is_empty() {
            let skipped = self.skipped.iter().map(|(p, why)| MetaValue::Text(format!("{p}: {why}"))).collect();
            details.push(("skipped_links".into(), MetaValue::Array(skipped)));
        }
        FileSummary {
            version: format!("superblock {}", self.superblock.version),
            metadata: self.metadata.clone(),
            structure: None,
            details,
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The attributes that cannot be decoded (the entries that cannot be read are the
    /// catalog's).
    fn check(&self) -> Vec<Error> {
        self.unreadable_attributes
            .iter()
            .map(|(object, name, e)| {
                let at = if name.is_empty() { object.clone() } else { format!("{object}: attribute {name:?}") };
                e.clone().for_tensor(&at)
            })
            .collect()
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let entry = self.catalog.get(index)?;
        let d = &self.datasets[index];
        let bytes = d.read(&self.io).map_err(|e| e.for_tensor(entry.info().name()))?;
        if bytes.len() as u64 != entry.nbytes() {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("{} bytes read, {} expected", bytes.len(), entry.nbytes()),
            )
            .for_tensor(entry.info().name()));
        }
        Ok(TensorData::dense(bytes))
    }
}
