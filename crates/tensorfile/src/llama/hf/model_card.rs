//! The model card: the YAML front matter of a checkpoint's `README.md` as gguf-py's
//! `Metadata.load_model_card` reads it, and the `general.*` values its
//! `apply_metadata_heuristic` takes from it (names, licence, tags, languages, base models,
//! datasets).
//!
//! The YAML is parsed by `yaml-rust2` (events only) and its values built here as PyYAML's
//! `safe_load` builds them (YAML 1.1): plain scalars resolved by PyYAML's implicit resolvers
//! (`yes`/`no`/`on`/`off` booleans, `~`/`null`, integers with `0b`/`0x`/octal/`_`/sexagesimal
//! forms, floats with `.inf`/`.nan`, timestamps, validated as PyYAML's constructors validate
//! them), duplicate keys keeping the last value. gguf-py writes a card value only when it is a
//! string (or a list of strings for the licence, tags and languages), skips one Python holds
//! false, and fails on any other: so a non-string value is reduced to its truth value, and one
//! gguf-py would fail on (or write as a non-string array) is refused.
//!
//! Refused as well, rather than read differently: explicit tags other than `!!str`, merge keys
//! (`<<`), a second document, collections as keys, characters PyYAML's reader rejects, front
//! matter over [`MAX_FRONT_MATTER`] bytes, nesting deeper than [`MAX_DEPTH`], and aliases
//! expanding past [`MAX_NODES`] nodes.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::LazyLock;

use regex_lite::Regex;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

use super::metadata::{ModelMetadata, id_to_title, name_components};
use crate::error::{Error, Result};
use crate::model::{MetaValue, Number};

/// The largest front matter read (bytes of YAML); more is refused.
pub(crate) const MAX_FRONT_MATTER: usize = 1 << 20;
/// The largest `README.md` read (gguf-py decodes all of it); more is refused.
const MAX_README: u64 = 64 << 20;
/// The deepest nesting of collections read.
pub(crate) const MAX_DEPTH: usize = 64;
/// The most nodes a card may hold once its aliases are expanded.
pub(crate) const MAX_NODES: usize = 1 << 20;

/// A YAML value as PyYAML's `safe_load` constructs it, reduced to what gguf-py looks at.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Yaml {
    /// `None`.
    Null,
    /// A `str`.
    Str(String),
    /// Another scalar (`bool`, `int`, `float`, `date`, `datetime`): its type's name and Python
    /// truth value.
    Other(&'static str, bool),
    /// A `list`.
    Seq(Vec<Yaml>),
    /// A `dict`: string keys by name, other (hashable) keys as `None`.
    Map(Vec<(Option<String>, Yaml)>),
}

impl Yaml {
    /// Python's truth value.
    fn truthy(&self) -> bool {
        match self {
            Yaml::Null => false,
            Yaml::Str(s) => !s.is_empty(),
            Yaml::Other(_, t) => *t,
            Yaml::Seq(v) => !v.is_empty(),
            Yaml::Map(v) => !v.is_empty(),
        }
    }

    /// The Python type's name, for messages.
    fn type_name(&self) -> &'static str {
        match self {
            Yaml::Null => "None",
            Yaml::Str(_) => "str",
            Yaml::Other(name, _) => name,
            Yaml::Seq(_) => "list",
            Yaml::Map(_) => "dict",
        }
    }

    /// How many nodes the value holds.
    fn nodes(&self) -> usize {
        match self {
            Yaml::Seq(v) => 1 + v.iter().map(Yaml::nodes).sum::<usize>(),
            Yaml::Map(v) => 1 + v.iter().map(|(_, y)| y.nodes()).sum::<usize>(),
            _ => 1,
        }
    }
}

/// The model card's front matter as a `dict` (empty when there is none or it is not a mapping).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Card {
    /// The mapping's entries.
    entries: Vec<(Option<String>, Yaml)>,
}

impl Card {
    /// The value of a string key.
    fn get(&self, key: &str) -> Option<&Yaml> {
        get(&self.entries, key)
    }
}

/// The value of the string key `key` of a mapping.
fn get<'a>(entries: &'a [(Option<String>, Yaml)], key: &str) -> Option<&'a Yaml> {
    entries.iter().find(|(k, _)| k.as_deref() == Some(key)).map(|(_, v)| v)
}

/// A base model or dataset entry (`general.base_model.{i}.*`, `general.dataset.{i}.*`), each
/// field written only when set and not empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Source {
    /// `name`.
    pub(crate) name: Option<String>,
    /// `author`.
    pub(crate) author: Option<String>,
    /// `version`.
    pub(crate) version: Option<String>,
    /// `organization`.
    pub(crate) organization: Option<String>,
    /// `description`.
    pub(crate) description: Option<String>,
    /// `url`.
    pub(crate) url: Option<String>,
    /// `doi`.
    pub(crate) doi: Option<String>,
    /// `uuid`.
    pub(crate) uuid: Option<String>,
    /// `repo_url`.
    pub(crate) repo_url: Option<String>,
}

/// The fields of a [`Source`] by key, in the order gguf-py writes them.
const SOURCE_KEYS: [&str; 9] =
    ["name", "author", "version", "organization", "description", "url", "doi", "uuid", "repo_url"];

impl Source {
    /// The fields in [`SOURCE_KEYS`] order.
    fn fields_mut(&mut self) -> [&mut Option<String>; 9] {
        [
            &mut self.name,
            &mut self.author,
            &mut self.version,
            &mut self.organization,
            &mut self.description,
            &mut self.url,
            &mut self.doi,
            &mut self.uuid,
            &mut self.repo_url,
        ]
    }

    /// Appends the `general.{kind}.{i}.*` pairs (`kind`: `base_model` or `dataset`).
    fn push_kvs(&self, kvs: &mut Vec<(String, MetaValue)>, kind: &str, i: usize) {
        let fields = [
            &self.name,
            &self.author,
            &self.version,
            &self.organization,
            &self.description,
            &self.url,
            &self.doi,
            &self.uuid,
            &self.repo_url,
        ];
        for (key, value) in SOURCE_KEYS.iter().zip(fields) {
            if let Some(s) = value.as_deref().filter(|s| !s.is_empty()) {
                kvs.push((format!("general.{kind}.{i}.{key}"), MetaValue::Text(s.to_string())));
            }
        }
    }
}

/// Appends `general.{kind}.count` (`uint32`) and each entry's pairs, when the list is set.
pub(crate) fn push_sources(kvs: &mut Vec<(String, MetaValue)>, kind: &str, sources: Option<&[Source]>) {
    let Some(sources) = sources else { return };
    let count = u32::try_from(sources.len()).unwrap_or(u32::MAX);
    kvs.push((format!("general.{kind}.count"), MetaValue::Number(Number::U32(count))));
    for (i, s) in sources.iter().enumerate() {
        s.push_kvs(kvs, kind, i);
    }
}

/// The refusal of something in `README.md`'s front matter.
fn refuse(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!("{}: the model card's YAML front matter: {what}", path.display()))
}

