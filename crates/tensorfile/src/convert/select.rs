//! Which entries a conversion keeps, and under which names ([`super::ConvertOptions::select`]):
//! globs on the tensor name to include and exclude, and regex renames applied in order.

use std::borrow::Cow;

use regex_lite::Regex;

use crate::error::{Error, Result};

/// The entries a conversion keeps and their new names. An entry is kept when it matches one
/// of the includes (or there are none) and none of the excludes; the renames then apply in
/// order, each to the result of the one before, each replacing the first match of its regex
/// (as Python's `re.sub(pattern, repl, name, count=1)`), with `$1`, `${1}` and `${name}`
/// standing for the groups of the match. The default keeps everything under its own name.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    include: Vec<Glob>,
    exclude: Vec<Glob>,
    rename: Vec<(Regex, String)>,
}

impl Selection {
    /// A selection from glob patterns (`*` any run of characters, dots included; `?` one
    /// character; `[abc]`, `[a-z]`, `[!abc]` one of a set or not; `\` takes the next
    /// character as it is) and `(regex, replacement)` renames. A bad glob or regex is a usage
    /// error naming it.
    pub fn new<S: AsRef<str>>(include: &[S], exclude: &[S], rename: &[(S, S)]) -> Result<Selection> {
        let globs = |patterns: &[S]| patterns.iter().map(|p| Glob::parse(p.as_ref())).collect::<Result<Vec<_>>>();
        let rename = rename
            .iter()
            .map(|(pattern, replacement)| {
                let pattern = pattern.as_ref();
                let regex =
                    Regex::new(pattern).map_err(|e| Error::usage(format!("bad rename regex {pattern:?}: {e}")))?;
                Ok((regex, replacement.as_ref().to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Selection { include: globs(include)?, exclude: globs(exclude)?, rename })
    }

    /// A rename as the command line gives it, `REGEX=REPLACEMENT`: split at the first `=`
    /// (a regex that must match `=` writes it `\x3D`).
    pub fn parse_rename(text: &str) -> Result<(String, String)> {
        match text.split_once('=') {
            Some((regex, replacement)) if !regex.is_empty() => Ok((regex.to_string(), replacement.to_string())),
            _ => Err(Error::usage(format!("bad rename {text:?}: write it REGEX=REPLACEMENT"))),
        }
    }

    /// Whether it keeps every entry under its own name.
    pub fn is_everything(&self) -> bool {
        !self.filters() && self.rename.is_empty()
    }

    /// Whether it has includes or excludes.
    pub fn filters(&self) -> bool {
        !self.include.is_empty() || !self.exclude.is_empty()
    }

    /// Whether the entry called `name` is kept.
    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|g| g.matches(name)))
            && !self.exclude.iter().any(|g| g.matches(name))
    }

    /// The name `name` takes: every rename applied in order.
    pub fn renamed<'n>(&self, name: &'n str) -> Cow<'n, str> {
        let mut current = Cow::Borrowed(name);
        for (regex, replacement) in &self.rename {
            if let Cow::Owned(changed) = regex.replace(&current, replacement.as_str()) {
                current = Cow::Owned(changed);
            }
        }
        current
    }
}

/// One element of a glob.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// This character.
    Char(char),
    /// Any one character.
    Any,
    /// Any run of characters, empty included.
    Star,
    /// One character of (or, negated, not of) these inclusive ranges.
    Set { ranges: Vec<(char, char)>, negated: bool },
}

/// A glob on tensor names.
#[derive(Debug, Clone)]
struct Glob {
    tokens: Vec<Token>,
}

