//! HDF5 datasets: the messages of a dataset's object header (datatype, dataspace, layout, fill
//! value, filter pipeline) and the reading of its elements into row-major little-endian bytes.
//!
//! Layouts: compact (the data in the layout message), contiguous (one run of bytes; a
//! little-endian one is read without a copy) and chunked, through every chunk index HDF5
//! writes (B-tree v1 for layout version 3; single chunk, implicit, fixed array, extensible
//! array and B-tree v2 for version 4). Chunks pass back through deflate, shuffle and
//! fletcher32; chunks and contiguous data never written read as the fill value.

mod assemble;
mod btree1;
mod chunks;
mod dataspace;
pub(super) mod datatype;
mod earray;
mod farray;
mod fill;
mod filters;
mod grid;
mod layout;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::limits;
use crate::model::DType;
use crate::source::Bytes;
use crate::swap;

use super::io::H5Io;
use super::object_header::{Message, kind};

use dataspace::Dataspace;
use datatype::Element;
use filters::Filter;
use layout::Storage;

/// The external data files message: a dataset whose bytes are in other files.
const EXTERNAL_FILES: u16 = 0x07;

/// The address of contiguous data never written.
const UNWRITTEN: u64 = u64::MAX;

/// A dataset that holds a tensor: its element type, shape, storage and filters.
pub(super) struct Dataset {
    element: Element,
    space: Dataspace,
    storage: Storage,
    filters: Vec<Filter>,
    /// The fill value in stored byte order; `None`: zeros.
    fill: Option<Vec<u8>>,
    /// An enum's members (name, value), for a dataset read as its base integer type.
    enum_members: Option<Vec<(String, i128)>>,
    /// The tensor's shape: the dataspace's dimensions, then an array datatype's.
    shape: Vec<u64>,
}

/// What a dataset's messages say of its type and shape, in words, even when it is not a
/// tensor: for listing a refused dataset.
pub(super) fn describe(io: &H5Io, messages: &[Message]) -> (String, Vec<u64>) {
    let element = find(messages, kind::DATATYPE).map(|m| datatype::parse(&m.body).map_err(|_| m));
    let dtype = element.as_ref().map(|e| match e {
        Ok(e) => e.dtype.name().to_string(),
        Err(m) => format!("hdf5 {}", datatype::class_name(&m.body)),
    });
    let space = find(messages, kind::DATASPACE).and_then(|m| dataspace::parse(&m.body, io.length_size()).ok());
    let mut shape = space.map(|s| s.dims).unwrap_or_default();
    if let Some(Ok(e)) = &element {
        shape.extend_from_slice(&e.array_dims);
    }
    (dtype.unwrap_or_else(|| "unknown".to_string()), shape)
}

fn find(messages: &[Message], kind: u16) -> Option<&Message> {
    messages.iter().find(|m| m.kind == kind)
}

fn required(messages: &[Message], kind: u16, what: &str) -> Result<Bytes> {
    find(messages, kind)
        .map(|m| m.body.clone())
        .ok_or_else(|| Error::invalid(Rule::MissingField, format!("HDF5 dataset without its {what} message")))
}