/// gguf-py's `load_model_card`: the front matter of `dir/README.md` (no folder, no file, no
/// front matter, YAML that is not a mapping: an empty card).
pub(crate) fn load(dir: &Path) -> Result<Card> {
    let path = dir.join("README.md");
    if !dir.is_dir() || !path.is_file() {
        return Ok(Card::default());
    }
    let mut bytes = Vec::new();
    let file = std::fs::File::open(&path).map_err(|e| Error::from(e).in_file(&path))?;
    file.take(MAX_README + 1).read_to_end(&mut bytes).map_err(|e| Error::from(e).in_file(&path))?;
    if bytes.len() as u64 > MAX_README {
        return Err(refuse(&path, format_args!("README.md is over {MAX_README} bytes")));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::unsupported(format!("{}: the model card is not UTF-8, which gguf-py fails on", path.display()))
    })?;
    let Some(yaml) = front_matter(&text) else { return Ok(Card::default()) };
    parse_card(&yaml).map_err(|why| refuse(&path, why))
}

/// The YAML gguf-py hands to PyYAML: the lines after a first line `---` up to the next `---`
/// line, `\n`-joined, the "Norway problem" patched (`- no` quoted) and tabs made two spaces.
/// `None`: no front matter.
pub(crate) fn front_matter(text: &str) -> Option<String> {
    let lines = python_splitlines(text);
    if lines.first() != Some(&"---") {
        return None;
    }
    let mut yaml = lines[1..].iter().take_while(|l| **l != "---").copied().collect::<Vec<_>>().join("\n");
    yaml.push('\n');
    Some(yaml.replace("- no\n", "- \"no\"\n").replace('\t', "  "))
}

/// The lines of `text` as Python's `str.splitlines` cuts them (after reading in text mode, which
/// only turns `\r\n` and `\r` into `\n`, both already line ends here).
pub(crate) fn python_splitlines(text: &str) -> Vec<&str> {
    let is_end = |c: char| {
        matches!(c, '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}')
    };
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(is_end) {
        lines.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { rest[at..].chars().next().map_or(1, char::len_utf8) };
        rest = &rest[at + skip..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    lines
}

/// Whether PyYAML's reader accepts the character (its `NON_PRINTABLE` complement, less the BOM,
/// which this does not place as PyYAML does).
fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && c != '\u{feff}'
}

/// `yaml.safe_load` of the front matter, then gguf-py's "not a dict: empty"; the error says why
/// the YAML is refused.
pub(crate) fn parse_card(yaml: &str) -> std::result::Result<Card, String> {
    if yaml.len() > MAX_FRONT_MATTER {
        return Err(format!("it is over {MAX_FRONT_MATTER} bytes"));
    }
    if let Some(c) = yaml.chars().find(|c| !printable(*c)) {
        return Err(format!("it holds the character {c:?}, which PyYAML refuses"));
    }
    match parse_yaml(yaml)? {
        Yaml::Map(entries) => Ok(Card { entries }),
        _ => Ok(Card::default()),
    }
}

/// A collection being built.
enum Open {
    /// A sequence, its anchor and items.
    Seq(usize, Vec<Yaml>),
    /// A mapping, its anchor, entries and the key awaiting its value.
    Map(usize, Vec<(Option<String>, Yaml)>, Option<Option<String>>),
}

/// The single document of a YAML stream as PyYAML's `safe_load` constructs it (`Null` for none).
pub(crate) fn parse_yaml(yaml: &str) -> std::result::Result<Yaml, String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut anchors: HashMap<usize, Yaml> = HashMap::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut nodes = 0usize;
    let mut root: Option<Yaml> = None;
    let mut documents = 0;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| format!("YAML error: {e}"))?;
        let complete = match event {
            Event::StreamEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => continue,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err("it holds more than one YAML document, which PyYAML's safe_load refuses".into());
                }
                continue;
            }
            Event::Alias(id) => {
                let value = anchors
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| format!("an alias at line {} refers to an open node", mark.line()))?;
                nodes += value.nodes();
                value
            }
            Event::Scalar(text, style, anchor, tag) => {
                nodes += 1;
                let value = scalar(text, style, tag.as_ref())?;
                if anchor != 0 {
                    anchors.insert(anchor, value.clone());
                }
                value
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                let seq = matches!(event, Event::SequenceStart(..));
                check_collection_tag(tag.as_ref(), seq)?;
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("it nests collections deeper than {MAX_DEPTH}"));
                }
                nodes += 1;
                stack.push(if seq { Open::Seq(anchor, Vec::new()) } else { Open::Map(anchor, Vec::new(), None) });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (anchor, value) = match stack.pop() {
                    Some(Open::Seq(anchor, items)) => (anchor, Yaml::Seq(items)),
                    Some(Open::Map(anchor, entries, None)) => (anchor, Yaml::Map(entries)),
                    _ => return Err("YAML error: unbalanced collection".into()),
                };
                if anchor != 0 {
                    anchors.insert(anchor, value.clone());
                }
                value
            }
        };
        if nodes > MAX_NODES {
            return Err(format!("it holds more than {MAX_NODES} nodes (aliases expanded)"));
        }
        match stack.last_mut() {
            None => root = Some(complete),
            Some(Open::Seq(_, items)) => items.push(complete),
            Some(Open::Map(_, entries, pending)) => match pending.take() {
                None => *pending = Some(key(complete)?),
                Some(k) => insert(entries, k, complete),
            },
        }
    }
    Ok(root.unwrap_or(Yaml::Null))
}

/// A mapping key as Python holds it: a string by name, another scalar as `None`; collections
/// (unhashable) and merge keys are refused.
fn key(value: Yaml) -> std::result::Result<Option<String>, String> {
    match value {
        Yaml::Str(s) => Ok(Some(s)),
        Yaml::Null | Yaml::Other(..) => Ok(None),
        Yaml::Seq(_) | Yaml::Map(_) => Err("a mapping key is a collection, which PyYAML refuses (unhashable)".into()),
    }
}

/// Python's `d[k] = v`: a string key already present keeps its place and takes the new value.
fn insert(entries: &mut Vec<(Option<String>, Yaml)>, k: Option<String>, v: Yaml) {
    if k.is_some() {
        if let Some(slot) = entries.iter_mut().find(|(old, _)| *old == k) {
            slot.1 = v;
            return;
        }
    }
    entries.push((k, v));
}

/// Whether a tag is `tag:yaml.org,2002:{name}` (written `!!{name}` or in full).
fn is_core_tag(tag: &Tag, name: &str) -> bool {
    (tag.handle == "!!" || tag.handle == "tag:yaml.org,2002:") && tag.suffix == name
}

/// Refuses a collection's tag other than its own core tag.
fn check_collection_tag(tag: Option<&Tag>, seq: bool) -> std::result::Result<(), String> {
    match tag {
        None => Ok(()),
        Some(t) if is_core_tag(t, if seq { "seq" } else { "map" }) => Ok(()),
        Some(t) => Err(format!("the tag {}{} is not read", t.handle, t.suffix)),
    }
}

