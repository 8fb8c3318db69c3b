//! The items of one module's token trees: what it declares, with the visibility the source
//! gives each, the modules it declares, its `use` lines and its inherent `impl` blocks. Items
//! a build without tests and without the feature `internals` leaves out are dropped here.

use super::macros::expand;
use super::tokens::Token;

/// A `macro_rules!` macro: its name and its rules.
pub(crate) type Macro = (String, Vec<Token>);

/// What one module's source declares.
#[derive(Debug, Default)]
pub(crate) struct ModuleSource {
    pub(crate) items: Vec<Item>,
    pub(crate) modules: Vec<ModuleDecl>,
    pub(crate) uses: Vec<UseDecl>,
    pub(crate) impls: Vec<InherentImpl>,
    /// Set by an inner `#![cfg(...)]` that is off: the module is not built.
    pub(crate) switched_off: bool,
    /// The macros its children see: those it saw, and those it defines.
    pub(crate) macros: Vec<Macro>,
}

/// A named item: `fn`, `struct`, `enum`, `union`, `trait`, `const`, `static`, `type`.
#[derive(Debug)]
pub(crate) struct Item {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) public: bool,
    pub(crate) hidden: bool,
    /// Public fields (`field`), variants (`variant`), a trait's own items (`method`, `const`,
    /// `type`).
    pub(crate) members: Vec<(&'static str, String)>,
}

/// `mod name;` or `mod name { ... }`.
#[derive(Debug)]
pub(crate) struct ModuleDecl {
    pub(crate) name: String,
    pub(crate) public: bool,
    pub(crate) hidden: bool,
    pub(crate) path_attribute: Option<String>,
    pub(crate) inline: Option<ModuleSource>,
}

/// One leaf of a `use` tree: `a::b::C as D` is path `[a, b, C]`, alias `D`; a glob ends in `*`.
#[derive(Debug)]
pub(crate) struct UseDecl {
    pub(crate) public: bool,
    pub(crate) hidden: bool,
    pub(crate) path: Vec<String>,
    pub(crate) alias: Option<String>,
}

/// `impl Type { ... }`: the type's path as written, and its public methods and consts.
#[derive(Debug)]
pub(crate) struct InherentImpl {
    pub(crate) type_path: Vec<String>,
    pub(crate) members: Vec<(&'static str, String)>,
}

/// What the attributes before an item say.
#[derive(Debug, Default)]
struct Attributes {
    switched_off: bool,
    hidden: bool,
    path: Option<String>,
}

/// The module source of a file's (or an inline module's, or a macro's) token trees, where the
/// macros `seen` (defined above it) are in scope.
pub(crate) fn module_source(tokens: &[Token], seen: &[Macro]) -> ModuleSource {
    let mut module = ModuleSource { macros: seen.to_vec(), ..ModuleSource::default() };
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i].is_punct('#') && tokens.get(i + 1).is_some_and(|t| t.is_punct('!')) {
            if let Some(Token::Group('[', inner)) = tokens.get(i + 2) {
                let mut attributes = Attributes::default();
                read_attribute(inner, &mut attributes);
                module.switched_off |= attributes.switched_off;
            }
            i += 3;
            continue;
        }
        let (attributes, after) = attributes_at(tokens, i);
        let (public, after) = visibility_at(tokens, after);
        let (keyword, after) = skip_qualifiers(tokens, after);
        i = after + 1;
        let Some(keyword) = keyword else { continue };
        let name = tokens.get(after + 1).and_then(Token::ident).unwrap_or("").to_string();
        let keep = !attributes.switched_off;
        match keyword {
            "mod" => {
                let inline = match tokens.get(after + 2) {
                    Some(Token::Group('{', inner)) => Some(module_source(inner, &module.macros)),
                    _ => None,
                };
                if keep {
                    let path_attribute = attributes.path.clone();
                    module.modules.push(ModuleDecl { name, public, hidden: attributes.hidden, path_attribute, inline });
                }
                i = after + 3;
            }
            "use" => {
                let end = statement_end(tokens, after + 1);
                if keep {
                    let mut leaves = Vec::new();
                    use_tree(&tokens[after + 1..end], Vec::new(), &mut leaves);
                    for (path, alias) in leaves {
                        module.uses.push(UseDecl { public, hidden: attributes.hidden, path, alias });
                    }
                }
                i = end + 1;
            }
            "impl" => {
                let (impl_block, end) = inherent_impl(tokens, after + 1);
                if let (Some(impl_block), true) = (impl_block, keep) {
                    module.impls.push(impl_block);
                }
                i = end;
            }
            "macro_rules" => {
                // `macro_rules! name { (matcher) => { template }; ... }`: kept to expand below.
                let name = tokens.get(after + 2).and_then(Token::ident).unwrap_or("").to_string();
                if let Some(Token::Group(_, rules)) = tokens.get(after + 3) {
                    module.macros.push((name, rules.clone()));
                }
                i = after + 4;
            }
            "fn" | "struct" | "enum" | "union" | "trait" | "const" | "static" | "type" => {
                let name_at = after + 1 + usize::from(keyword == "static" && tokens[after + 1].is_ident("mut"));
                let name = tokens.get(name_at).and_then(Token::ident).unwrap_or("_").to_string();
                let (members, end) = members_of(keyword, tokens, name_at + 1);
                if keep && name != "_" {
                    let kind = ["fn", "struct", "enum", "union", "trait", "const", "static", "type"]
                        .into_iter()
                        .find(|k| *k == keyword)
                        .unwrap_or("item");
                    module.items.push(Item { kind, name, public, hidden: attributes.hidden, members });
                }
                i = end;
            }
            word => {
                // A macro invoked as an item (`name! { ... }`), expanded when it is in scope.
                if tokens.get(after + 1).is_some_and(|t| t.is_punct('!')) {
                    let rules = module.macros.iter().rev().find(|(m, _)| m == word).map(|(_, r)| r.clone());
                    let expanded = match (rules, tokens.get(after + 2)) {
                        (Some(rules), Some(Token::Group(_, input))) => expand(&rules, input),
                        _ => None,
                    };
                    if let Some(expanded) = expanded {
                        let expanded = module_source(&expanded, &module.macros);
                        module.items.extend(expanded.items);
                        module.modules.extend(expanded.modules);
                        module.uses.extend(expanded.uses);
                        module.impls.extend(expanded.impls);
                    }
                    i = after + 3;
                }
            }
        }
    }
    module
}

