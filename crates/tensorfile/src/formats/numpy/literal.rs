//! The Python literals of an `.npy` header: the subset NumPy writes (a dict of strings, a
//! bool, a tuple of integers, and for structured dtypes lists of tuples), parsed without
//! evaluating anything.
//!
//! Accepted: `{...}` dicts, `(...)` tuples (`(5,)` and `()` included), `[...]` lists, quoted
//! strings (single or double quotes, backslash escapes of one character), decimal integers
//! (with an optional sign and the `L` suffix Python 2 wrote), `True`, `False`, `None`,
//! spaces between tokens and trailing commas. Anything else is [`Rule::BadField`]; nesting is
//! bounded by [`MAX_NESTING`].

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_NESTING;

/// A parsed literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Tuple(Vec<Literal>),
    List(Vec<Literal>),
    Dict(Vec<(Literal, Literal)>),
}

impl Literal {
    /// How the value reads in an error message: its kind, never its contents.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Literal::Str(_) => "a string",
            Literal::Int(_) => "an integer",
            Literal::Bool(_) => "a bool",
            Literal::None => "None",
            Literal::Tuple(_) => "a tuple",
            Literal::List(_) => "a list",
            Literal::Dict(_) => "a dict",
        }
    }
}

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadField, format!("header: {}", detail.into()))
}