/// A scalar as PyYAML constructs it: quoted, block and `!!str` scalars are strings, plain ones
/// resolved by PyYAML's implicit resolvers.
fn scalar(text: String, style: TScalarStyle, tag: Option<&Tag>) -> std::result::Result<Yaml, String> {
    match tag {
        Some(t) if is_core_tag(t, "str") => return Ok(Yaml::Str(text)),
        Some(t) => return Err(format!("the tag {}{} is not read", t.handle, t.suffix)),
        None => {}
    }
    if style != TScalarStyle::Plain {
        return Ok(Yaml::Str(text));
    }
    resolve_plain(text)
}

/// A compiled pattern of PyYAML's resolver (written for `regex-lite`).
fn pattern(p: &str) -> Regex {
    Regex::new(p).unwrap_or_else(|e| panic!("pattern {p}: {e}"))
}

/// PyYAML's `bool` resolver.
static BOOL: LazyLock<Regex> =
    LazyLock::new(|| pattern(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"));
/// PyYAML's `float` resolver.
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
    )
});
/// PyYAML's `int` resolver.
static INT: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$",
    )
});
/// PyYAML's `timestamp` resolver.
static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$",
    )
});
/// PyYAML's `construct_yaml_timestamp` pattern.
static TIMESTAMP_PARTS: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"^([0-9][0-9][0-9][0-9])-([0-9][0-9]?)-([0-9][0-9]?)(?:(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9][0-9]):([0-9][0-9])(?:\.[0-9]*)?(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9][0-9]))?))?)?$",
    )
});

/// A plain scalar resolved and constructed as PyYAML's `SafeLoader` does; what PyYAML's
/// constructors fail on is refused.
fn resolve_plain(s: String) -> std::result::Result<Yaml, String> {
    let bad = |what: &str| Err(format!("{s:?} is {what}, which PyYAML fails to construct"));
    if matches!(s.as_str(), "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Yaml::Null);
    }
    if BOOL.is_match(&s) {
        return Ok(Yaml::Other("bool", s.starts_with(['y', 'Y', 't', 'T']) || s == "on" || s == "On" || s == "ON"));
    }
    if FLOAT.is_match(&s) {
        return match float_truth(&s) {
            Some(t) => Ok(Yaml::Other("float", t)),
            None => bad("a float"),
        };
    }
    if INT.is_match(&s) {
        return match int_truth(&s) {
            Some(t) => Ok(Yaml::Other("int", t)),
            None => bad("an int"),
        };
    }
    if s == "<<" || s == "=" {
        return Err(format!("the plain scalar {s:?} (a merge key or value tag) is not read"));
    }
    if TIMESTAMP.is_match(&s) {
        return if timestamp_valid(&s) { Ok(Yaml::Other("datetime", true)) } else { bad("a date") };
    }
    Ok(Yaml::Str(s))
}

/// The truth value of PyYAML's `construct_yaml_int`; `None`: it fails (no digits after `0b`/`0x`).
fn int_truth(s: &str) -> Option<bool> {
    let v: String = s.chars().filter(|c| *c != '_').collect();
    let v = v.trim_start_matches(['-', '+']);
    let digits = v.strip_prefix("0b").or_else(|| v.strip_prefix("0x")).unwrap_or(v);
    if digits.is_empty() {
        return None;
    }
    Some(digits.chars().any(|c| c != '0' && c != ':'))
}

/// The truth value of PyYAML's `construct_yaml_float`; `None`: it fails (`float('.')`).
fn float_truth(s: &str) -> Option<bool> {
    let v: String = s.chars().filter(|c| *c != '_').collect::<String>().to_lowercase();
    let v = v.trim_start_matches(['-', '+']);
    if v == ".inf" || v == ".nan" {
        return Some(true);
    }
    if v.contains(':') {
        // Sexagesimal: every part a float of digits (the last may end with `.`).
        return Some(v.chars().any(|c| c.is_ascii_digit() && c != '0'));
    }
    if !v.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    v.parse::<f64>().ok().map(|x| x != 0.0)
}

/// Whether PyYAML's `construct_yaml_timestamp` builds the date or datetime (`datetime`'s ranges,
/// a time zone within a day).
fn timestamp_valid(s: &str) -> bool {
    let Some(c) = TIMESTAMP_PARTS.captures(s) else { return false };
    let num = |i: usize| c.get(i).map(|m| m.as_str().parse::<u32>().unwrap_or(u32::MAX));
    let (Some(year), Some(month), Some(day)) = (num(1), num(2), num(3)) else { return false };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(1..=9999).contains(&year) || !(1..=days).contains(&day) {
        return false;
    }
    if let Some(hour) = num(4) {
        let (minute, second) = (num(5).unwrap_or(0), num(6).unwrap_or(0));
        if hour > 23 || minute > 59 || second > 59 {
            return false;
        }
        if c.get(8).is_some() {
            let offset = num(9).unwrap_or(0) * 60 + num(10).unwrap_or(0);
            if offset >= 24 * 60 {
                return false;
            }
        }
    }
    true
}

/// A card value for a `general.*` string as gguf-py's writer takes it: `None` (unset, so later
/// heuristics may set it), a string, or `Some("")` for another value Python holds false (set,
/// and skipped by the writer); anything else is refused (the writer fails on it).
fn text_value(v: &Yaml, key: &str) -> Result<Option<String>> {
    match v {
        Yaml::Null => Ok(None),
        Yaml::Str(s) => Ok(Some(s.clone())),
        v if !v.truthy() => Ok(Some(String::new())),
        v => Err(Error::unsupported(format!(
            "README.md: the model card's {key:?} is a {}, not text: gguf-py's writer fails on it",
            v.type_name()
        ))),
    }
}

/// gguf-py's `use_model_card_metadata`: sets `slot` from `key` when the card has it and `slot` is
/// still unset.
fn use_text(slot: &mut Option<String>, card: &Card, key: &str) -> Result<()> {
    if slot.is_none() {
        if let Some(v) = card.get(key) {
            *slot = text_value(v, key)?;
        }
    }
    Ok(())
}

/// gguf-py's `use_array_model_card_metadata`: a string appended, a list's items appended, any
/// other non-null value leaving the (then set) list as it is.
fn use_array(slot: &mut Option<Vec<Yaml>>, card: &Card, key: &str) {
    let Some(v) = card.get(key).filter(|v| **v != Yaml::Null) else { return };
    let list = slot.get_or_insert_with(Vec::new);
    match v {
        Yaml::Str(_) => list.push(v.clone()),
        Yaml::Seq(items) => list.extend(items.iter().cloned()),
        _ => {}
    }
}

/// A list written as a GGUF string array: every item a string, else refused (gguf-py writes a
/// list of booleans or numbers as such an array, and fails on a mixed one).
fn strings(list: Option<Vec<Yaml>>, key: &str) -> Result<Vec<String>> {
    list.unwrap_or_default()
        .into_iter()
        .map(|v| match v {
            Yaml::Str(s) => Ok(s),
            other => Err(Error::unsupported(format!(
                "README.md: the model card's {key:?} holds a {}, which gguf-py does not write as text",
                other.type_name()
            ))),
        })
        .collect()
}

