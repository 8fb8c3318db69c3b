//! A model's parameter count by dtype, and the size its tensors would take at other widths:
//! what `tensorfile info` adds to a file's facts.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};

use crate::{DType, Kind, TensorFile};

/// The widths [`Parameters::size_at`] gives sizes at: a name and bits per element.
pub const WIDTHS: [(&str, u64); 4] = [("float32", 32), ("float16", 16), ("float8", 8), ("int4", 4)];

/// Elements of a file's tensors by dtype, and what its entries would take at other widths.
#[derive(Debug, Clone, Default)]
pub struct Parameters {
    /// Elements per dtype (its name), or for a quantized tensor per quantization scheme
    /// (`ggml.q4_k`...), counting its logical elements.
    pub by_dtype: BTreeMap<String, u64>,
    /// Elements of every tensor.
    pub total: u64,
    /// For each of [`WIDTHS`], the bytes of every readable entry if its floating-point and
    /// quantized tensors were stored at that width (each tensor rounded up to a whole byte);
    /// integer, bool and complex tensors and blobs count as they are.
    pub size_at: Vec<(&'static str, u64)>,
}

/// Whether a tensor of `dtype` would change width with the model's floats.
fn scales(dtype: DType) -> bool {
    dtype.is_float() || matches!(dtype, DType::Float4E2M1Fn | DType::Float4E2M1FnX2)
}

impl Parameters {
    /// The counts of `file`'s readable entries (from its index: no data is read). Tensors
    /// whose element count overflows are left out.
    pub fn of(file: &TensorFile) -> Parameters {
        let mut p = Parameters { size_at: WIDTHS.iter().map(|&(n, _)| (n, 0)).collect(), ..Parameters::default() };
        for e in file.entries() {
            let info = e.info();
            let numel = match info.numel() {
                Ok(n) if info.kind() == Kind::Tensor => n,
                _ => {
                    for (_, bytes) in &mut p.size_at {
                        *bytes = bytes.saturating_add(e.nbytes());
                    }
                    continue;
                }
            };
            let (key, scaled) = match info.layout().quant() {
                Some(_) => (info.layout().describe(), true),
                None => (info.dtype().name().to_string(), scales(info.dtype())),
            };
            let count = p.by_dtype.entry(key).or_insert(0);
            *count = count.saturating_add(numel);
            p.total = p.total.saturating_add(numel);
            for ((_, bytes), &(_, bits)) in p.size_at.iter_mut().zip(&WIDTHS) {
                let at = if scaled { numel.saturating_mul(bits).div_ceil(8) } else { e.nbytes() };
                *bytes = bytes.saturating_add(at);
            }
        }
        p
    }

    /// `{"total": N, "by_dtype": {...}, "size_at": {"float32": bytes, ...}}`.
    pub fn to_json(&self) -> Json {
        let by: Map<String, Json> = self.by_dtype.iter().map(|(k, n)| (k.clone(), json!(n))).collect();
        let at: Map<String, Json> = self.size_at.iter().map(|(k, n)| (k.to_string(), json!(n))).collect();
        json!({ "total": self.total, "by_dtype": by, "size_at": at })
    }
}