/// The attributes from `at`, and the index after them.
fn attributes_at(tokens: &[Token], mut at: usize) -> (Attributes, usize) {
    let mut attributes = Attributes::default();
    while tokens.get(at).is_some_and(|t| t.is_punct('#')) {
        if let Some(Token::Group('[', inner)) = tokens.get(at + 1) {
            read_attribute(inner, &mut attributes);
        }
        at += 2;
    }
    (attributes, at)
}

fn read_attribute(inner: &[Token], attributes: &mut Attributes) {
    match (inner.first().and_then(Token::ident), inner.get(1)) {
        (Some("cfg"), Some(Token::Group('(', predicate))) => attributes.switched_off |= !cfg_holds(predicate),
        (Some("doc"), Some(Token::Group('(', args))) => attributes.hidden |= args.iter().any(|t| t.is_ident("hidden")),
        (Some("path"), _) => {
            if let Some(Token::Str(path)) = inner.get(2) {
                attributes.path = Some(path.clone());
            }
        }
        _ => {}
    }
}

/// Whether a `cfg(...)` predicate holds in a user's build: default features (`remote`), not
/// `test`, not `internals`, on Linux. Anything else it does not know holds.
pub(crate) fn cfg_holds(predicate: &[Token]) -> bool {
    let parts: Vec<&[Token]> = predicate.split(|t| t.is_punct(',')).filter(|p| !p.is_empty()).collect();
    let Some(first) = parts.first() else { return true };
    let args = |p: &[Token]| match p.get(1) {
        Some(Token::Group('(', inner)) => inner.clone(),
        _ => Vec::new(),
    };
    let value = match first.get(2) {
        Some(Token::Str(s)) => Some(s.as_str()),
        _ => None,
    };
    match (first[0].ident(), value) {
        (Some("not"), _) => !cfg_holds(&args(first)),
        (Some("any"), _) => split_args(&args(first)).iter().any(|p| cfg_holds(p)),
        (Some("all"), _) => split_args(&args(first)).iter().all(|p| cfg_holds(p)),
        (Some("test"), _) => false,
        (Some("feature"), Some(feature)) => feature == "remote",
        (Some("target_os"), Some(os)) => os == "linux",
        (Some("windows"), _) => false,
        _ => true,
    }
}

