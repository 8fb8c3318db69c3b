//! gguf-py's name heuristics: a model id cut into its parts (basename, size label, finetune,
//! version) as `Metadata.get_model_id_components` cuts it, `id_to_title`, and the size label
//! of a parameter count (`size_label`), with Python's string semantics reproduced.

use std::cmp::Ordering;

/// The parts gguf-py's `get_model_id_components` finds in a model id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NameComponents {
    /// The id after its organization (the whole id when it holds a space).
    pub(crate) full_name: String,
    /// The part before the first `/`, unless it starts with `.`.
    pub(crate) organization: Option<String>,
    /// The leading name words (and their versions), when anything else was recognized.
    pub(crate) basename: Option<String>,
    /// The fine-tune words (`Instruct`, `chat`, context lengths such as `4k`), `-`-joined.
    pub(crate) finetune: Option<String>,
    /// The versions after the base name, `-`-joined.
    pub(crate) version: Option<String>,
    /// The size labels (`7B`, `8x7B`), deduplicated and `-`-joined.
    pub(crate) size_label: Option<String>,
}

/// The annotations of one `-`-separated part of a model name.
#[derive(Debug, Clone, Copy, Default)]
struct Kinds {
    /// Part of the base name.
    basename: bool,
    /// A size label.
    size_label: bool,
    /// A fine-tune word.
    finetune: bool,
    /// A version.
    version: bool,
    /// A quantization type (or a redundant `lora` of an adapter).
    kind: bool,
}

impl Kinds {
    /// How many annotations the part has.
    fn count(self) -> usize {
        [self.basename, self.size_label, self.finetune, self.version, self.kind].iter().filter(|b| **b).count()
    }
}

/// gguf-py's `get_model_id_components`: a model id (`org/name-7B-Instruct-v0.1`) cut into its
/// parts, size labels checked against `total_params` (negative for an adapter; 0: unchecked).
pub(crate) fn name_components(model_id: &str, total_params: i64) -> NameComponents {
    if model_id.contains(' ') {
        return NameComponents { full_name: model_id.to_string(), ..NameComponents::default() };
    }
    let (org, full) = match model_id.split_once('/') {
        Some((org, full)) => (Some(org), full),
        None => (None, model_id),
    };
    let mut parts: Vec<String> = full.split('-').filter(|p| !p.is_empty()).map(str::to_string).collect();
    let mut kinds = vec![Kinds::default(); parts.len()];
    for (i, (part, k)) in parts.iter_mut().zip(kinds.iter_mut()).enumerate() {
        annotate(i, part, k, total_params);
    }
    drop_word_sizes(&parts, &mut kinds);
    mark_basename(&parts, &mut kinds);
    let join = |keep: &dyn Fn(Kinds) -> bool| {
        let mut chosen: Vec<&str> = Vec::new();
        for (p, k) in parts.iter().zip(&kinds) {
            if keep(*k) {
                chosen.push(p);
            }
        }
        Some(chosen.join("-")).filter(|s| !s.is_empty())
    };
    let mut basename = join(&|k| k.basename);
    let finetune = join(&|k| k.finetune);
    let version = join(&|k| k.version && !k.basename);
    let size_label = dedup_sizes(&parts, &kinds);
    if size_label.is_none() && finetune.is_none() && version.is_none() {
        basename = None;
    }
    NameComponents {
        full_name: full.to_string(),
        organization: org.filter(|o| !o.starts_with('.')).map(str::to_string),
        basename,
        finetune,
        version,
        size_label,
    }
}

/// The size-label parts, first occurrences only, `-`-joined.
fn dedup_sizes(parts: &[String], kinds: &[Kinds]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for (p, k) in parts.iter().zip(kinds) {
        if k.size_label && !seen.contains(&p.as_str()) {
            seen.push(p);
        }
    }
    Some(seen.join("-")).filter(|s| !s.is_empty())
}

/// Annotates the `i`th part (a version, a quantization type, a size, a fine-tune word),
/// normalizing it as gguf-py does.
fn annotate(i: usize, part: &mut String, k: &mut Kinds, total_params: i64) {
    let chars: Vec<char> = part.chars().collect();
    if is_version(&chars) {
        k.version = true;
    } else if is_quant_type(&chars) {
        k.kind = true;
        *part = part.to_uppercase();
    } else if i > 0 && is_size(&chars) {
        *part = normalize_size(part, k, total_params);
        if k.count() == 0 {
            k.size_label = true;
        }
    } else if i > 0 && ["chat", "instruct", "vision", "lora"].iter().any(|w| folds_to(&chars, w)) {
        if total_params < 0 && part.to_lowercase() == "lora" {
            k.kind = true;
        } else {
            k.finetune = true;
        }
    }
}

