//! The modules of a crate, read from its files, and the items a user of the crate can name:
//! from the root, through public modules and `pub use` re-exports (globs too), each item once
//! under its shortest path (the first in alphabetical order among the shortest).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::items::{ModuleSource, module_source};
use super::tokens::tokens_of;

/// Where a name leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Module(usize),
    /// The module that declares the item, and its index there.
    Item(usize, usize),
}

struct Module {
    parent: Option<usize>,
    source: ModuleSource,
    /// Name, public, hidden, the child module's index.
    children: Vec<(String, bool, bool, usize)>,
}

/// A crate's modules, the root first.
pub(crate) struct Crate {
    modules: Vec<Module>,
}

impl Crate {
    /// Reads the crate whose root file is `root`: the modules it declares, in files (`name.rs`,
    /// `name/mod.rs`, `#[path]`) or inline, and those its macros declare.
    pub(crate) fn read(root: &Path, files: &dyn SourceFiles) -> Crate {
        let mut krate = Crate { modules: Vec::new() };
        let text = files.text(root).unwrap_or_else(|| panic!("{}: no such file", root.display()));
        let source = module_source(&tokens_of(&text), &[]);
        let dir = root.parent().unwrap().to_path_buf();
        krate.add(source, &dir, &dir, None, files);
        krate
    }

    fn add(
        &mut self,
        mut source: ModuleSource,
        file_dir: &Path,
        children_dir: &Path,
        parent: Option<usize>,
        files: &dyn SourceFiles,
    ) -> usize {
        let id = self.modules.len();
        let declarations = std::mem::take(&mut source.modules);
        let switched_off = source.switched_off;
        self.modules.push(Module { parent, source, children: Vec::new() });
        if switched_off {
            self.modules[id].source = ModuleSource::default();
            return id;
        }
        for decl in declarations {
            let child = match decl.inline {
                Some(inline) => self.add(inline, file_dir, &children_dir.join(&decl.name), Some(id), files),
                None => {
                    let candidates = match &decl.path_attribute {
                        Some(path) => vec![file_dir.join(path)],
                        None => vec![
                            children_dir.join(format!("{}.rs", decl.name)),
                            children_dir.join(&decl.name).join("mod.rs"),
                        ],
                    };
                    let (file, text) = candidates
                        .iter()
                        .find_map(|f| files.text(f).map(|t| (f.clone(), t)))
                        .unwrap_or_else(|| panic!("module {}: none of {candidates:?}", decl.name));
                    let own_dir = file.parent().unwrap().to_path_buf();
                    let its_children = if decl.path_attribute.is_some() || file.ends_with("mod.rs") {
                        own_dir.clone()
                    } else {
                        own_dir.join(&decl.name)
                    };
                    let seen = self.modules[id].source.macros.clone();
                    self.add(module_source(&tokens_of(&text), &seen), &own_dir, &its_children, Some(id), files)
                }
            };
            self.modules[id].children.push((decl.name, decl.public, decl.hidden, child));
        }
        id
    }

    /// What `name` names in module `m` (items, modules, imports; any visibility).
    fn resolve_name(&self, m: usize, name: &str, busy: &mut BTreeSet<(usize, String)>) -> BTreeSet<Target> {
        let mut found = BTreeSet::new();
        if !busy.insert((m, name.to_string())) {
            return found;
        }
        let module = &self.modules[m];
        found.extend(
            module.source.items.iter().enumerate().filter(|(_, i)| i.name == name).map(|(k, _)| Target::Item(m, k)),
        );
        found.extend(module.children.iter().filter(|c| c.0 == name).map(|c| Target::Module(c.3)));
        for decl in &module.source.uses {
            if decl.path.last().is_some_and(|l| l == "*") {
                for target in self.resolve_path(m, &decl.path[..decl.path.len() - 1], busy) {
                    if let Target::Module(t) = target {
                        found.extend(self.resolve_name(t, name, busy));
                    }
                }
            } else if leaf_name(&decl.path, &decl.alias) == name {
                found.extend(self.resolve_path(m, &decl.path, busy));
            }
        }
        busy.remove(&(m, name.to_string()));
        found
    }

    /// What a path names from module `m` (`crate::`, `self::`, `super::` or a name in `m`).
    fn resolve_path(&self, m: usize, path: &[String], busy: &mut BTreeSet<(usize, String)>) -> BTreeSet<Target> {
        let mut current: BTreeSet<Target> = BTreeSet::from([Target::Module(m)]);
        for (k, segment) in path.iter().enumerate() {
            let modules: Vec<usize> = current
                .iter()
                .filter_map(|t| match t {
                    Target::Module(x) => Some(*x),
                    Target::Item(..) => None,
                })
                .collect();
            current = match segment.as_str() {
                "crate" if k == 0 => BTreeSet::from([Target::Module(0)]),
                "self" => modules.iter().map(|x| Target::Module(*x)).collect(),
                "super" => modules.iter().filter_map(|x| self.modules[*x].parent).map(Target::Module).collect(),
                name => modules.iter().flat_map(|x| self.resolve_name(*x, name, busy)).collect(),
            };
        }
        current
    }

