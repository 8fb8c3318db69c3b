//! One entry of an archive: what the central directory says of it, and where its local
//! header places its data (the type the directory, local-header and reading code share).

/// One entry of the central directory, checked against the file.
#[derive(Debug, Clone)]
pub struct ZipEntry {
    pub name: String,
    /// 0 stored, 8 deflated.
    pub method: u16,
    pub crc32: u32,
    pub compressed_size: u64,
    pub size: u64,
    /// Where the local header starts.
    pub header_offset: u64,
    /// Where the (compressed) data starts.
    pub data_offset: u64,
}