fn split_args(tokens: &[Token]) -> Vec<Vec<Token>> {
    tokens.split(|t| t.is_punct(',')).filter(|p| !p.is_empty()).map(<[Token]>::to_vec).collect()
}

/// `pub` (public), `pub(crate)` and the like (not), or nothing; and the index after it.
fn visibility_at(tokens: &[Token], at: usize) -> (bool, usize) {
    if !tokens.get(at).is_some_and(|t| t.is_ident("pub")) {
        return (false, at);
    }
    match tokens.get(at + 1) {
        Some(Token::Group('(', _)) => (false, at + 2),
        _ => (true, at + 1),
    }
}

/// The item's keyword after `const`, `unsafe`, `async`, `extern "C"`, `default`, with its
/// index.
fn skip_qualifiers(tokens: &[Token], mut at: usize) -> (Option<&str>, usize) {
    loop {
        let word = tokens.get(at).and_then(Token::ident);
        let next = tokens.get(at + 1);
        let qualifier = match word {
            Some("unsafe" | "async" | "default" | "auto") => next.is_some_and(|t| t.ident().is_some()),
            Some("const") => next.is_some_and(|t| ["fn", "unsafe", "async", "extern"].iter().any(|w| t.is_ident(w))),
            Some("extern") => matches!(next, Some(Token::Str(_))) || next.is_some_and(|t| t.is_ident("fn")),
            _ => false,
        };
        if !qualifier {
            return (word, at);
        }
        at += if word == Some("extern") && matches!(next, Some(Token::Str(_))) { 2 } else { 1 };
    }
}

/// The index of the `;` ending a statement that starts at `at` (or the end).
fn statement_end(tokens: &[Token], at: usize) -> usize {
    (at..tokens.len()).find(|&k| tokens[k].is_punct(';')).unwrap_or(tokens.len())
}

/// The leaves of a `use` tree.
fn use_tree(tokens: &[Token], mut prefix: Vec<String>, leaves: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut k = 0;
    while k < tokens.len() {
        match &tokens[k] {
            Token::Ident(word) if word == "as" => {
                let alias = tokens.get(k + 1).and_then(Token::ident).map(str::to_string);
                leaves.push((std::mem::take(&mut prefix), alias));
                return;
            }
            Token::Ident(word) => prefix.push(word.clone()),
            Token::Punct('*') => prefix.push("*".into()),
            Token::Group('{', inner) => {
                for part in inner.split(|t| t.is_punct(',')).filter(|p| !p.is_empty()) {
                    use_tree(part, prefix.clone(), leaves);
                }
                return;
            }
            _ => {}
        }
        k += 1;
    }
    if !prefix.is_empty() {
        leaves.push((prefix, None));
    }
}

/// The `impl` block whose header starts at `at`, when it is inherent, and the index after it.
fn inherent_impl(tokens: &[Token], at: usize) -> (Option<InherentImpl>, usize) {
    let mut k = at;
    let mut angles = 0i32;
    let mut header = Vec::new();
    while k < tokens.len() {
        match &tokens[k] {
            Token::Group('{', _) if angles == 0 => break,
            Token::Punct(';') if angles == 0 => return (None, k + 1),
            t => {
                angles += i32::from(t.is_punct('<')) - i32::from(t.is_punct('>'));
                header.push((angles, t));
            }
        }
        k += 1;
    }
    let Some(Token::Group(_, body)) = tokens.get(k) else { return (None, k) };
    // Past the impl's own generics (`impl<T>`), before `where`: the type, or `Trait for Type`.
    let start = if header.first().is_some_and(|(_, t)| t.is_punct('<')) {
        header.iter().position(|(a, _)| *a == 0).map_or(header.len(), |p| p + 1)
    } else {
        0
    };
    let end = header.iter().position(|(a, t)| *a == 0 && t.is_ident("where")).unwrap_or(header.len());
    let type_tokens = &header[start.min(end)..end];
    let is_trait_impl = type_tokens.iter().enumerate().any(|(n, (a, t))| {
        *a == 0 && t.is_ident("for") && !type_tokens.get(n + 1).is_some_and(|(_, t)| t.is_punct('<'))
    });
    if is_trait_impl {
        return (None, k + 1);
    }
    let type_path: Vec<String> = type_tokens
        .iter()
        .take_while(|(_, t)| !t.is_punct('<'))
        .filter_map(|(_, t)| t.ident().filter(|w| !["dyn", "mut"].contains(w)).map(str::to_string))
        .collect();
    (Some(InherentImpl { type_path, members: associated_items(body, true) }), k + 1)
}

