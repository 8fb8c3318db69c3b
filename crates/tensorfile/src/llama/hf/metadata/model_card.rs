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
use std::path::Path;
use std::sync::LazyLock;

use regex_lite::Regex;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

use super::{ModelMetadata, id_to_title, name_components};
use crate::error::{Error, Result};
use crate::model::{MetaValue, Number};

/// The largest front matter read (bytes of YAML); more is refused.
pub(crate) const MAX_FRONT_MATTER: usize = 1 << 20;
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
    // Read under its bound, `MAX_HF_README_BYTES`.
    let bytes = super::super::checkpoint::read_bytes(&path)?;
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
mod tests;
