//! The command line's tests, one module per command (run as one test binary: one link of
//! the library instead of one per command). The binary is the one cargo builds for this
//! package; the helpers that run it are in `common`.

#[path = "../common/mod.rs"]
mod common;

mod cast;
mod checkpoint;
mod convert;
mod diagnose;
mod diff;
mod dump;
mod exit_codes;
mod externalize;
mod extract;
mod generate;
mod gguf_split;
mod info;
mod ls;
mod meta;
mod quantize;
mod quantize_options;
mod report;
mod rewritten;
mod select;
mod shards;
mod shells;
mod show;
mod stats;
mod torchscript;
mod verify;
mod verify_on_load;
