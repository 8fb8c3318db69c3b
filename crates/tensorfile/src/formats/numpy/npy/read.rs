//! Opening an `.npy` file: its header is read and checked; the array's bytes are read when
//! asked for (a slice of the map for little-endian C-order data of a local file).

use super::super::array::to_row_major_le;
use super::super::header::{Header, header, preamble};
use super::super::{MAX_HEADER, array_info};
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::{ByteOrder, Entry, MetaValue, Storage, TensorData};
use crate::source::Source;

/// The name of the array of an `.npy` file that has no path (one opened from bytes).
pub const UNNAMED: &str = "array";

/// An opened `.npy` file.
pub struct NpyReader {
    src: Source,
    header: Header,
    catalog: Catalog,
}

/// The array's name: the file's stem, or [`UNNAMED`] for a file without a path.
fn name_of(src: &Source) -> String {
    src.location()
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(UNNAMED)
        .to_string()
}

impl NpyReader {
    /// Open an `.npy` file: one read of its start (the header is at most
    /// [`MAX_HEADER`] bytes); the data is read when asked for.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let head = src.head(12 + MAX_HEADER)?;
        let p = preamble(&head)?;
        let data_at = p.data_at();
        if data_at > src.len() {
            return Err(Error::invalid(
                Rule::Truncated,
                format!("a header of {} bytes, but only {} follow", p.dict_len, src.len() - p.dict_at),
            ));
        }
        // Both within the head: data_at <= 12 + MAX_HEADER and <= the file's length.
        let header = header(p, &head[p.dict_at as usize..data_at as usize])?;
        let name = name_of(&src);
        let mut catalog = Catalog::default();
        match &header.dtype {
            Ok((dtype, order)) => {
                let (info, nbytes) = array_info(&name, &header, *dtype)?;
                let available = src.len() - data_at;
                if available < nbytes {
                    return Err(Error::invalid(
                        Rule::Truncated,
                        format!(
                            "dtype {dtype} and shape {:?} need {nbytes} bytes, the file holds {available}",
                            header.shape
                        ),
                    )
                    .for_tensor(&name));
                }
                let storage = Storage::new(data_at, nbytes).with_byte_order(*order);
                catalog.push(Entry::checked(info, nbytes, storage));
            }
            Err(why) => catalog.push_unreadable(name, header.descr.clone(), header.shape.clone(), why.clone()),
        }
        Ok(NpyReader { src, header, catalog })
    }

    /// The `.npy` format version (1, 2 or 3).
    #[cfg(any(test, feature = "internals"))]
    pub fn version(&self) -> u8 {
        self.header.preamble.major
    }
}

/// The file-level facts of an array's header, for `info` (shared with `.npz` members).
pub(crate) fn header_details(h: &Header) -> Vec<(String, MetaValue)> {
    let order = h.dtype.as_ref().map_or(ByteOrder::Little, |(_, o)| *o);
    vec![
        ("descr".into(), MetaValue::Text(h.descr.clone())),
        ("fortran_order".into(), MetaValue::Bool(h.fortran_order)),
        ("byte_order".into(), MetaValue::Text(order.name().into())),
        ("header_bytes".into(), MetaValue::Int(i128::from(h.preamble.data_at()))),
    ]
}

impl FormatReader for NpyReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Npy
    }

    fn summary(&self) -> FileSummary {
        FileSummary {
            version: format!("{}.0", self.header.preamble.major),
            metadata: Vec::new(),
            details: header_details(&self.header),
            structure: None,
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let e = self.catalog.get(index)?;
        let stored = self.src.range(e.storage().offset(), e.storage().len())?;
        let info = e.info();
        let data =
            to_row_major_le(stored, info.dtype(), e.storage().byte_order(), self.header.fortran_order, info.shape());
        Ok(TensorData::dense(data))
    }
}