/// Drops the word size labels (`small`, `xl`) when a numeric one is present.
fn drop_word_sizes(parts: &[String], kinds: &mut [Kinds]) {
    let numeric = parts.iter().zip(kinds.iter()).any(|(p, k)| k.size_label && p.chars().any(|c| c.is_ascii_digit()));
    if numeric {
        for (p, k) in parts.iter().zip(kinds.iter_mut()) {
            if k.size_label && p.chars().all(char::is_alphabetic) {
                k.size_label = false;
            }
        }
    }
}

/// Marks the leading unannotated words and versions as the base name, later unannotated parts as
/// fine-tunes, then unmarks the trailing versions of the base name.
fn mark_basename(parts: &[String], kinds: &mut [Kinds]) {
    let mut at_start = true;
    for (p, k) in parts.iter().zip(kinds.iter_mut()) {
        let word = k.count() == 0 && p.chars().next().is_some_and(char::is_alphabetic);
        if at_start && (word || k.version) {
            k.basename = true;
        } else {
            at_start = false;
            if k.count() == 0 {
                k.finetune = true;
            }
        }
    }
    for k in kinds.iter_mut().rev() {
        if !(k.basename && k.count() > 1) {
            break;
        }
        k.basename = false;
    }
}

/// A size part normalized: `_` as `.`, `7b1` as `7.1B`, the scale letter upper case; marked a
/// fine-tune (and its letter lower-cased) when its value is far from `total_params`.
fn normalize_size(part: &str, k: &mut Kinds, total_params: i64) -> String {
    let mut p: Vec<char> = part.replace('_', ".").chars().collect();
    let n = p.len();
    if n >= 2 && p[n - 1].is_ascii_digit() {
        let (last, before) = (p[n - 1], p[n - 2]);
        p.truncate(n - 2);
        p.extend(['.', last, before]);
    }
    let n = p.len();
    if n > 1 && p[n - 2].is_ascii_digit() && matches!(p[n - 1], 'k' | 'm' | 'b' | 't') {
        p[n - 1] = p[n - 1].to_ascii_uppercase();
    }
    let Some((&letter, number)) = p.split_last() else { return String::new() };
    let number: String = number.iter().collect();
    if total_params != 0 {
        if let Some(value) = python_float(&number) {
            if size_is_context(value * scale(letter), total_params) {
                k.finetune = true;
                return number + &letter.to_lowercase().to_string();
            }
        }
    }
    number + &letter.to_string()
}

/// The multiplier of a size letter: `K`, `M`, `B`, `T`, else (as Python's `pow(1000, -1)`)
/// a thousandth.
fn scale(letter: char) -> f64 {
    match letter {
        'K' => 1e3,
        'M' => 1e6,
        'B' => 1e9,
        'T' => 1e12,
        _ => 1e-3,
    }
}

/// Whether a size label's value reads as a context length rather than the model's size: below
/// an eighth of an adapter's size, or further from the model's size than seven eighths of it.
fn size_is_context(label: f64, total_params: i64) -> bool {
    let total = i128::from(total_params);
    if total < 0 {
        return cmp_float_int(label, total.abs() / 8) == Some(Ordering::Less);
    }
    total > 0 && cmp_float_int((label - total_params as f64).abs(), 7 * total / 8) == Some(Ordering::Greater)
}

/// A float compared with an integer exactly, as Python compares them.
fn cmp_float_int(f: f64, i: i128) -> Option<Ordering> {
    const LIMIT: f64 = 85_070_591_730_234_615_865_843_651_857_942_052_864.0; // 2^126
    if f.is_nan() {
        return None;
    }
    if f >= LIMIT {
        return Some(Ordering::Greater);
    }
    if f <= -LIMIT {
        return Some(Ordering::Less);
    }
    let t = f.trunc();
    match (t as i128).cmp(&i) {
        Ordering::Equal => f.partial_cmp(&t),
        other => Some(other),
    }
}

/// Python's `float()` of the forms a size label's number takes (`7`, `1.5`, `7.`, `.5`); other
/// text (`8x7`, `A3`, `1.5.2`, the words): none.
fn python_float(s: &str) -> Option<f64> {
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let dots = s.chars().filter(|c| *c == '.').count();
    if digits == 0 || dots > 1 || digits + dots != s.chars().count() {
        return None;
    }
    s.parse().ok()
}

/// A character folded as Python's case-insensitive `re` matches it against an ASCII letter.
fn fold(c: char) -> char {
    match c {
        '\u{130}' | '\u{131}' => 'i',
        '\u{17f}' => 's',
        '\u{212a}' => 'k',
        _ => c.to_ascii_lowercase(),
    }
}