/// Parse `text` as one literal, with only spaces around it.
pub(super) fn parse(text: &str) -> Result<Literal> {
    let mut p = Parser { s: text.as_bytes(), text, at: 0 };
    let value = p.value(0)?;
    p.spaces();
    if p.at != p.s.len() {
        return Err(bad(format!("unexpected text after the dict at byte {}", p.at)));
    }
    Ok(value)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn spaces(&mut self) {
        while self.s.get(self.at).is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.spaces();
        self.s.get(self.at).copied()
    }

    fn value(&mut self, depth: usize) -> Result<Literal> {
        if depth > MAX_NESTING {
            return Err(Error::invalid(Rule::TooDeep, format!("header: literals nested past {MAX_NESTING}")));
        }
        match self.peek() {
            None => Err(bad("the header ends inside a value")),
            Some(b'{') => self.dict(depth),
            Some(b'(') => {
                self.at += 1;
                let (items, single_comma) = self.items(b')', depth)?;
                // `(x)` is x in Python; `(x,)` is a tuple of one.
                if items.len() == 1 && !single_comma {
                    return Ok(items.into_iter().next().unwrap_or(Literal::None));
                }
                Ok(Literal::Tuple(items))
            }
            Some(b'[') => {
                self.at += 1;
                Ok(Literal::List(self.items(b']', depth)?.0))
            }
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(c) if c == b'-' || c == b'+' || c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() => self.word(),
            Some(c) => Err(bad(format!("unexpected character {:?} at byte {}", char::from(c), self.at))),
        }
    }

    /// Items up to `close`, separated by commas, a trailing comma allowed; whether one item
    /// was followed by a comma.
    fn items(&mut self, close: u8, depth: usize) -> Result<(Vec<Literal>, bool)> {
        let mut items = Vec::new();
        let mut comma = false;
        loop {
            if self.peek() == Some(close) {
                self.at += 1;
                return Ok((items, comma));
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    comma = true;
                }
                Some(c) if c == close => comma = false,
                _ => return Err(bad(format!("expected ',' or {:?} at byte {}", char::from(close), self.at))),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Literal> {
        self.at += 1;
        let mut pairs = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.at += 1;
                return Ok(Literal::Dict(pairs));
            }
            let key = self.value(depth + 1)?;
            if self.peek() != Some(b':') {
                return Err(bad(format!("expected ':' at byte {}", self.at)));
            }
            self.at += 1;
            let value = self.value(depth + 1)?;
            pairs.push((key, value));
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {}
                _ => return Err(bad(format!("expected ',' or '}}' at byte {}", self.at))),
            }
        }
    }

    fn string(&mut self, quote: u8) -> Result<Literal> {
        self.at += 1;
        let mut out = String::new();
        let mut from = self.at;
        loop {
            match self.s.get(self.at) {
                None | Some(b'\n') => return Err(bad("a string is not closed")),
                Some(&c) if c == quote => {
                    out.push_str(self.slice(from, self.at)?);
                    self.at += 1;
                    return Ok(Literal::Str(out));
                }
                Some(b'\\') => {
                    out.push_str(self.slice(from, self.at)?);
                    let escaped = self.s.get(self.at + 1).copied();
                    match escaped {
                        Some(c @ (b'\\' | b'\'' | b'"')) => out.push(char::from(c)),
                        _ => return Err(bad(format!("an escape tensorfile does not read at byte {}", self.at))),
                    }
                    self.at += 2;
                    from = self.at;
                }
                Some(_) => self.at += 1,
            }
        }
    }

    fn slice(&self, from: usize, to: usize) -> Result<&str> {
        self.text.get(from..to).ok_or_else(|| bad("a string splits a character"))
    }

    fn int(&mut self) -> Result<Literal> {
        let start = self.at;
        if matches!(self.s.get(self.at), Some(b'-' | b'+')) {
            self.at += 1;
        }
        let digits = self.at;
        while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        if self.at == digits || self.at - digits > 30 {
            return Err(bad(format!("a bad integer at byte {start}")));
        }
        let text = self.slice(start, self.at)?;
        let value: i128 = text.parse().map_err(|_| bad(format!("a bad integer at byte {start}")))?;
        if matches!(self.s.get(self.at), Some(b'L' | b'l')) {
            self.at += 1;
        }
        Ok(Literal::Int(value))
    }

    fn word(&mut self) -> Result<Literal> {
        let start = self.at;
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            self.at += 1;
        }
        match &self.s[start..self.at] {
            b"True" => Ok(Literal::Bool(true)),
            b"False" => Ok(Literal::Bool(false)),
            b"None" => Ok(Literal::None),
            _ => Err(bad(format!("a name that is not a literal at byte {start}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Literal {
        Literal::Str(v.into())
    }

    #[test]
    fn numpy_headers_parse() {
        let v = parse("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }     \n").unwrap();
        let want = Literal::Dict(vec![
            (s("descr"), s("<f4")),
            (s("fortran_order"), Literal::Bool(false)),
            (s("shape"), Literal::Tuple(vec![Literal::Int(2), Literal::Int(3)])),
        ]);
        assert_eq!(v, want);
        let v = parse("{\"shape\":(5,),\"fortran_order\":True,\"descr\":\"|b1\"}").unwrap();
        let Literal::Dict(pairs) = v else { panic!() };
        assert_eq!(pairs[0].1, Literal::Tuple(vec![Literal::Int(5)]));
        assert_eq!(parse("()").unwrap(), Literal::Tuple(vec![]));
        assert_eq!(parse("(7)").unwrap(), Literal::Int(7));
        assert_eq!(parse("(3L, -1)").unwrap(), Literal::Tuple(vec![Literal::Int(3), Literal::Int(-1)]));
        assert_eq!(
            parse("[('a', '<i4'), ('b\\'', '>f8')]").unwrap(),
            Literal::List(vec![Literal::Tuple(vec![s("a"), s("<i4")]), Literal::Tuple(vec![s("b'"), s(">f8")])])
        );
    }

    #[test]
    fn everything_else_is_refused_with_a_rule() {
        for bad in [
            "",
            "{",
            "{'a' 1}",
            "{'a': 1,,}",
            "('a'",
            "'abc",
            "x",
            "__import__('os')",
            "{'a': 1} 2",
            "1e5",
            "'\\x41'",
            "(1,2",
            "{1: 2 3}",
            "99999999999999999999999999999999999",
        ] {
            assert_eq!(parse(bad).unwrap_err().rule(), Some(Rule::BadField), "{bad:?}");
        }
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert_eq!(parse(&deep).unwrap_err().rule(), Some(Rule::TooDeep));
    }
}