/// The `fn`s, `const`s and `type`s of an impl body (`only_pub`: those marked `pub`) or of a
/// trait's (all public).
fn associated_items(body: &[Token], only_pub: bool) -> Vec<(&'static str, String)> {
    let mut members = Vec::new();
    let mut k = 0;
    while k < body.len() {
        let (attributes, after) = attributes_at(body, k);
        let (public, after) = visibility_at(body, after);
        let (keyword, after) = skip_qualifiers(body, after);
        let kind = match keyword {
            Some("fn") => Some("method"),
            Some("const") => Some("const"),
            Some("type") => Some("type"),
            _ => None,
        };
        let name = body.get(after + 1).and_then(Token::ident);
        if let (Some(kind), Some(name)) = (kind, name) {
            if (public || !only_pub) && !attributes.switched_off && !attributes.hidden {
                members.push((kind, name.to_string()));
            }
            let (_, end) = members_of("fn", body, after + 2);
            k = end;
        } else {
            k = after + 1;
        }
    }
    members
}

/// The members of an item whose header continues at `at` (fields, variants, a trait's items),
/// and the index after the item.
fn members_of(keyword: &str, tokens: &[Token], at: usize) -> (Vec<(&'static str, String)>, usize) {
    if ["const", "static", "type"].contains(&keyword) {
        return (Vec::new(), statement_end(tokens, at) + 1);
    }
    let mut angles = 0i32;
    let mut k = at;
    while k < tokens.len() {
        let t = &tokens[k];
        angles += i32::from(t.is_punct('<')) - i32::from(t.is_punct('>'));
        match t {
            Token::Punct(';') if angles <= 0 => return (Vec::new(), k + 1),
            Token::Group('{', body) if angles <= 0 => {
                let members = match keyword {
                    "struct" | "union" => fields(body, false),
                    "enum" => variants(body),
                    "trait" => associated_items(body, false),
                    _ => Vec::new(),
                };
                return (members, k + 1);
            }
            Token::Group('(', body) if angles <= 0 && keyword == "struct" => {
                let members = fields(body, true);
                return (members, statement_end(tokens, k) + 1);
            }
            _ => {}
        }
        k += 1;
    }
    (Vec::new(), k)
}

/// The public fields of a struct's `{ ... }` (or, `tuple`, its `( ... )`).
fn fields(body: &[Token], tuple: bool) -> Vec<(&'static str, String)> {
    let mut parts = Vec::new();
    let (mut start, mut angles) = (0, 0i32);
    for (k, t) in body.iter().enumerate() {
        angles += i32::from(t.is_punct('<')) - i32::from(t.is_punct('>'));
        if t.is_punct(',') && angles == 0 {
            parts.push(&body[start..k]);
            start = k + 1;
        }
    }
    parts.push(&body[start..]);
    let mut members = Vec::new();
    for (index, part) in parts.iter().filter(|p| !p.is_empty()).enumerate() {
        let (attributes, after) = attributes_at(part, 0);
        let (public, after) = visibility_at(part, after);
        let name =
            if tuple { Some(index.to_string()) } else { part.get(after).and_then(Token::ident).map(str::to_string) };
        if let (true, false, false, Some(name)) = (public, attributes.switched_off, attributes.hidden, name) {
            members.push(("field", name));
        }
    }
    members
}

/// The variants of an enum's `{ ... }`.
fn variants(body: &[Token]) -> Vec<(&'static str, String)> {
    let mut members = Vec::new();
    for part in body.split(|t| t.is_punct(',')) {
        let (attributes, after) = attributes_at(part, 0);
        if let (false, false, Some(name)) =
            (attributes.switched_off, attributes.hidden, part.get(after).and_then(Token::ident))
        {
            members.push(("variant", name.to_string()));
        }
    }
    members
}