/// Whether `chars` equal the lower-case ASCII `word`, case-insensitively.
fn folds_to(chars: &[char], word: &str) -> bool {
    chars.len() == word.len() && chars.iter().zip(word.chars()).all(|(c, w)| fold(*c) == w)
}

/// The length of the run of ASCII digits at the start of `chars`.
fn digit_run(chars: &[char]) -> usize {
    chars.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// `(v|iter)?\d+([.]\d+)*`, case-insensitive, the whole part.
fn is_version(chars: &[char]) -> bool {
    let rest = if chars.len() >= 4 && folds_to(&chars[..4], "iter") {
        &chars[4..]
    } else if chars.first().is_some_and(|c| fold(*c) == 'v') {
        &chars[1..]
    } else {
        chars
    };
    let mut rest = rest;
    let first = digit_run(rest);
    if first == 0 {
        return false;
    }
    rest = &rest[first..];
    while let Some(('.', tail)) = rest.split_first() {
        let run = digit_run(tail);
        if run == 0 {
            return false;
        }
        rest = &tail[run..];
    }
    rest.is_empty()
}

/// `i?q\d(_\w)*|b?fp?(16|32)`, case-insensitive, the whole part.
fn is_quant_type(chars: &[char]) -> bool {
    let skip = |s: &'_ [char], letter: char| -> usize { usize::from(s.first().is_some_and(|c| fold(*c) == letter)) };
    let q = &chars[skip(chars, 'i')..];
    if q.len() >= 2 && fold(q[0]) == 'q' && q[1].is_ascii_digit() {
        let tail = &q[2..];
        return tail.len() % 2 == 0
            && tail.chunks(2).all(|pair| pair[0] == '_' && (pair[1] == '_' || pair[1].is_alphanumeric()));
    }
    let f = &chars[skip(chars, 'b')..];
    if f.first().is_none_or(|c| fold(*c) != 'f') {
        return false;
    }
    let bits = &f[1 + skip(&f[1..], 'p')..];
    bits == ['1', '6'] || bits == ['3', '2']
}

/// `(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl)`, case-insensitive,
/// the whole part.
fn is_size(chars: &[char]) -> bool {
    if ["small", "mini", "medium", "large", "xl", "xxl"].iter().any(|w| folds_to(chars, w)) {
        return true;
    }
    let mut rest = chars;
    let lead = digit_run(rest);
    if rest.first().is_some_and(|c| fold(*c) == 'a') {
        rest = &rest[1..];
    } else if lead > 0 && rest.get(lead).is_some_and(|c| fold(*c) == 'x') {
        rest = &rest[lead + 1..];
    }
    let run = digit_run(rest);
    if run == 0 {
        return false;
    }
    rest = &rest[run..];
    if let Some(('.' | '_', tail)) = rest.split_first() {
        let frac = digit_run(tail);
        if frac > 0 {
            rest = &tail[frac..];
        }
    }
    match rest.split_first() {
        Some((c, tail)) if matches!(fold(*c), 'k' | 'm' | 'b' | 't') => {
            tail.is_empty() || (tail.len() == 1 && tail[0].is_ascii_digit())
        }
        _ => false,
    }
}

/// gguf-py's `id_to_title`: `-` as spaces, whitespace runs as one space, and each all-lower-case
/// word title-cased unless it is a version (`v1.2`) or starts with a digit.
pub(crate) fn id_to_title(s: &str) -> String {
    let spaced = s.replace('-', " ");
    let words: Vec<String> = spaced
        .split(python_isspace)
        .filter(|w| !w.is_empty())
        .map(|w| if python_islower(w) && !title_exempt(w) { python_title(w) } else { w.to_string() })
        .collect();
    words.join(" ")
}

/// Python's `str.isspace` for one character: Unicode white space plus the separators
/// `\x1c`..`\x1f`.
fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether a word is a version (`v1`, `v1.2`) or starts with a digit (`7b`).
fn title_exempt(w: &str) -> bool {
    let chars: Vec<char> = w.chars().collect();
    if chars.first().is_some_and(char::is_ascii_digit) {
        return true;
    }
    chars.first() == Some(&'v') && chars.len() > 1 && is_version(&chars)
}

/// Whether `c` is a title-case letter (Unicode category Lt).
fn is_titlecase(c: char) -> bool {
    matches!(c, '\u{1c5}' | '\u{1c8}' | '\u{1cb}' | '\u{1f2}' | '\u{1f88}'..='\u{1f8f}' | '\u{1f98}'..='\u{1f9f}'
        | '\u{1fa8}'..='\u{1faf}' | '\u{1fbc}' | '\u{1fcc}' | '\u{1ffc}')
}

/// Python's notion of a cased character: lower case, upper case or title case.
fn is_cased(c: char) -> bool {
    c.is_lowercase() || c.is_uppercase() || is_titlecase(c)
}

/// Python's `str.islower`: some cased character, and none upper or title case.
fn python_islower(w: &str) -> bool {
    let mut cased = false;
    for c in w.chars() {
        if c.is_uppercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

/// Python's `str.title`: a character after a cased one lower-cased, any other title-cased.
fn python_title(w: &str) -> String {
    let mut out = String::new();
    let mut after_cased = false;
    for c in w.chars() {
        if after_cased {
            out.extend(c.to_lowercase());
        } else {
            out.push_str(&title_char(c));
        }
        after_cased = is_cased(c);
    }
    out
}

/// The title-case mapping of one character (Python's, Unicode's `SpecialCasing` included).
fn title_char(c: char) -> String {
    let mapped = match u32::from(c) {
        0x149 => Some("\u{2bc}N".to_string()),
        0x1c4..=0x1c6 => Some('\u{1c5}'.to_string()),
        0x1c7..=0x1c9 => Some('\u{1c8}'.to_string()),
        0x1ca..=0x1cc => Some('\u{1cb}'.to_string()),
        0x1f1..=0x1f3 => Some('\u{1f2}'.to_string()),
        0x10d0..=0x10fa | 0x10fd..=0x10ff | 0x1fbc | 0x1fcc | 0x1ffc => Some(c.to_string()),
        0x1f88..=0x1f8f | 0x1f98..=0x1f9f | 0x1fa8..=0x1faf => Some(c.to_string()),
        n @ (0x1f80..=0x1f87 | 0x1f90..=0x1f97 | 0x1fa0..=0x1fa7) => char::from_u32(n + 8).map(String::from),
        0x1fb3 => Some('\u{1fbc}'.to_string()),
        0x1fc3 => Some('\u{1fcc}'.to_string()),
        0x1ff3 => Some('\u{1ffc}'.to_string()),
        0x1fb2 => Some("\u{1fba}\u{345}".to_string()),
        0x1fb4 => Some("\u{386}\u{345}".to_string()),
        0x1fb7 => Some("\u{391}\u{342}\u{345}".to_string()),
        0x1fc2 => Some("\u{1fca}\u{345}".to_string()),
        0x1fc4 => Some("\u{389}\u{345}".to_string()),
        0x1fc7 => Some("\u{397}\u{342}\u{345}".to_string()),
        0x1ff2 => Some("\u{1ffa}\u{345}".to_string()),
        0x1ff4 => Some("\u{38f}\u{345}".to_string()),
        0x1ff7 => Some("\u{3a9}\u{342}\u{345}".to_string()),
        _ => None,
    };
    mapped.unwrap_or_else(|| {
        let mut upper = c.to_uppercase();
        let first: String = upper.next().map(String::from).unwrap_or_default();
        first + &upper.flat_map(char::to_lowercase).collect::<String>()
    })
}

/// gguf-py's `size_label`: the parameter count rounded to two significant digits or more with
/// a `K`/`M`/`B`/`T` suffix (`6.7B`, `135M`, `0.12K`), for a mixture of experts the shared and
/// per-expert counts summed and prefixed by the expert count (`8x7.2B`).
pub(crate) fn size_label(total: i64, shared: i64, expert: i64, expert_count: u64) -> String {
    if expert_count > 0 {
        let per_expert = u128::from(shared.unsigned_abs()) + u128::from(expert.unsigned_abs());
        format!("{expert_count}x{}", rounded_notation(per_expert))
    } else {
        rounded_notation(u128::from(total.unsigned_abs()))
    }
}

/// A parameter count scaled to its unit, with as many decimals as bring it to two digits
/// (Python's `%.Nf`: the exact value rounded half to even, as Rust's `{:.N}` does).
fn rounded_notation(count: u128) -> String {
    let (factor, suffix) = match count {
        c if c > 1_000_000_000_000 => (1e-12, 'T'),
        c if c > 1_000_000_000 => (1e-9, 'B'),
        c if c > 1_000_000 => (1e-6, 'M'),
        _ => (1e-3, 'K'),
    };
    let scaled = count as f64 * factor;
    let whole = scaled.round_ties_even() as u128;
    let digits = if whole == 0 { 0 } else { whole.to_string().len() };
    let decimals = 2usize.saturating_sub(digits);
    format!("{scaled:.decimals$}{suffix}")
}
