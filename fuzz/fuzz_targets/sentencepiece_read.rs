//! Any bytes read as a SentencePiece model (`tokenizer.model`, a protobuf `ModelProto`): an
//! error, or pieces each with its text, score and type; never a panic, a hang or an allocation
//! the input cannot justify.
#![no_main]
// fuzz-smoke: seeds *.model
// fuzz-smoke: max-len 65536

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    tensorfile::internals::exercise_sentencepiece(data);
});
