//! Convert a Hugging Face checkpoint folder into GGUF as llama.cpp's converter does, with
//! Hugging Face's tokenizers library for a BPE vocabulary:
//! `cargo run -p tensorfile-tokenizers --example convert_checkpoint -- DIR OUT.gguf`.

use std::path::PathBuf;

use tensorfile::llama::CheckpointOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, out] = args.as_slice() else {
        return Err("usage: convert_checkpoint DIR OUT.gguf".into());
    };
    let options = CheckpointOptions { tokenizers: Some(&tensorfile_tokenizers::HF_TOKENIZERS), ..Default::default() };
    let done = tensorfile::llama::convert_checkpoint(&PathBuf::from(dir), &PathBuf::from(out), &options, &mut |_| {})?;
    println!("{} tensors, {} bytes of tensor data ({})", done.tensors.len(), done.bytes, done.architecture);
    Ok(())
}
