//! The library's integration tests, one module per subject, in one test binary (one link of
//! the library instead of one per file). The remote tests keep their own binary
//! (`tests/remote.rs`): their servers are process-wide.

mod common;

mod access;
mod architecture;
mod cast;
mod conformance;
mod convert;
mod convert_pieces;
mod dequantize;
mod diagnose;
mod diff_metrics;
mod executorch;
mod fixtures;
mod fuzz_regressions;
mod gguf;
mod gguf_split;
mod hdf5_datasets;
mod hdf5_files;
mod hdf5_wild;
mod hf_gguf;
mod keras;
mod layouts;
mod meta;
mod numpy_fixtures;
mod onnx_fixtures;
mod onnx_hostile;
mod onnx_update;
mod ptd;
mod pte_hostile;
mod public_api;
mod pytorch;
mod quantize_plan;
mod ranged_reads;
mod read_rows;
mod report;
mod rules_everywhere;
mod safetensors;
mod select;
mod shards;
mod show;
mod stats;
mod torch_hostile;
mod xnnpack;
mod zt1;
mod zt2;
mod zt2_canonical;
mod zt2_common;
mod zt2_write;
mod zt_hostile;
mod zt_reference;
mod zt_roundtrip;
mod zt_sparse;
