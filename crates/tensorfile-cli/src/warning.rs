//! Warnings: what a command says on stderr about work it did anyway.

/// A warning on stderr (`tensorfile: warning: ...`).
pub fn warn(message: impl std::fmt::Display) {
    eprintln!("tensorfile: warning: {message}");
}
