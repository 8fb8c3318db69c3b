//! TorchScript archives (`torch.jit.save`): the zip of a `torch.save` file with `constants.pkl`
//! and the model's code (`code/<module path>.py`) beside `data.pkl`. `data.pkl` pickles the
//! scripted module as objects of the archive's own classes (`__torch__.<qualname>`), each
//! built (never run) with its attributes as its state; tensors are persistent ids into `data/`
//! as in a `torch.save` file.
//!
//! The tensors listed are those `torch.jit.load(path).state_dict()` gives, named as it names
//! them: each module's parameters, then its buffers, then its submodules' (dotted, `layers.0.
//! weight`), a tensor reachable under two names (tied weights) under both. Which attributes
//! are parameters, buffers or submodules the pickle does not say: the class's code does
//! (`__parameters__ = [...]`, `__buffers__ = [...]`, `class X(Module):`), and only those two
//! lists and the header are read of it; nothing is run. Tensors that are not in the state
//! dict (plain tensor attributes, tensors inside other attributes, `constants.pkl`'s) are
//! counted for `info`, not listed.

use std::collections::{HashMap, HashSet};

use super::flatten::Flattened;
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_NESTING, MAX_PICKLE_METADATA};
use crate::pickle::{Container, Pickled, Value};
use crate::zip::Archive;

/// Whether an opened `torch.save`-like zip is a TorchScript archive: it has `constants.pkl`.
pub(super) fn is_script(archive: &Archive) -> bool {
    archive.record("constants.pkl").is_some()
}

/// What the code says of one class.
#[derive(Debug, Clone, Default)]
struct ClassDef {
    /// `class X(Module):`: a module, whose submodules state dicts recurse into.
    module: bool,
    parameters: Vec<String>,
    buffers: Vec<String>,
}

/// What the archive holds beyond its state dict, for `info`.
#[derive(Debug, Default)]
pub(super) struct ScriptFacts {
    /// The records under `code/` (the model's code, never run).
    pub code: Vec<String>,
    /// Records under `constants/` (tensors of `constants.pkl`, referenced by the code).
    pub constants: usize,
    /// Names of tensors reachable from the module that are not in its state dict.
    pub other_tensors: Vec<String>,
}

/// What [`state_dict`] finds.
pub(super) struct ScriptState {
    /// The tensors of the state dict, named.
    pub flat: Flattened,
    /// Parameters and buffers whose value is neither a tensor nor `None`, with why.
    pub unreadable: Vec<(String, Error)>,
    pub facts: ScriptFacts,
}

/// The state dict of the scripted module in `value` (`data.pkl`), and the facts `info`
/// shows. `budget` bounds the walk (a shared submodule is walked once per name, as
/// `state_dict` does).
pub(super) fn state_dict(archive: &Archive, value: &Pickled, budget: usize) -> Result<ScriptState> {
    let mut w = Walker {
        archive,
        arena: &value.arena,
        classes: HashMap::new(),
        out: Flattened::default(),
        unreadable: Vec::new(),
        names: HashSet::new(),
        others: Vec::new(),
        budget,
    };
    let Some((class, _)) = w.instance(&value.root) else {
        return Err(Error::invalid(
            Rule::BadPickle,
            format!("data.pkl holds a {}, not a scripted module", value.root.kind(&value.arena)),
        ));
    };
    if !w.class(&class)?.module {
        return Err(Error::invalid(
            Rule::BadPickle,
            format!("data.pkl holds an object of {}, which is not a module", class.0.clone() + "." + &class.1),
        ));
    }
    w.module(&value.root, "", 0)?;
    let code = archive.records_under("code/").into_iter().filter(|n| n.ends_with(".py")).collect();
    let facts = ScriptFacts { code, constants: archive.records_under("constants/").len(), other_tensors: w.others };
    Ok(ScriptState { flat: w.out, unreadable: w.unreadable, facts })
}

type Class = std::rc::Rc<(String, String)>;

struct Walker<'a> {
    archive: &'a Archive,
    arena: &'a [Container],
    /// Class definitions read so far, by `module.name`.
    classes: HashMap<String, ClassDef>,
    out: Flattened,
    unreadable: Vec<(String, Error)>,
    names: HashSet<String>,
    others: Vec<String>,
    budget: usize,
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
}

fn qualname(class: &Class) -> String {
    format!("{}.{}", class.0, class.1)
}