impl Dataset {
    /// The dataset the messages of its object header describe, or why it is not a tensor.
    pub(super) fn from_messages(io: &H5Io, messages: &[Message]) -> Result<Dataset> {
        let datatype = required(messages, kind::DATATYPE, "datatype")?;
        let element = datatype::parse(&datatype)?;
        let enum_members = datatype::enum_members(&datatype)?;
        if find(messages, EXTERNAL_FILES).is_some() {
            // Its bytes are in other files, which a reader of this one does not open.
            return Err(Error::unsupported("HDF5 dataset stored in external files"));
        }
        let space = dataspace::parse(&required(messages, kind::DATASPACE, "dataspace")?, io.length_size())?;
        let layout_body = required(messages, kind::LAYOUT, "data layout")?;
        let mut storage = layout::parse(&layout_body, space.dims.len(), io.offset_size(), io.length_size())?;
        if let Storage::Contiguous { addr, .. } = &mut storage
            && io.is_undefined(*addr)
        {
            // Never written, whatever the offset width: one marker for `contiguous_range`.
            *addr = UNWRITTEN;
        }
        if let Storage::Chunked(k) = &storage
            && space.dims.is_empty()
        {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 scalar dataset stored in chunks of {:?}", k.chunk),
            ));
        }
        if let Storage::Chunked(k) = &storage
            && k.element_size != element.size
        {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("HDF5 chunks of {}-byte elements for a datatype of {} bytes", k.element_size, element.size),
            ));
        }
        let filters = match find(messages, kind::FILTER_PIPELINE) {
            Some(m) => filters::parse(&m.body)?,
            None => Vec::new(),
        };
        if !filters.is_empty() && !matches!(storage, Storage::Chunked(_)) {
            return Err(Error::invalid(Rule::BadField, "HDF5 filters on a dataset that is not chunked"));
        }
        let new = find(messages, kind::FILL_VALUE).map(|m| &m.body[..]);
        let old = find(messages, kind::FILL_VALUE_OLD).map(|m| &m.body[..]);
        let fill = fill::parse(new, old, element.size)?;
        let mut shape = space.dims.clone();
        shape.extend_from_slice(&element.array_dims);
        let d = Dataset { element, space, storage, filters, fill, enum_members, shape };
        d.stored_len()?;
        Ok(d)
    }

    /// The tensor's dtype.
    pub(super) fn dtype(&self) -> DType {
        self.element.dtype
    }

    /// An enum dataset's members (name, value, in the order stored): h5py's enum mapping of a
    /// dataset read as its base integer type.
    pub(super) fn enum_members(&self) -> Option<&[(String, i128)]> {
        self.enum_members.as_deref()
    }

    /// The tensor's shape (empty for a scalar): an array datatype's dimensions follow the
    /// dataspace's, as h5py reads them.
    pub(super) fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Bytes of the tensor once read.
    pub(super) fn stored_len(&self) -> Result<u64> {
        checked::mul(checked::numel(&self.space.dims)?, self.element.size, "HDF5 dataset size")
    }

    /// Where the tensor's bytes lie in the file, as they are (address relative to the base
    /// address, length): for a contiguous, written, little-endian dataset.
    pub(super) fn contiguous_range(&self) -> Option<(u64, u64)> {
        match self.storage {
            Storage::Contiguous { addr, .. } if !self.element.big_endian && addr != UNWRITTEN => {
                Some((addr, self.stored_len().ok()?))
            }
            _ => None,
        }
    }

    /// The tensor's bytes, row-major and little-endian; a contiguous little-endian dataset's
    /// are a slice of the file (no copy where the file is mapped).
    pub(super) fn read(&self, io: &H5Io) -> Result<Bytes> {
        let len = self.stored_len()?;
        let bytes = match &self.storage {
            Storage::Compact(data) => {
                if data.len() as u64 != len {
                    return Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!("HDF5 compact dataset of {} bytes where its shape holds {len}", data.len()),
                    ));
                }
                data.clone()
            }
            Storage::Contiguous { addr, size } => {
                if *addr == UNWRITTEN {
                    Bytes::from_vec(self.filled(io, len)?)
                } else if let Some(size) = size.filter(|&s| s != len) {
                    return Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!("HDF5 contiguous dataset of {size} bytes where its shape holds {len}"),
                    ));
                } else {
                    io.read_what(*addr, len, "HDF5 contiguous dataset")?
                }
            }
            Storage::Chunked(chunking) => Bytes::from_vec(assemble::chunked(self, io, chunking, len)?),
        };
        Ok(self.little_endian(bytes))
    }

    /// `bytes` in little-endian order (the same bytes when they are already).
    fn little_endian(&self, bytes: Bytes) -> Bytes {
        if !self.element.big_endian {
            return bytes;
        }
        Bytes::from_vec(swap::swapped(&bytes, self.element.dtype.swap_unit()))
    }

    /// The most bytes this dataset may decode to: what the file could hold compressed, at
    /// least [`limits::MAX_VIEW_EXPANSION`].
    fn justified(io: &H5Io) -> u64 {
        io.file_len().saturating_mul(limits::MAX_DENSE_EXPANSION).max(limits::MAX_VIEW_EXPANSION)
    }

    /// `len` bytes of the fill value, repeated (in stored byte order).
    fn filled(&self, io: &H5Io, len: u64) -> Result<Vec<u8>> {
        let justified = Self::justified(io);
        if len > justified {
            return Err(Error::invalid(
                Rule::ExpansionTooLarge,
                format!("HDF5 dataset of {len} bytes, more than its file of {} bytes can justify", io.file_len()),
            ));
        }
        let mut out = checked::zeroed(len, justified, "HDF5 dataset")?;
        if let Some(value) = &self.fill
            && value.iter().any(|&b| b != 0)
        {
            for element in out.chunks_exact_mut(value.len()) {
                element.copy_from_slice(value);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod hostile_tests;
