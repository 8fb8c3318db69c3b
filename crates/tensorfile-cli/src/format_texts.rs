//! The texts of the command line that name formats, made from the library's registry
//! ([`Format::ALL`]): a format added there is named here with no change.

use tensorfile::Format;

/// "Read, check, convert and compare tensor files without running their code: zTensor v0.1
/// (.zt), ...": the program's description, naming every format and those `update` rewrites.
pub fn about() -> String {
    let named = |f: &Format| format!("{} ({})", f.unit().title(), dotted(f.unit().extensions()).join(", "));
    let all: Vec<String> = Format::ALL.iter().map(named).collect();
    let updatable: Vec<&str> = Format::ALL.iter().filter(|f| f.unit().can_update()).map(|f| f.unit().title()).collect();
    format!(
        "Read, check, convert and compare tensor files without running their code: {}. \
         `update` rewrites the weights of: {}.",
        all.join(", "),
        updatable.join(", ")
    )
}

/// The extensions of the formats that can be written (`.zt`, `.safetensors`...), each once,
/// in the registry's order: what `convert` picks an output's format by.
pub fn writable_extensions() -> Vec<String> {
    let mut extensions: Vec<String> = Vec::new();
    for format in Format::ALL.iter().filter(|f| f.unit().can_write()) {
        for ext in dotted(format.unit().extensions()) {
            if !extensions.contains(&ext) {
                extensions.push(ext);
            }
        }
    }
    extensions
}

/// `convert`'s help with its first sentence, which names the extensions it writes, put
/// before the rest (its doc comment).
pub fn convert_help(command: clap::Command) -> clap::Command {
    let first =
        format!("Convert a file to the format its output extension names ({}).", writable_extensions().join(", "));
    let about = command.get_about().map_or_else(|| first.clone(), |rest| format!("{first} {rest}"));
    let long_about = command.get_long_about().map(|rest| format!("{first} {rest}"));
    match long_about {
        Some(long_about) => command.about(about).long_about(long_about),
        None => command.about(about),
    }
}

/// Extensions with their dot.
fn dotted(extensions: &[&str]) -> Vec<String> {
    extensions.iter().map(|e| format!(".{e}")).collect()
}
