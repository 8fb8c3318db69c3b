//! ggml's tensor types: their numbers in GGUF files, names, and block geometry.

use crate::model::DType;

macro_rules! ggml_types {
    ($($variant:ident = $id:literal, $name:literal, $elems:literal, $bytes:literal, $plain:expr;)*) => {
        /// A ggml tensor type, as GGUF files number it. Plain types (F32, I8...) store one
        /// element per unit; the others store blocks of elements with their scales.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        #[allow(non_camel_case_types)]
        pub enum GgmlType {
            $(
                #[doc = concat!("`", $name, "` (type ", stringify!($id), ")")]
                $variant,
            )*
        }

        impl GgmlType {
            /// Every type, in order of its number.
            pub const ALL: &'static [GgmlType] = &[$(GgmlType::$variant),*];

            /// The type's number in a GGUF file.
            pub fn id(self) -> u32 {
                match self { $(GgmlType::$variant => $id),* }
            }

            /// The type with this number.
            pub fn from_id(id: u32) -> Option<GgmlType> {
                match id { $($id => Some(GgmlType::$variant),)* _ => None }
            }

            /// ggml's name, upper case (`Q4_K`).
            pub fn name(self) -> &'static str {
                match self { $(GgmlType::$variant => $name),* }
            }

            /// Elements one block encodes (1 for plain types).
            pub fn block_elements(self) -> u64 {
                match self { $(GgmlType::$variant => $elems),* }
            }

            /// Bytes of one block (the element size for plain types).
            pub fn block_bytes(self) -> u64 {
                match self { $(GgmlType::$variant => $bytes),* }
            }

            /// The ordinary dtype of a plain type; `None` for block-quantized types.
            pub fn plain(self) -> Option<DType> {
                match self { $(GgmlType::$variant => $plain),* }
            }
        }
    };
}

// Numbers and block sizes are ggml's (ggml.h `enum ggml_type` and its type traits).
ggml_types! {
    F32 = 0, "F32", 1, 4, Some(DType::Float32);
    F16 = 1, "F16", 1, 2, Some(DType::Float16);
    Q4_0 = 2, "Q4_0", 32, 18, None;
    Q4_1 = 3, "Q4_1", 32, 20, None;
    Q5_0 = 6, "Q5_0", 32, 22, None;
    Q5_1 = 7, "Q5_1", 32, 24, None;
    Q8_0 = 8, "Q8_0", 32, 34, None;
    Q8_1 = 9, "Q8_1", 32, 40, None;
    Q2_K = 10, "Q2_K", 256, 84, None;
    Q3_K = 11, "Q3_K", 256, 110, None;
    Q4_K = 12, "Q4_K", 256, 144, None;
    Q5_K = 13, "Q5_K", 256, 176, None;
    Q6_K = 14, "Q6_K", 256, 210, None;
    Q8_K = 15, "Q8_K", 256, 292, None;
    IQ2_XXS = 16, "IQ2_XXS", 256, 66, None;
    IQ2_XS = 17, "IQ2_XS", 256, 74, None;
    IQ3_XXS = 18, "IQ3_XXS", 256, 98, None;
    IQ1_S = 19, "IQ1_S", 256, 50, None;
    IQ4_NL = 20, "IQ4_NL", 32, 18, None;
    IQ3_S = 21, "IQ3_S", 256, 110, None;
    IQ2_S = 22, "IQ2_S", 256, 82, None;
    IQ4_XS = 23, "IQ4_XS", 256, 136, None;
    I8 = 24, "I8", 1, 1, Some(DType::Int8);
    I16 = 25, "I16", 1, 2, Some(DType::Int16);
    I32 = 26, "I32", 1, 4, Some(DType::Int32);
    I64 = 27, "I64", 1, 8, Some(DType::Int64);
    F64 = 28, "F64", 1, 8, Some(DType::Float64);
    IQ1_M = 29, "IQ1_M", 256, 56, None;
    BF16 = 30, "BF16", 1, 2, Some(DType::BFloat16);
    TQ1_0 = 34, "TQ1_0", 256, 54, None;
    TQ2_0 = 35, "TQ2_0", 256, 66, None;
    MXFP4 = 39, "MXFP4", 32, 17, None;
    NVFP4 = 40, "NVFP4", 64, 36, None;
    Q1_0 = 41, "Q1_0", 128, 18, None;
    Q2_0 = 42, "Q2_0", 64, 18, None;
}

impl GgmlType {
    /// The plain type that stores `dtype`, when GGUF has one.
    pub fn for_dtype(dtype: DType) -> Option<GgmlType> {
        GgmlType::ALL.iter().copied().find(|t| t.plain() == Some(dtype))
    }

    /// Whether the type stores blocks of quantized elements.
    pub fn is_quantized(self) -> bool {
        self.plain().is_none()
    }

    /// The lower-case name used in layout names (`q4_k`, zTensor's `gguf.q4_k/1`).
    pub fn lower_name(self) -> String {
        self.name().to_ascii_lowercase()
    }

    /// The type with this name, in either case.
    pub fn from_name(name: &str) -> Option<GgmlType> {
        GgmlType::ALL.iter().copied().find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// `values`, rows of `n_per_row` elements, quantized into this type bit for bit as ggml's
    /// `ggml_quantize_chunk` quantizes them, with `importance` (one weight per column: a
    /// tensor's row of an importance matrix) or without; large inputs on the library's threads
    /// ([`crate::set_threads`]). Errors where ggml cannot quantize into the type, where rows are
    /// not whole blocks, and without importance for the types that need it (IQ2_XXS, IQ2_XS,
    /// IQ1_S), each with its rule.
    pub fn quantize(self, values: &[f32], n_per_row: usize, importance: Option<&[f32]>) -> crate::Result<Vec<u8>> {
        super::ggml::quantize::quantize(self, values, n_per_row, importance)
    }
}
