//! Writing an `.npz`: each tensor a stored `<name>.npy` member, streamed into the archive
//! (its CRC filled in afterwards), so memory stays bounded by one piece of one tensor.

use std::collections::HashSet;

use super::super::npy::header_of;
use crate::error::{Error, Result};
use crate::formats::{FormatWriter, Output, check_data, streamed_size};
use crate::model::{Chunks, TensorData, TensorInfo};
use crate::source::Bytes;
use crate::zip::ZipWriter;

/// A streaming `.npz` writer.
pub struct NpzWriter<'w> {
    zip: ZipWriter<Box<dyn Output + 'w>>,
    plan: Vec<TensorInfo>,
    next: usize,
}

impl<'w> NpzWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one NumPy cannot hold.
    pub fn new(out: Box<dyn Output + 'w>, plan: &[TensorInfo]) -> Result<Self> {
        let mut names = HashSet::with_capacity(plan.len());
        for info in plan {
            super::check_supported(info)?;
            if !names.insert(info.name()) {
                return Err(Error::usage(format!("two tensors named {:?}", info.name())));
            }
        }
        // Members at the top of the archive, as numpy names them; the zip64 end records only
        // where needed (numpy.load looks for a local header or an end record first).
        Ok(NpzWriter { zip: ZipWriter::plain(out), plan: plan.to_vec(), next: 0 })
    }

    /// The next planned tensor and its member's header.
    fn next(&mut self) -> Result<(TensorInfo, Vec<u8>)> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?.clone();
        self.next += 1;
        let header = header_of(&info)?;
        Ok((info, header))
    }

    /// Store `info`'s member: its header, then `pieces` adding up to `want` bytes.
    fn member(&mut self, info: &TensorInfo, header: Vec<u8>, want: u64, pieces: Chunks<'_>) -> Result<()> {
        let name = info.name();
        let size = want + header.len() as u64;
        let head: Chunks<'_> = Box::new(std::iter::once(Ok(Bytes::from_vec(header))));
        self.zip.add_streamed(&format!("{name}.npy"), size, Box::new(head.chain(pieces))).map_err(|e| {
            // Pieces of another size are the caller's mistake, said in the tensor's terms.
            match e.kind() {
                crate::ErrorKind::Usage(_) => {
                    Error::usage(format!("the pieces given do not add up to the {want} bytes planned"))
                }
                _ => e,
            }
            .for_tensor(name)
        })
    }
}

impl FormatWriter for NpzWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let (info, header) = self.next()?;
        check_data(&info, data).map_err(|e| e.for_tensor(info.name()))?;
        let bytes = data.as_dense()?.clone();
        let want = bytes.len() as u64;
        self.member(&info, header, want, Box::new(std::iter::once(Ok(bytes))))
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let (info, header) = self.next()?;
        let want = streamed_size(&info).map_err(|e| e.for_tensor(info.name()))?;
        self.member(&info, header, want, open()?)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        if self.next != self.plan.len() {
            return Err(Error::usage(format!("writer finished after {} of {} tensors", self.next, self.plan.len())));
        }
        self.zip.finish()?;
        Ok(())
    }
}