impl<'a> Walker<'a> {
    /// One step of the walk, refused once the pickle's size is spent, or too deep.
    fn step(&mut self, depth: usize) -> Result<()> {
        self.budget = self.budget.checked_sub(1).ok_or_else(|| {
            Error::invalid(Rule::TooManyEntries, "the scripted module repeats far more than its size allows")
        })?;
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("modules nested deeper than {MAX_NESTING}")));
        }
        Ok(())
    }

    /// The class and state of an object of the archive's classes.
    fn instance(&self, v: &Value) -> Option<(Class, Option<&'a Value>)> {
        let arena = self.arena;
        match v {
            Value::Container(id) => match arena.get(*id) {
                Some(Container::Instance { class, state }) => Some((class.clone(), state.as_ref())),
                _ => None,
            },
            _ => None,
        }
    }

    /// What the code says of `class`: read from `code/<module path>.py` once.
    fn class(&mut self, class: &Class) -> Result<ClassDef> {
        let name = qualname(class);
        if let Some(def) = self.classes.get(&name) {
            return Ok(def.clone());
        }
        // Classes bound from C++ (`torch.classes.*`: packed quantized weights...) have no code;
        // they are no modules.
        let def = if class.0 == "__torch__.torch.classes" || class.0.starts_with("__torch__.torch.classes.") {
            ClassDef::default()
        } else {
            let record = format!("code/{}.py", class.0.replace('.', "/"));
            let text = self
                .archive
                .read_text(&record)?
                .ok_or_else(|| Error::invalid(Rule::MissingField, format!("class {name}: no {record} defines it")))?;
            parse_class(&text, &class.1)
                .map_err(|e| e.within(format!("{record}: class {}", class.1), Rule::BadField))?
        };
        self.classes.insert(name, def.clone());
        Ok(def)
    }

    /// The state dict of the module `v` under `prefix`: its parameters, its buffers, then its
    /// submodules', in the order of its attributes.
    fn module(&mut self, v: &Value, prefix: &str, depth: usize) -> Result<()> {
        self.step(depth)?;
        let Some((class, state)) = self.instance(v) else { return Ok(()) };
        let def = self.class(&class)?;
        let what = if prefix.is_empty() { "the scripted module".to_string() } else { format!("module {prefix}") };
        let pairs = match state {
            Some(Value::Container(id)) => match self.arena.get(*id) {
                Some(Container::Dict(pairs)) => pairs.as_slice(),
                _ => return Err(not_a_dict(&what, &class, state, self.arena)),
            },
            _ => return Err(not_a_dict(&what, &class, state, self.arena)),
        };
        let mut attributes = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let k = k.as_str().ok_or_else(|| {
                Error::invalid(
                    Rule::BadPickle,
                    format!("{what} ({}): an attribute named by a {}", qualname(&class), k.kind(self.arena)),
                )
            })?;
            attributes.push((k, v));
        }
        for list in [&def.parameters, &def.buffers] {
            for &(k, v) in &attributes {
                if list.iter().any(|p| p == k) {
                    self.tensor(join(prefix, k), v);
                }
            }
        }
        for &(k, v) in &attributes {
            if def.parameters.iter().chain(&def.buffers).any(|p| p == k) {
                continue;
            }
            let name = join(prefix, k);
            match self.instance(v) {
                Some((sub, _)) if self.class(&sub)?.module => self.module(v, &name, depth + 1)?,
                _ => self.others(v, name, depth + 1)?,
            }
        }
        Ok(())
    }

    /// A parameter or buffer: a tensor is listed; `None` (an unset optional one) is not, as
    /// in `state_dict`; anything else is listed unreadable.
    fn tensor(&mut self, name: String, v: &Value) {
        match v {
            Value::Tensor(t) => {
                if self.names.insert(name.clone()) {
                    self.out.tensors.push((name, (**t).clone()));
                } else {
                    self.out.duplicates.push(name);
                }
            }
            Value::None => {}
            other => {
                let kind = other.kind(self.arena);
                let error = Error::invalid(Rule::BadPickle, format!("a parameter or buffer that is a {kind}"));
                self.unreadable.push((name, error));
            }
        }
    }

    /// Tensors reachable from an attribute that is no parameter, buffer or submodule: noted.
    fn others(&mut self, v: &Value, name: String, depth: usize) -> Result<()> {
        self.step(depth)?;
        match v {
            Value::Tensor(_) if self.others.len() < MAX_PICKLE_METADATA => self.others.push(name),
            Value::Container(id) => match self.arena.get(*id) {
                Some(Container::Dict(pairs)) => {
                    for (k, v) in pairs {
                        let key = match k {
                            Value::Str(s) => s.to_string(),
                            Value::Int(i) => i.to_string(),
                            other => format!("<{}>", other.kind(self.arena)),
                        };
                        self.others(v, join(&name, &key), depth + 1)?;
                    }
                }
                Some(Container::List(items) | Container::Tuple(items) | Container::Set(items)) => {
                    for (i, v) in items.iter().enumerate() {
                        self.others(v, join(&name, &i.to_string()), depth + 1)?;
                    }
                }
                Some(Container::Instance { state: Some(state), .. }) => self.others(state, name, depth + 1)?,
                Some(Container::Instance { state: None, .. }) | None => {}
            },
            _ => {}
        }
        Ok(())
    }
}

