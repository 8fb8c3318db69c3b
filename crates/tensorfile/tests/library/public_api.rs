//! The library's public surface, counted: every item a user of the crate `tensorfile` can
//! name (modules, types, functions, constants, and the methods, fields and variants of public
//! types) is listed in `public-api.txt`, so that the API grows or shrinks only on purpose.
//! The list is read from the source text (a scanner of its own, stable Rust, no rustdoc):
//! `UPDATE_PUBLIC_API=1 cargo test -p tensorfile --test library public_api` rewrites it.

mod items;
mod macros;
mod surface;
mod tokens;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use surface::{Crate, Disk};

/// The committed list, next to this file.
const LIST: &str = "tests/library/public-api.txt";

const HEADER: &str = "\
# The public API of the crate `tensorfile`: one line per item a user can name (`kind path`),
# each under its shortest public path, read from the source by tests/library/public_api.rs.
# Listed: public modules, items (fn, struct, enum, union, trait, const, static, type), the
# `pub` fields, variants and trait items of public types, and the `pub` methods and consts of
# their inherent impls. Not listed: items only in test builds (`cfg(test)`) or with the
# feature `internals` (the `internals` module, `internal_modules!`), `#[doc(hidden)]` items,
# `pub(crate)`-like ones, trait impls. Macros of the crate are expanded (`registry!` declares
# `Format`); macros of other crates are not.
# Update after a deliberate change: UPDATE_PUBLIC_API=1 cargo test -p tensorfile --test library public_api
";

/// The lines of the library's public API, as the scanner reads them today.
fn library_surface() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs");
    Crate::read(&root, &Disk).public_items("tensorfile")
}

/// How many lines of each kind.
fn counts(lines: &[String]) -> String {
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for line in lines {
        *by_kind.entry(line.split(' ').next().unwrap_or("")).or_default() += 1;
    }
    let parts: Vec<String> = by_kind.iter().map(|(kind, n)| format!("{n} {kind}")).collect();
    format!("{} items ({})", lines.len(), parts.join(", "))
}

#[test]
fn the_public_api_is_the_committed_list() {
    let current = library_surface();
    let list_path = Path::new(env!("CARGO_MANIFEST_DIR")).join(LIST);
    if std::env::var_os("UPDATE_PUBLIC_API").is_some() {
        let text = format!("{HEADER}{}\n", current.join("\n"));
        std::fs::write(&list_path, text).unwrap();
        println!("{LIST} rewritten: {}", counts(&current));
        return;
    }
    let committed_text = std::fs::read_to_string(&list_path).unwrap_or_default();
    let committed: BTreeSet<&str> = committed_text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    let now: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    let added: Vec<&str> = now.difference(&committed).copied().collect();
    let removed: Vec<&str> = committed.difference(&now).copied().collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "the public API differs from {LIST} ({} lines there; now {}):\n{}{}\nIf the change is meant, run \
         UPDATE_PUBLIC_API=1 cargo test -p tensorfile --test library public_api and commit the list.",
        committed.len(),
        counts(&current),
        added.iter().map(|l| format!("+ {l}\n")).collect::<String>(),
        removed.iter().map(|l| format!("- {l}\n")).collect::<String>(),
    );
}

/// The scanner's rules on a made-up crate: a private module (declared by a macro) whose items
/// are re-exported at the root (listed there, once), a public module's items, a glob, a
/// `#[path]`, an enum a macro declares, test-only, internals-only, hidden and `pub(crate)`
/// items (not listed), inherent methods listed, trait impls not.
#[test]
fn the_scanner_follows_the_rules_of_reach() {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "src/lib.rs",
            r#"
            macro_rules! private_modules {
                ($($name:ident),+) => {
                    $(
                        #[cfg(feature = "internals")]
                        pub mod $name;
                        #[cfg(not(feature = "internals"))]
                        pub(crate) mod $name;
                    )+
                };
            }
            private_modules!(engine);
            pub mod shapes;
            #[cfg(feature = "internals")]
            pub mod internals;
            pub use engine::{Engine, start as begin};
            pub use shapes::Circle;
            /// Not for users.
            #[doc(hidden)]
            pub fn secret() {}
            "#,
        ),
        (
            "src/engine.rs",
            r#"
            pub struct Engine { pub power: u32, speed: u32, pub(crate) gear: u8 }
            impl Engine {
                pub fn run(&self) -> Result<(), String> { let c = '{'; let s = "}"; Ok(()) }
                pub(crate) fn tune(&mut self) {}
                fn idle(&self) {}
                pub const MAX: u32 = 1 << 8;
                #[cfg(test)]
                pub fn only_in_tests() {}
            }
            impl std::fmt::Debug for Engine {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }
            }
            pub fn start() {}
            pub(crate) fn stop() {}
            #[cfg(test)]
            mod tests { pub fn helper() {} }
            "#,
        ),
        (
            "src/shapes/mod.rs",
            r#"
            #[path = "circle.rs"]
            mod round;
            pub use round::*;
            macro_rules! colours {
                ($($(#[$doc:meta])* $name:ident => $value:expr,)+) => {
                    pub enum Colour { $($(#[$doc])* $name = $value,)+ }
                };
            }
            colours! {
                #[doc = "Red."]
                Red => 1 << 2,
                Blue => 2,
            }
            pub use self::round::Sides;
            pub enum Kind { Flat, #[doc(hidden)] Hidden, Round(u8) }
            #[cfg(any(test, feature = "internals"))]
            pub const DEBUG: bool = true;
            "#,
        ),
        ("src/shapes/circle.rs", "pub struct Circle(pub f64, f64);\npub trait Sides { fn sides(&self) -> u32; }\n"),
    ]);
    let lines = Crate::read(Path::new("src/lib.rs"), &files).public_items("demo");
    let expected = [
        "const demo::Engine::MAX",
        "field demo::Circle::0",
        "field demo::Engine::power",
        "fn demo::begin",
        "method demo::Engine::run",
        "method demo::shapes::Sides::sides",
        "mod demo::shapes",
        "struct demo::Circle",
        "struct demo::Engine",
        "trait demo::shapes::Sides",
        "enum demo::shapes::Colour",
        "enum demo::shapes::Kind",
        "variant demo::shapes::Colour::Blue",
        "variant demo::shapes::Colour::Red",
        "variant demo::shapes::Kind::Flat",
        "variant demo::shapes::Kind::Round",
    ];
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(lines, expected);
}