    /// The names module `m` lets users name, and where each leads (public, not hidden).
    fn exports(&self, m: usize, busy: &mut BTreeSet<usize>) -> BTreeSet<(String, Target)> {
        let mut out = BTreeSet::new();
        if !busy.insert(m) {
            return out;
        }
        let module = &self.modules[m];
        for (k, item) in module.source.items.iter().enumerate() {
            if item.public && !item.hidden {
                out.insert((item.name.clone(), Target::Item(m, k)));
            }
        }
        for (name, public, hidden, child) in &module.children {
            if *public && !hidden {
                out.insert((name.clone(), Target::Module(*child)));
            }
        }
        for decl in module.source.uses.iter().filter(|u| u.public && !u.hidden) {
            let mut names = BTreeSet::new();
            if decl.path.last().is_some_and(|l| l == "*") {
                for target in self.resolve_path(m, &decl.path[..decl.path.len() - 1], &mut names) {
                    if let Target::Module(t) = target {
                        out.extend(self.exports(t, busy));
                    }
                }
            } else {
                let name = leaf_name(&decl.path, &decl.alias);
                let targets = self.resolve_path(m, &decl.path, &mut names);
                out.extend(targets.into_iter().filter(|t| self.is_public(*t)).map(|t| (name.to_string(), t)));
            }
        }
        busy.remove(&m);
        out
    }

    fn is_public(&self, target: Target) -> bool {
        match target {
            Target::Item(m, k) => self.modules[m].source.items[k].public,
            Target::Module(_) => true,
        }
    }

    /// One line per item a user can name, `kind path`, sorted; `root` is the crate's name.
    pub(crate) fn public_items(&self, root: &str) -> Vec<String> {
        let mut best: BTreeMap<Target, (usize, String)> = BTreeMap::new();
        let mut queue: BTreeSet<(usize, String, usize)> = BTreeSet::from([(1, root.to_string(), 0)]);
        let mut expanded = BTreeSet::new();
        while let Some((depth, path, m)) = queue.pop_first() {
            if !expanded.insert(m) {
                continue;
            }
            for (name, target) in self.exports(m, &mut BTreeSet::new()) {
                let candidate = (depth + 1, format!("{path}::{name}"));
                if best.get(&target).is_none_or(|b| candidate < *b) {
                    best.insert(target, candidate.clone());
                }
                if let Target::Module(child) = target {
                    queue.insert((candidate.0, candidate.1, child));
                }
            }
        }
        let mut lines = BTreeSet::new();
        for (target, (_, path)) in &best {
            match *target {
                Target::Module(_) => {
                    lines.insert(format!("mod {path}"));
                }
                Target::Item(m, k) => {
                    let item = &self.modules[m].source.items[k];
                    lines.insert(format!("{} {path}", item.kind));
                    lines.extend(item.members.iter().map(|(kind, name)| format!("{kind} {path}::{name}")));
                }
            }
        }
        for (m, module) in self.modules.iter().enumerate() {
            for block in &module.source.impls {
                for target in self.resolve_path(m, &block.type_path, &mut BTreeSet::new()) {
                    if let (Target::Item(..), Some((_, path))) = (target, best.get(&target)) {
                        lines.extend(block.members.iter().map(|(kind, name)| format!("{kind} {path}::{name}")));
                    }
                }
            }
        }
        lines.into_iter().collect()
    }
}

/// The name a `use` leaf brings in: its alias, or its last segment (`a::b::self` brings `b`).
fn leaf_name<'a>(path: &'a [String], alias: &'a Option<String>) -> &'a str {
    match (alias, path) {
        (Some(alias), _) => alias,
        (None, [.., before, last]) if last == "self" => before,
        (None, [.., last]) => last,
        (None, []) => "",
    }
}

/// Where the crate's files are read from.
pub(crate) trait SourceFiles {
    /// A file's text, or `None` when there is no such file.
    fn text(&self, path: &Path) -> Option<String>;
}

/// The files on disk.
pub(crate) struct Disk;

impl SourceFiles for Disk {
    fn text(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// Files in memory: path to text.
impl SourceFiles for BTreeMap<&str, &str> {
    fn text(&self, path: &Path) -> Option<String> {
        self.get(path.to_str()?).map(|t| t.to_string())
    }
}
