//! Quantization into ggml's block types, bit for bit as ggml's `ggml_quantize_chunk`.

// Called by the quantizer's dispatch, which lives with the other block types; until then only
// the tests reach it.
#[allow(dead_code)]
mod iq_grid;