impl Glob {
    fn parse(pattern: &str) -> Result<Glob> {
        let bad = |why: &str| Error::usage(format!("bad glob {pattern:?}: {why}"));
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => {
                    if tokens.last() == Some(&Token::Star) {
                        continue;
                    }
                    Token::Star
                }
                '?' => Token::Any,
                '\\' => Token::Char(chars.next().ok_or_else(|| bad("it ends with a lone \\"))?),
                '[' => {
                    let negated = chars.next_if(|&c| c == '!' || c == '^').is_some();
                    let mut ranges = Vec::new();
                    loop {
                        // `]` first in the set is a member, not its end.
                        let c = match chars.next() {
                            Some(']') if !ranges.is_empty() => break,
                            Some('\\') => chars.next().ok_or_else(|| bad("it ends with a lone \\"))?,
                            Some(c) => c,
                            None => return Err(bad("a [ is not closed")),
                        };
                        let high = if chars.peek() == Some(&'-') && chars.clone().nth(1).is_some_and(|n| n != ']') {
                            chars.next();
                            match chars.next() {
                                Some('\\') => chars.next().ok_or_else(|| bad("it ends with a lone \\"))?,
                                Some(h) => h,
                                None => return Err(bad("a [ is not closed")),
                            }
                        } else {
                            c
                        };
                        if high < c {
                            return Err(bad(&format!("the range {c}-{high} is reversed")));
                        }
                        ranges.push((c, high));
                    }
                    Token::Set { ranges, negated }
                }
                c => Token::Char(c),
            });
        }
        Ok(Glob { tokens })
    }

    /// Whether the whole of `name` matches. Linear backtracking to the last star: time at
    /// most (pattern length) × (name length).
    fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        let (mut t, mut p) = (0, 0);
        // Where the last star was, and the text position it has taken up to.
        let mut star: Option<(usize, usize)> = None;
        while t < text.len() {
            let step = match self.tokens.get(p) {
                Some(Token::Star) => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(Token::Char(c)) => *c == text[t],
                Some(Token::Any) => true,
                Some(Token::Set { ranges, negated }) => {
                    ranges.iter().any(|&(low, high)| (low..=high).contains(&text[t])) != *negated
                }
                None => false,
            };
            if step {
                (t, p) = (t + 1, p + 1);
            } else if let Some((sp, st)) = star {
                // The star takes one more character; try again after it.
                star = Some((sp, st + 1));
                (t, p) = (st + 1, sp + 1);
            } else {
                return false;
            }
        }
        self.tokens[p.min(self.tokens.len())..].iter().all(|tok| *tok == Token::Star)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str) -> Glob {
        Glob::parse(p).unwrap()
    }

    #[test]
    fn globs_match_whole_names_and_stars_cross_dots() {
        let g = glob("model.layers.*.mlp.*");
        assert!(g.matches("model.layers.0.mlp.up.weight"));
        assert!(g.matches("model.layers.12.mlp.down_proj.bias"));
        assert!(!g.matches("model.layers.0.attn.q.weight"));
        assert!(!g.matches("xmodel.layers.0.mlp.w"));
        assert!(glob("*").matches("") && glob("*").matches("a.b.c"));
        assert!(glob("**.bias").matches("x.bias") && !glob("*.bias").matches("x.biasx"));
        assert!(glob("a?c").matches("abc") && !glob("a?c").matches("ac") && !glob("a?c").matches("abbc"));
        assert!(glob("w[0-9]").matches("w7") && !glob("w[0-9]").matches("wx"));
        assert!(glob("w[!0-9]").matches("wx") && !glob("w[!0-9]").matches("w7"));
        assert!(glob("w[]x]").matches("w]") && glob("w[a-]").matches("w-"));
        assert!(glob("a\\*").matches("a*") && !glob("a\\*").matches("ab"));
        assert!(glob("*a*b*c").matches("xxaxxbxxbc") && !glob("*a*b*c").matches("xxaxxbxxb"));
        assert!(glob("ü?").matches("üß"));
        for bad in ["w[0-9", "w[", "x\\", "[z-a]"] {
            assert!(Glob::parse(bad).unwrap_err().detail().contains(bad), "{bad}");
        }
    }

    #[test]
    fn includes_excludes_and_renames_in_order() {
        let s = Selection::new(&["*.weight", "emb*"], &["*.2.*"], &[]).unwrap();
        assert!(s.keeps("l.1.weight") && s.keeps("embed") && !s.keeps("l.1.bias") && !s.keeps("l.2.weight"));
        let s = Selection::new::<&str>(&[], &["*bias"], &[]).unwrap();
        assert!(s.keeps("w") && !s.keeps("b.bias"));
        assert!(Selection::default().is_everything());

        let renames = [(r"^model\.", ""), (r"layers\.(\d+)", "h.$1"), (r"(?P<p>proj)", "${p}_x")];
        let s = Selection::new(&[] as &[&str], &[], &renames).unwrap();
        assert_eq!(s.renamed("model.layers.3.q_proj.proj"), "h.3.q_proj_x.proj");
        assert!(matches!(s.renamed("other"), Cow::Borrowed("other")));
        // The first match only, as re.sub(count=1).
        let s = Selection::new(&[] as &[&str], &[], &[("a", "b")]).unwrap();
        assert_eq!(s.renamed("aaa"), "baa");
        let s = Selection::new(&[] as &[&str], &[], &[(r"(\d+)", "$$${1}x")]).unwrap();
        assert_eq!(s.renamed("w12.3"), "w$12x.3");
        let err = Selection::new(&[] as &[&str], &[], &[("(", "x")]).unwrap_err();
        assert!(err.detail().contains("bad rename regex \"(\""), "{}", err.detail());
        assert_eq!(Selection::parse_rename("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(Selection::parse_rename("a=").unwrap(), ("a".into(), String::new()));
        assert!(Selection::parse_rename("=b").is_err() && Selection::parse_rename("ab").is_err());
    }
}