fn not_a_dict(what: &str, class: &Class, state: Option<&Value>, arena: &[Container]) -> Error {
    let kind = state.map_or("nothing (no BUILD)", |s| s.kind(arena));
    Error::invalid(
        Rule::BadPickle,
        format!("{what} ({}): its state is {kind}, not a dict of attributes", qualname(class)),
    )
}

/// The definition of class `name` in a code file: whether it derives from `Module`, and the
/// names its `__parameters__` and `__buffers__` lists hold. Only these lines are read.
fn parse_class(text: &str, name: &str) -> Result<ClassDef> {
    let mut lines = text.lines();
    let header = lines
        .by_ref()
        .find(|l| {
            l.strip_prefix("class ")
                .and_then(|r| r.strip_prefix(name))
                .is_some_and(|r| r.starts_with('(') || r.starts_with(':'))
        })
        .ok_or_else(|| Error::invalid(Rule::MissingField, "not defined there"))?;
    let base = header.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(b, _)| b.trim());
    let mut def = ClassDef { module: base == Some("Module"), ..ClassDef::default() };
    for line in lines.take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('\t')) {
        let line = line.trim();
        if let Some(list) = line.strip_prefix("__parameters__ = ") {
            def.parameters = names(list)?;
        } else if let Some(list) = line.strip_prefix("__buffers__ = ") {
            def.buffers = names(list)?;
        }
    }
    Ok(def)
}

/// `["a", "b", ]`: the names of a list literal of strings, as TorchScript prints them.
fn names(list: &str) -> Result<Vec<String>> {
    let bad = || Error::invalid(Rule::BadField, format!("{list:?} is not a list of names"));
    let inner = list.strip_prefix('[').and_then(|l| l.strip_suffix(']')).ok_or_else(bad)?;
    let mut out = Vec::new();
    for item in inner.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let name = item
            .strip_prefix('"')
            .and_then(|i| i.strip_suffix('"'))
            .or_else(|| item.strip_prefix('\'').and_then(|i| i.strip_suffix('\'')))
            .filter(|n| !n.contains(['"', '\'', '\\']))
            .ok_or_else(bad)?;
        out.push(name.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_definitions_say_parameters_buffers_and_modules() {
        let code = "class Other(Module):\n  __parameters__ = [\"x\", ]\nclass Linear(Module):\n  \
                    __parameters__ = [\"weight\", \"bias\", ]\n  __buffers__ = []\n  weight : Tensor\n  \
                    def forward(self: __torch__.Linear) -> Tensor:\n    return self.weight\n\
                    class Holder:\n  t : Tensor\n";
        let def = parse_class(code, "Linear").unwrap();
        assert!(def.module);
        assert_eq!(def.parameters, ["weight", "bias"]);
        assert!(def.buffers.is_empty());
        let holder = parse_class(code, "Holder").unwrap();
        assert!(!holder.module && holder.parameters.is_empty());
        assert_eq!(parse_class(code, "Lin").unwrap_err().rule(), Some(Rule::MissingField));
        let bad = "class A(Module):\n  __parameters__ = [\"a\", b]\n";
        assert_eq!(parse_class(bad, "A").unwrap_err().rule(), Some(Rule::BadField));
        assert_eq!(names("[]").unwrap(), Vec::<String>::new());
        assert_eq!(names("['0', ]").unwrap(), ["0"]);
        assert!(names("[\"a\\\"\"]").is_err());
    }
}
