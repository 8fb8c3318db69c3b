//! Writing `torch.save` files: a flat dict of name to tensor, in PyTorch's zip layout
//! (`data.pkl` first, then one stored, 64-byte aligned record per tensor), loadable by
//! `torch.load(weights_only=True)`.

use super::check_supported;
use crate::error::{Error, Result};
use crate::formats::pytorch::row_major_strides;
use crate::formats::{FormatWriter, Output, WriteOptions, check_data, streamed_size};
use crate::model::{Chunks, DType, TensorData, TensorInfo};
use crate::zip::ZipWriter;

/// The record folder name; PyTorch accepts any.
const ROOT: &str = "archive";

/// A streaming `torch.save` writer.
pub struct PtWriter<'w> {
    zip: Option<ZipWriter<Box<dyn Output + 'w>>>,
    plan: Vec<TensorInfo>,
    next: usize,
}

/// The legacy storage class torch pickles for a dtype, when it has one.
fn storage_class(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::Float64 => "DoubleStorage",
        DType::Float32 => "FloatStorage",
        DType::Float16 => "HalfStorage",
        DType::BFloat16 => "BFloat16Storage",
        DType::Int64 => "LongStorage",
        DType::Int32 => "IntStorage",
        DType::Int16 => "ShortStorage",
        DType::Int8 => "CharStorage",
        DType::UInt8 => "ByteStorage",
        DType::Bool => "BoolStorage",
        DType::Complex64 => "ComplexFloatStorage",
        DType::Complex128 => "ComplexDoubleStorage",
        _ => return None,
    })
}

/// Protocol-2 pickle opcodes, as torch.save writes them.
struct Pickler {
    out: Vec<u8>,
}

impl Pickler {
    fn str(&mut self, s: &str) {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
    }

    fn int(&mut self, v: u64) {
        if let Ok(small) = i32::try_from(v) {
            self.out.push(b'J');
            self.out.extend_from_slice(&small.to_le_bytes());
        } else {
            // LONG1 with 9 bytes: always non-negative two's complement.
            self.out.extend_from_slice(&[0x8a, 9]);
            self.out.extend_from_slice(&v.to_le_bytes());
            self.out.push(0);
        }
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(b'c');
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
    }

    fn tuple(&mut self, items: &[u64]) {
        self.out.push(b'(');
        for &v in items {
            self.int(v);
        }
        self.out.push(b't');
    }

    /// `name: _rebuild_tensor_v2/v3(storage key, 0, shape, strides, False, OrderedDict())`.
    fn tensor(&mut self, info: &TensorInfo, key: &str) -> Result<()> {
        let numel: u64 = info.numel()?;
        let class = storage_class(info.dtype());
        self.global("torch._utils", if class.is_some() { "_rebuild_tensor_v2" } else { "_rebuild_tensor_v3" });
        self.out.push(b'(');
        // The storage: a persistent id ('storage', type, key, location, size).
        self.out.push(b'(');
        self.str("storage");
        match class {
            Some(c) => {
                self.global("torch", c);
                self.str(key);
                self.str("cpu");
                self.int(numel);
            }
            None => {
                self.global("torch.storage", "UntypedStorage");
                self.str(key);
                self.str("cpu");
                self.int(info.nbytes()?);
            }
        }
        self.out.extend_from_slice(b"tQ");
        self.int(0);
        self.tuple(info.shape());
        self.tuple(&row_major_strides(info.shape()));
        self.out.push(0x89); // requires_grad False
        self.global("collections", "OrderedDict");
        self.out.extend_from_slice(b")R");
        if class.is_none() {
            self.global("torch", info.dtype().name());
        }
        self.out.extend_from_slice(b"tR");
        Ok(())
    }
}

/// The `data.pkl` of a flat dict of `plan`'s tensors, storage `i` for tensor `i`.
fn data_pkl(plan: &[TensorInfo]) -> Result<Vec<u8>> {
    let mut p = Pickler { out: vec![0x80, 2, b'}'] };
    if !plan.is_empty() {
        p.out.push(b'(');
        for (i, info) in plan.iter().enumerate() {
            p.str(info.name());
            p.tensor(info, &i.to_string())?;
        }
        p.out.push(b'u');
    }
    p.out.push(b'.');
    Ok(p.out)
}

impl<'w> PtWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one a `torch.save` file cannot
    /// hold. Writing options do not apply: the zip's records are stored uncompressed.
    pub fn new(out: Box<dyn Output + 'w>, plan: &[TensorInfo], _options: &WriteOptions) -> Result<Self> {
        for info in plan {
            check_supported(info).map_err(|e| e.for_tensor(info.name()))?;
        }
        let mut zip = ZipWriter::new(out, ROOT);
        zip.add("data.pkl", &data_pkl(plan)?)?;
        zip.add("byteorder", b"little")?;
        Ok(PtWriter { zip: Some(zip), plan: plan.to_vec(), next: 0 })
    }
}

impl FormatWriter for PtWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        check_data(info, data).map_err(|e| e.for_tensor(info.name()))?;
        let zip = self.zip.as_mut().ok_or_else(|| Error::usage("writer already finished"))?;
        zip.add(&format!("data/{}", self.next), data.as_dense()?)?;
        self.next += 1;
        Ok(())
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        let size = streamed_size(info).map_err(|e| e.for_tensor(info.name()))?;
        let zip = self.zip.as_mut().ok_or_else(|| Error::usage("writer already finished"))?;
        zip.add_streamed(&format!("data/{}", self.next), size, open()?).map_err(|e| e.for_tensor(info.name()))?;
        self.next += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.next != self.plan.len() {
            return Err(Error::usage(format!("writer finished after {} of {} tensors", self.next, self.plan.len())));
        }
        let mut zip = self.zip.take().ok_or_else(|| Error::usage("writer already finished"))?;
        zip.add("version", b"3\n")?;
        zip.add(".format_version", b"1")?;
        zip.add(".storage_alignment", b"64")?;
        zip.finish()?;
        Ok(())
    }
}