/// The first present key's value, as gguf-py's nested `model_card.get(a, model_card.get(b, ...))`
/// gives it; `None` when no key is present.
fn first_present<'a>(card: &'a Card, keys: &[&str]) -> Option<&'a Yaml> {
    keys.iter().find_map(|k| card.get(k))
}

/// The `org/name` id of a `https?://huggingface.co/org/name` URL (`.` standing for any character,
/// as in gguf-py's pattern).
fn hf_url_id(url: &str) -> Option<&str> {
    static HF: LazyLock<Regex> = LazyLock::new(|| pattern(r"^https?://huggingface.co/([^/]+/[^/]+)$"));
    HF.captures(url).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// A base model or dataset entry from its card value: an id or URL parsed as gguf-py does, a
/// mapping's fields taken as they are, anything else an empty entry.
fn source(entry: &Yaml, kind: &str, total_params: i64) -> Result<Source> {
    let mut s = Source::default();
    match entry {
        Yaml::Str(id) if ["http://", "https://", "ssh://"].iter().any(|p| id.starts_with(p)) => {
            s.repo_url = Some(id.clone());
            if let Some(hf) = id.contains("huggingface.co").then(|| hf_url_id(id)).flatten() {
                let c = name_components(hf, total_params);
                s.name = Some(id_to_title(&c.full_name));
                s.organization = c.organization.as_deref().map(id_to_title);
                s.version = c.version;
            }
        }
        Yaml::Str(id) => {
            let c = name_components(id, total_params);
            s.name = Some(id_to_title(&c.full_name));
            s.organization = c.organization.as_deref().map(id_to_title);
            s.version = c.version;
            s.repo_url = c.organization.map(|org| format!("https://huggingface.co/{org}/{}", c.full_name));
        }
        Yaml::Map(entries) => {
            for (key, slot) in SOURCE_KEYS.iter().zip(s.fields_mut()) {
                if let Some(v) = get(entries, key) {
                    *slot = text_value(v, &format!("{kind}[].{key}"))?;
                }
            }
        }
        _ => {}
    }
    Ok(s)
}

/// gguf-py's `base_model`/`datasets` heuristic: when any of `keys` is present, the list is set
/// (possibly empty) and each entry of the first present key's value (a string or a list) added.
fn sources(slot: &mut Option<Vec<Source>>, card: &Card, keys: &[&str], total_params: i64) -> Result<()> {
    let Some(value) = first_present(card, keys) else { return Ok(()) };
    let entries: &[Yaml] = match value {
        Yaml::Seq(items) => items,
        Yaml::Str(_) => std::slice::from_ref(value),
        _ => &[],
    };
    let list = slot.get_or_insert_with(Vec::new);
    for e in entries {
        list.push(source(e, keys[0], total_params)?);
    }
    Ok(())
}

/// The model card part of gguf-py's `apply_metadata_heuristic`, in its order; it runs before
/// the `_name_or_path` and folder name heuristics, which only fill what is still unset.
pub(crate) fn apply(m: &mut ModelMetadata, card: &Card, total_params: i64) -> Result<()> {
    for prefix in ["", "model_"] {
        let p = |k: &str| format!("{prefix}{k}");
        use_text(&mut m.name, card, &p("name"))?;
        use_text(&mut m.author, card, &p("author"))?;
        use_text(&mut m.version, card, &p("version"))?;
        use_text(&mut m.organization, card, &p("organization"))?;
        use_text(&mut m.description, card, &p("description"))?;
        use_text(&mut m.finetune, card, &p("finetune"))?;
        use_text(&mut m.basename, card, &p("basename"))?;
        use_text(&mut m.size_label, card, &p("size_label"))?;
        use_text(&mut m.source_url, card, &p("url"))?;
        use_text(&mut m.source_doi, card, &p("doi"))?;
        use_text(&mut m.source_uuid, card, &p("uuid"))?;
        use_text(&mut m.source_repo_url, card, &p("repo_url"))?;
    }
    use_text(&mut m.name, card, "model_name")?;
    use_text(&mut m.author, card, "model_creator")?;
    use_text(&mut m.basename, card, "model_type")?;
    sources(&mut m.base_models, card, &["base_model", "base_models", "base_model_sources"], total_params)?;
    sources(&mut m.datasets, card, &["datasets", "dataset", "dataset_sources"], total_params)?;
    if m.license.is_none() {
        m.license = match card.get("license") {
            Some(Yaml::Seq(items)) => Some(strings(Some(items.clone()), "license")?.join(",")),
            Some(v) => text_value(v, "license")?,
            None => None,
        };
    }
    use_text(&mut m.license_name, card, "license_name")?;
    use_text(&mut m.license_link, card, "license_link")?;
    let mut tags = None;
    use_array(&mut tags, card, "tags");
    use_array(&mut tags, card, "pipeline_tag");
    m.tags = strings(tags, "tags")?;
    let mut languages = None;
    use_array(&mut languages, card, "languages");
    use_array(&mut languages, card, "language");
    m.languages = strings(languages, "languages")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TypedArray;

    /// The key/values of `derive` for a folder `name` holding `config` and `readme`, rendered
    /// as the generator printed gguf-py's (`key TYPE json`, one a line), or `ERR`.
    fn render(name: &str, config: &str, readme: &str, total: i64) -> String {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("config.json"), config).unwrap();
        std::fs::write(dir.join("README.md"), readme).unwrap();
        let config: serde_json::Value = serde_json::from_str(config).unwrap();
        let m = match super::super::metadata::derive(&dir, &config, None, total, total, 0, 0) {
            Ok(m) => m,
            Err(e) => return format!("ERR {}", e.message()),
        };
        let lines: Vec<String> = m
            .to_kvs()
            .into_iter()
            .map(|(k, v)| match v {
                MetaValue::Text(s) => format!("{k} STRING {}", serde_json::to_string(&s).unwrap()),
                MetaValue::Number(Number::U32(n)) => format!("{k} UINT32 {n}"),
                MetaValue::TypedArray(TypedArray::Text(v)) => {
                    format!("{k} ARRAY {}", serde_json::to_string(&v).unwrap())
                }
                other => format!("{k} {other:?}"),
            })
            .collect();
        lines.join("\n")
    }

    /// Folder name, `config.json`, `README.md`, total parameters, and what gguf-py's
    /// `Metadata.load` plus the converter's fallbacks wrote through `set_gguf_meta_model` (`ERR`:
    /// gguf-py failed; `REFUSED`: gguf-py wrote a non-text array or read a merge key, which this
    /// refuses).
    const CARDS: &[(&str, &str, &str, i64, &str)] = &[
        (
            "Llama-3.1-8B-Instruct",
            r#"{"_name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}"#,
            "---\nlanguage:\n- en\n- de\n- fr\n- it\n- pt\n- hi\n- es\n- th\nlicense: llama3.1\npipeline_tag: text-generation\ntags:\n- facebook\n- meta\n- pytorch\n- llama\n- llama-3\nbase_model: meta-llama/Meta-Llama-3.1-8B\nextra_gated_prompt: >-\n  ### LLAMA 3.1 COMMUNITY LICENSE AGREEMENT\n\n  Llama 3.1 Version Release Date: July 23, 2024\nextra_gated_fields:\n  First Name: text\n  Date of birth: date_picker\n  Country: country\n  geo: ip_location\n  By clicking Submit below I accept the terms: checkbox\nextra_gated_button_content: Submit\n---\n\n## Model Information\n",
            8030261248,
            "general.name STRING \"Llama 3.1 8B Instruct\"\ngeneral.organization STRING \"Meta Llama\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Llama-3.1\"\ngeneral.size_label STRING \"8B\"\ngeneral.license STRING \"llama3.1\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Meta Llama 3.1 8B\"\ngeneral.base_model.0.organization STRING \"Meta Llama\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/meta-llama/Meta-Llama-3.1-8B\"\ngeneral.tags ARRAY [\"facebook\",\"meta\",\"pytorch\",\"llama\",\"llama-3\",\"text-generation\"]\ngeneral.languages ARRAY [\"en\",\"de\",\"fr\",\"it\",\"pt\",\"hi\",\"es\",\"th\"]",
        ),
        (
            "Qwen2.5-0.5B-Instruct",
            r#"{}"#,
            "---\nlicense: apache-2.0\nlicense_link: https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE\nlanguage:\n- en\npipeline_tag: text-generation\nbase_model: Qwen/Qwen2.5-0.5B\ntags:\n- chat\nlibrary_name: transformers\n---\n\n# Qwen2.5-0.5B-Instruct\n",
            494032768,
            "general.name STRING \"Qwen2.5 0.5B Instruct\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Qwen2.5\"\ngeneral.size_label STRING \"0.5B\"\ngeneral.license STRING \"apache-2.0\"\ngeneral.license.link STRING \"https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/blob/main/LICENSE\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Qwen2.5 0.5B\"\ngeneral.base_model.0.organization STRING \"Qwen\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/Qwen/Qwen2.5-0.5B\"\ngeneral.tags ARRAY [\"chat\",\"text-generation\"]\ngeneral.languages ARRAY [\"en\"]",
        ),
        (
            "Mistral-7B-Instruct-v0.3",
            r#"{"_name_or_path": "mistralai/Mistral-7B-Instruct-v0.3"}"#,
            "---\nlicense: apache-2.0\nbase_model: mistralai/Mistral-7B-v0.3\nextra_gated_description: If you want to learn more about how we process your personal data, please read our <a href=\"https://mistral.ai/terms/\">Privacy Policy</a>.\n---\n\n# Model Card\n",
            7248023552,
            "general.name STRING \"Mistral 7B Instruct v0.3\"\ngeneral.version STRING \"v0.3\"\ngeneral.organization STRING \"Mistralai\"\ngeneral.finetune STRING \"Instruct\"\ngeneral.basename STRING \"Mistral\"\ngeneral.size_label STRING \"7B\"\ngeneral.license STRING \"apache-2.0\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Mistral 7B v0.3\"\ngeneral.base_model.0.version STRING \"v0.3\"\ngeneral.base_model.0.organization STRING \"Mistralai\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/mistralai/Mistral-7B-v0.3\"",
        ),
        (
            "my-finetune",
            r#"{}"#,
            "---\nbase_model:\n- meta-llama/Llama-3.2-1B\n- https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct\n- https://example.com/model\n- name: Custom Base\n  organization: Someone\n  repo_url: https://x.y/z\n  version: v2\n- 42\ndatasets:\n- HuggingFaceH4/ultrachat_200k\n- teknium/OpenHermes-2.5\n- https://huggingface.co/datasets/foo/bar\n- https://huggingface.co/foo/bar-v1.2\n- local-data\nlanguage:\n- en\nlibrary_name: peft\ntags:\n- trl\n- sft\n- generated_from_trainer\nmodel-index:\n- name: my-finetune\n  results:\n  - task:\n      type: text-generation\n    dataset:\n      name: MMLU\n      type: cais/mmlu\n    metrics:\n    - type: acc\n      value: 65.3\n---\n",
            1100048384,
            "general.name STRING \"My Finetune\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 5\ngeneral.base_model.0.name STRING \"Llama 3.2 1B\"\ngeneral.base_model.0.organization STRING \"Meta Llama\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/meta-llama/Llama-3.2-1B\"\ngeneral.base_model.1.name STRING \"Qwen2.5 1.5B Instruct\"\ngeneral.base_model.1.organization STRING \"Qwen\"\ngeneral.base_model.1.repo_url STRING \"https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct\"\ngeneral.base_model.2.repo_url STRING \"https://example.com/model\"\ngeneral.base_model.3.name STRING \"Custom Base\"\ngeneral.base_model.3.version STRING \"v2\"\ngeneral.base_model.3.organization STRING \"Someone\"\ngeneral.base_model.3.repo_url STRING \"https://x.y/z\"\ngeneral.dataset.count UINT32 5\ngeneral.dataset.0.name STRING \"Ultrachat_200K\"\ngeneral.dataset.0.organization STRING \"HuggingFaceH4\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/HuggingFaceH4/ultrachat_200k\"\ngeneral.dataset.1.name STRING \"OpenHermes 2.5\"\ngeneral.dataset.1.version STRING \"2.5\"\ngeneral.dataset.1.organization STRING \"Teknium\"\ngeneral.dataset.1.repo_url STRING \"https://huggingface.co/teknium/OpenHermes-2.5\"\ngeneral.dataset.2.repo_url STRING \"https://huggingface.co/datasets/foo/bar\"\ngeneral.dataset.3.name STRING \"Bar v1.2\"\ngeneral.dataset.3.version STRING \"v1.2\"\ngeneral.dataset.3.organization STRING \"Foo\"\ngeneral.dataset.3.repo_url STRING \"https://huggingface.co/foo/bar-v1.2\"\ngeneral.dataset.4.name STRING \"Local Data\"\ngeneral.tags ARRAY [\"trl\",\"sft\",\"generated_from_trainer\"]\ngeneral.languages ARRAY [\"en\"]",
        ),
        (
            "norway",
            r#"{}"#,
            "---\nlanguage:\n- en\n- no\n- nb\nlicense: mit\n---\n",
            1100048384,
            "general.name STRING \"Norway\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.languages ARRAY [\"en\",\"no\",\"nb\"]",
        ),
        ("norway-flow", r#"{}"#, "---\nlanguage: [en, no]\n---\n", 1100048384, "ERR ValueError"),
        (
            "tabs",
            r#"{}"#,
            "---\nlicense: mit\ntags:\n\t- a\n\t- b\nbase_model:\n\t- org/Model-7B-v1\n---\n",
            1100048384,
            "general.name STRING \"Tabs\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"Model 7B v1\"\ngeneral.base_model.0.version STRING \"v1\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/Model-7B-v1\"\ngeneral.tags ARRAY [\"a\",\"b\"]",
        ),
        (
            "empty-fm",
            r#"{}"#,
            "---\n---\n# Title\n",
            1100048384,
            "general.name STRING \"Empty Fm\"\ngeneral.size_label STRING \"1.1B\"",
        ),
        (
            "list-fm",
            r#"{}"#,
            "---\n- a\n- b\n---\n",
            1100048384,
            "general.name STRING \"List Fm\"\ngeneral.size_label STRING \"1.1B\"",
        ),
        (
            "scalar-fm",
            r#"{}"#,
            "---\njust text\n---\n",
            1100048384,
            "general.name STRING \"Scalar Fm\"\ngeneral.size_label STRING \"1.1B\"",
        ),
        (
            "multi-license",
            r#"{}"#,
            "---\nlicense: [mit, apache-2.0]\nlanguage: en\n---\n",
            1100048384,
            "general.name STRING \"Multi License\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit,apache-2.0\"\ngeneral.languages ARRAY [\"en\"]",
        ),
        (
            "dates",
            r#"{}"#,
            "---\nlicense: other\ncreated: 2024-01-15\nupdated: 2024-01-15 10:20:30\nversion: '2024-01-15'\n---\n",
            1100048384,
            "general.name STRING \"Dates\"\ngeneral.version STRING \"2024-01-15\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"other\"",
        ),
        ("date-version", r#"{}"#, "---\nversion: 2024-01-15\n---\n", 1100048384, "ERR TypeError"),
        (
            "bool-fields",
            r#"{}"#,
            "---\ninference: false\nversion: 0\nauthor: false\nlicense: ~\ntags: yes\n---\n",
            1100048384,
            "general.name STRING \"Bool Fields\"\ngeneral.size_label STRING \"1.1B\"",
        ),
        ("bool-true", r#"{}"#, "---\nauthor: yes\n---\n", 1100048384, "ERR TypeError"),
        ("float-version", r#"{}"#, "---\nversion: 1.0\n---\n", 1100048384, "ERR TypeError"),
        (
            "unicode",
            r#"{}"#,
            "---\nname: Modèle Français 🚀\nauthor: 山田太郎\nlanguage:\n- fr\n- ja\ndescription: \"Un modèle \\u00e9crit\"\ntags: [français, \"日本語\"]\n---\n",
            1100048384,
            "general.name STRING \"Modèle Français 🚀\"\ngeneral.author STRING \"山田太郎\"\ngeneral.description STRING \"Un modèle écrit\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"français\",\"日本語\"]\ngeneral.languages ARRAY [\"fr\",\"ja\"]",
        ),
        (
            "aliases",
            r#"{}"#,
            "---\nmodel_name: Aliased Name\nmodel_creator: TheBloke\nmodel_type: mistral\nmodel_version: v3\nurl: https://example.com\nmodel_doi: 10.1/x\nuuid: abc-123\nrepo_url: https://github.com/x/y\nquantized_by: nobody\nlicense_name: custom\nlicense_link: LICENSE.md\n---\n",
            1100048384,
            "general.name STRING \"Aliased Name\"\ngeneral.author STRING \"TheBloke\"\ngeneral.version STRING \"v3\"\ngeneral.basename STRING \"mistral\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license.name STRING \"custom\"\ngeneral.license.link STRING \"LICENSE.md\"\ngeneral.source.url STRING \"https://example.com\"\ngeneral.source.doi STRING \"10.1/x\"\ngeneral.source.uuid STRING \"abc-123\"\ngeneral.source.repo_url STRING \"https://github.com/x/y\"",
        ),
        (
            "name-null",
            r#"{}"#,
            "---\nname: null\nmodel_name: From Model Name\nsize_label: 7B\nbasename: Base\nfinetune: ''\n---\n",
            1100048384,
            "general.name STRING \"From Model Name\"\ngeneral.basename STRING \"Base\"\ngeneral.size_label STRING \"7B\"",
        ),
        (
            "base-null",
            r#"{}"#,
            "---\nbase_model: null\ndatasets: {}\n---\n",
            1100048384,
            "general.name STRING \"Base Null\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 0\ngeneral.dataset.count UINT32 0",
        ),
        (
            "base-models-key",
            r#"{}"#,
            "---\nbase_models: org/A-1B\ndataset: single/Set-v2\n---\n",
            1100048384,
            "general.name STRING \"Base Models Key\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"A 1B\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/A-1B\"\ngeneral.dataset.count UINT32 1\ngeneral.dataset.0.name STRING \"Set v2\"\ngeneral.dataset.0.version STRING \"v2\"\ngeneral.dataset.0.organization STRING \"Single\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/single/Set-v2\"",
        ),
        (
            "pipeline-only",
            r#"{"_name_or_path": "org/Thing-3B-chat"}"#,
            "---\npipeline_tag: text-generation\nlanguages: en\nlanguage: [de, fr]\n---\n",
            3000000000,
            "general.name STRING \"Thing 3B Chat\"\ngeneral.organization STRING \"Org\"\ngeneral.finetune STRING \"chat\"\ngeneral.basename STRING \"Thing\"\ngeneral.size_label STRING \"3B\"\ngeneral.tags ARRAY [\"text-generation\"]\ngeneral.languages ARRAY [\"en\",\"de\",\"fr\"]",
        ),
        (
            "block-scalars",
            r#"{}"#,
            "---\ndescription: |\n  Line one\n  Line two\nauthor: >\n  folded\n  text\ntags:\n- \"quoted: yes\"\n- 'single ''q'''\n---\n",
            1100048384,
            "general.name STRING \"Block Scalars\"\ngeneral.author STRING \"folded text\\n\"\ngeneral.description STRING \"Line one\\nLine two\\n\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"quoted: yes\",\"single 'q'\"]",
        ),
        (
            "crlf",
            r#"{}"#,
            "---\r\nlicense: mit\r\ntags:\r\n- x\r\n---\r\n",
            1100048384,
            "general.name STRING \"Crlf\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.tags ARRAY [\"x\"]",
        ),
        (
            "no-end",
            r#"{}"#,
            "---\nlicense: bsd\nlanguage:\n- no\n",
            1100048384,
            "general.name STRING \"No End\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"bsd\"\ngeneral.languages ARRAY [\"no\"]",
        ),
        (
            "anchors",
            r#"{}"#,
            "---\nbase_model: &b org/M-7B\nextra: *b\nlicense: &l mit\n---\n",
            1100048384,
            "general.name STRING \"Anchors\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"M 7B\"\ngeneral.base_model.0.organization STRING \"Org\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/org/M-7B\"",
        ),
        (
            "dup-keys",
            r#"{}"#,
            "---\nlicense: mit\nlicense: apache-2.0\n---\n",
            1100048384,
            "general.name STRING \"Dup Keys\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"apache-2.0\"",
        ),
        (
            "hex-zero",
            r#"{}"#,
            "---\nversion: 0x0\nauthor: 0.0\nname: []\n---\n",
            1100048384,
            "general.size_label STRING \"1.1B\"",
        ),
        ("on-off", r#"{}"#, "---\ntags:\n- on\n- off\n---\n", 1100048384, "REFUSED"),
        ("int-tags", r#"{}"#, "---\ntags: [1, 2]\n---\n", 1100048384, "REFUSED"),
        ("bad-yaml", r#"{}"#, "---\nlicense: [mit\n---\n", 1100048384, "ERR ParserError"),
        ("base-dict-odd", r#"{}"#, "---\nbase_model:\n- name: 5\n---\n", 1100048384, "ERR TypeError"),
        (
            "base-dict-falsy",
            r#"{}"#,
            "---\nbase_model:\n- name: 0\n  author: ''\n  doi: x\n  other: y\n---\n",
            1100048384,
            "general.name STRING \"Base Dict Falsy\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.doi STRING \"x\"",
        ),
        (
            "weird-url",
            r#"{}"#,
            "---\nbase_model: https://huggingfaceXco/huggingface.co/b\ndatasets: ssh://huggingface.co/a/b\n---\n",
            1100048384,
            "general.name STRING \"Weird Url\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 1\ngeneral.base_model.0.name STRING \"B\"\ngeneral.base_model.0.organization STRING \"Huggingface.Co\"\ngeneral.base_model.0.repo_url STRING \"https://huggingfaceXco/huggingface.co/b\"\ngeneral.dataset.count UINT32 1\ngeneral.dataset.0.repo_url STRING \"ssh://huggingface.co/a/b\"",
        ),
        ("bad-date", r#"{}"#, "---\nother: 2024-13-45\n---\n", 1100048384, "ERR ValueError"),
        (
            "explicit-str",
            r#"{}"#,
            "---\nversion: !!str 1.0\n---\n",
            1100048384,
            "general.name STRING \"Explicit Str\"\ngeneral.version STRING \"1.0\"\ngeneral.size_label STRING \"1.1B\"",
        ),
        ("second-doc", r#"{}"#, "---\nlicense: mit\n...\nfoo: 1\n---\n", 1100048384, "ERR ParserError"),
        (
            "doc-end",
            r#"{}"#,
            "---\nlicense: mit\n...\n---\n",
            1100048384,
            "general.name STRING \"Doc End\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"",
        ),
        (
            "flow-map",
            r#"{}"#,
            "---\nbase_model: {name: X, version: v1}\nlicense: {a: b}\n---\n",
            1100048384,
            "ERR TypeError",
        ),
        ("merge-key", r#"{}"#, "---\na: &a {name: X}\nbase_model:\n- <<: *a\n---\n", 1100048384, "REFUSED"),
        (
            "flow-urls",
            r#"{}"#,
            "---\nbase_model: [https://huggingface.co/a/B-7B, org/x:y]\ndatasets: [a/b, c/d]\n---\n",
            1100048384,
            "general.name STRING \"Flow Urls\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 2\ngeneral.base_model.0.name STRING \"B 7B\"\ngeneral.base_model.0.organization STRING \"A\"\ngeneral.base_model.0.repo_url STRING \"https://huggingface.co/a/B-7B\"\ngeneral.base_model.1.name STRING \"X:Y\"\ngeneral.base_model.1.organization STRING \"Org\"\ngeneral.base_model.1.repo_url STRING \"https://huggingface.co/org/x:y\"\ngeneral.dataset.count UINT32 2\ngeneral.dataset.0.name STRING \"B\"\ngeneral.dataset.0.organization STRING \"A\"\ngeneral.dataset.0.repo_url STRING \"https://huggingface.co/a/b\"\ngeneral.dataset.1.name STRING \"D\"\ngeneral.dataset.1.organization STRING \"C\"\ngeneral.dataset.1.repo_url STRING \"https://huggingface.co/c/d\"",
        ),
        (
            "multiline",
            r#"{}"#,
            "---\ndescription: this is a\n  long plain\n\n  scalar\nname: \"quoted\n  folded\"\n# comment\nlicense: Apache 2.0  # trailing comment\n---\n",
            1100048384,
            "general.name STRING \"quoted folded\"\ngeneral.description STRING \"this is a long plain\\nscalar\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"Apache 2.0\"",
        ),
        (
            "indented-seq",
            r#"{}"#,
            "---\nlanguage:\n  - en\n  - no\ntags:\n    - a\n---\n",
            1100048384,
            "general.name STRING \"Indented Seq\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.tags ARRAY [\"a\"]\ngeneral.languages ARRAY [\"en\",\"no\"]",
        ),
        (
            "empty-values",
            r#"{}"#,
            "---\nlicense:\nversion:\ntags:\nbase_model:\n---\n",
            1100048384,
            "general.name STRING \"Empty Values\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.base_model.count UINT32 0",
        ),
        (
            "explicit-doc",
            r#"{}"#,
            "---\n--- \nlicense: mit\n---\n",
            1100048384,
            "general.name STRING \"Explicit Doc\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"mit\"",
        ),
        (
            "colon-keys",
            r#"{}"#,
            "---\nmodel-index:\n- name: x\n  results: []\nwidget:\n- text: 'Hi: there'\n  example_title: \"A: b\"\nlicense: cc-by-4.0\n---\n",
            1100048384,
            "general.name STRING \"Colon Keys\"\ngeneral.size_label STRING \"1.1B\"\ngeneral.license STRING \"cc-by-4.0\"",
        ),
    ];

    #[test]
    fn cards_match_gguf_py() {
        let mut wrong = Vec::new();
        for &(name, config, readme, total, want) in CARDS {
            let got = render(name, config, readme, total);
            let ok = if want.starts_with("ERR") || want == "REFUSED" { got.starts_with("ERR") } else { got == want };
            if !ok {
                wrong.push(format!("{name}:\n got: {got}\nwant: {want}"));
            }
        }
        assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), CARDS.len(), wrong.join("\n"));
    }

    #[test]
    fn refusals_name_the_card_and_key() {
        let got = render("m", "{}", "---\nversion: 1.0\n---\n", 0);
        assert!(got.contains("README.md") && got.contains("version") && got.contains("float"), "{got}");
        let got = render("m", "{}", "---\ntags: [a, 1]\n---\n", 0);
        assert!(got.contains("README.md") && got.contains("tags"), "{got}");
    }

    #[test]
    fn plain_scalars_resolve_as_pyyaml() {
        let r = |s: &str| resolve_plain(s.to_string());
        for s in ["", "~", "null", "Null", "NULL"] {
            assert_eq!(r(s), Ok(Yaml::Null), "{s:?}");
        }
        for (s, t) in [("yes", true), ("No", false), ("ON", true), ("off", false), ("True", true), ("FALSE", false)] {
            assert_eq!(r(s), Ok(Yaml::Other("bool", t)), "{s:?}");
        }
        for (s, t) in [("0", false), ("-0", false), ("00", false), ("0x0", false), ("0b0_0", false), ("1_000", true)] {
            assert_eq!(r(s), Ok(Yaml::Other("int", t)), "{s:?}");
        }
        for (s, t) in [("0x1F", true), ("0o17", true), ("1:30", true), ("1:0:0", true), ("017", true), ("0_", false)] {
            let want = if s == "0o17" { Yaml::Str(s.into()) } else { Yaml::Other("int", t) };
            assert_eq!(r(s), Ok(want), "{s:?}");
        }
        for (s, t) in
            [("1.0", true), ("0.0", false), ("-0.0_0", false), (".inf", true), ("-.INF", true), (".NaN", true)]
        {
            assert_eq!(r(s), Ok(Yaml::Other("float", t)), "{s:?}");
        }
        for (s, t) in [("1.5e+3", true), ("1.0e-400", false), ("1:30.5", true), ("0:00.", false), ("1.", true)] {
            assert_eq!(r(s), Ok(Yaml::Other("float", t)), "{s:?}");
        }
        for s in [
            "1e3",
            "1.0e3",
            ".",
            "._",
            "yes please",
            "nO",
            "0x",
            "2024-1-5",
            "+.nan",
            "v1.0",
            "1_0.0.0",
            "0:00",
            "-.0_0",
        ] {
            assert_eq!(r(s), Ok(Yaml::Str(s.into())), "{s:?}");
        }
        for s in [
            "2024-01-15",
            "2024-02-29",
            "2024-1-5 1:02:03",
            "2024-01-15T10:20:30.123456789Z",
            "2000-12-31 23:59:59 -23:59",
        ] {
            assert_eq!(r(s), Ok(Yaml::Other("datetime", true)), "{s:?}");
        }
        for s in
            ["2023-02-29", "2024-13-01", "0000-01-01", "2024-01-15 24:00:00", "2024-01-15 10:20:60", "2024-01-15 1:2:3"]
        {
            let got = r(s);
            assert!(got.is_err() || got == Ok(Yaml::Str(s.into())), "{s:?}: {got:?}");
        }
        for s in [
            "2023-02-29",
            "2024-13-01",
            "0000-01-01",
            "2024-01-15 24:00:00",
            "2024-01-15 10:20:60",
            "2024-01-01 1:00:00 +24",
        ] {
            assert!(r(s).is_err(), "{s:?}");
        }
        for s in ["0b_", "0x__", "=", "<<"] {
            assert!(r(s).is_err(), "{s:?}");
        }
    }

    #[test]
    fn front_matter_follows_gguf_py() {
        assert_eq!(front_matter("# t\n---\n"), None);
        assert_eq!(front_matter(""), None);
        assert_eq!(front_matter("\u{feff}---\na: 1\n---\n"), None);
        assert_eq!(front_matter("---\n---\n").as_deref(), Some("\n"));
        assert_eq!(front_matter("---\r\na:\r\n- no\r\n\t- b\n---\nx").as_deref(), Some("a:\n- \"no\"\n  - b\n"));
        assert_eq!(front_matter("---\nx: a- no\n- no \n").as_deref(), Some("x: a- \"no\"\n- no \n"));
        assert_eq!(front_matter("--- \na: 1\n"), None);
    }

    #[test]
    fn splitlines_follows_python() {
        assert_eq!(python_splitlines("a\r\nb\rc\u{2028}d\n"), vec!["a", "b", "c", "d"]);
        assert_eq!(python_splitlines(""), Vec::<&str>::new());
        assert_eq!(python_splitlines("\n\n"), vec!["", ""]);
    }

    #[test]
    fn yaml_values_follow_safe_load() {
        let map = |y: &str| match parse_yaml(y).unwrap() {
            Yaml::Map(e) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            map("a: 1\nb: x\na: y\n"),
            vec![(Some("a".into()), Yaml::Str("y".into())), (Some("b".into()), Yaml::Str("x".into()))]
        );
        assert_eq!(map("yes: 1\n'yes': 2\n")[1], (Some("yes".into()), Yaml::Other("int", true)));
        assert_eq!(map("a: &x [b]\nc: *x\n")[1].1, Yaml::Seq(vec![Yaml::Str("b".into())]));
        assert_eq!(map("a: !!str 0x0\n")[0].1, Yaml::Str("0x0".into()));
        assert_eq!(parse_yaml("\n# only a comment\n"), Ok(Yaml::Null));
        assert_eq!(parse_card("- a\n"), Ok(Card::default()));
        assert_eq!(parse_card("plain\n"), Ok(Card::default()));
        for bad in [
            "a: !foo x\n",
            "a: !!binary aGk=\n",
            "? [a]\n: b\n",
            "a: 1\n--- \nb: 2\n",
            "a: [b\n",
            "a: *nope\n",
            "<<: {a: b}\n",
        ] {
            assert!(parse_card(bad).is_err(), "{bad:?}");
        }
        for bad in ["a: \u{1}\n", "a: b\u{7f}\n", "a: \u{fffe}\n", "a: \u{feff}b\n"] {
            assert!(parse_card(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostile_cards_are_refused_without_panics() {
        let deep_flow = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse_card(&deep_flow).is_err());
        let mut deep_block = String::new();
        for i in 0..200 {
            deep_block += &format!("{}k{i}:\n", " ".repeat(i));
        }
        assert!(parse_card(&deep_block).is_err());
        let ok_nesting = format!("a: {}{}\n", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        assert!(parse_card(&ok_nesting).is_ok());
        let huge = format!("a: \"{}\"\n", "x".repeat(MAX_FRONT_MATTER));
        assert!(parse_card(&huge).unwrap_err().contains("bytes"));
        // A billion laughs: each level doubles the nodes the aliases expand to.
        let mut laughs = String::from("l0: &l0 [x, x]\n");
        for i in 1..40 {
            laughs += &format!("l{i}: &l{i} [*l{p}, *l{p}]\n", p = i - 1);
        }
        assert!(parse_card(&laughs).unwrap_err().contains("nodes"));
        for junk in
            ["a: [}\n", ": : :\n", "- - - -\n", "{{{\n", "\"\n", "a: |\n x\n  y\n", "&a *a\n", "!\n", "%YAML 9\n"]
        {
            let _ = parse_card(junk);
        }

        let root = tempfile::tempdir().unwrap();
        let readme = |bytes: &[u8]| {
            let dir = root.path().join("m");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("README.md"), bytes).unwrap();
            load(&dir)
        };
        assert!(readme(b"---\nlicense: \xff\n---\n").is_err());
        assert!(readme(b"# body\n\xff").is_err());
        let mut big = b"---\n".to_vec();
        big.resize(MAX_FRONT_MATTER + 100, b'#');
        assert!(readme(&big).is_err());
        let mut body = b"---\nlicense: mit\n---\n".to_vec();
        body.resize(4 << 20, b'x');
        assert!(readme(&body).is_ok());
        assert_eq!(load(&root.path().join("absent")).unwrap(), Card::default());
    }
}
