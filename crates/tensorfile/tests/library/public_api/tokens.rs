//! Rust source as token trees: comments dropped, literals kept as one token (string
//! contents kept, for `#[path = "..."]`), brackets nested into groups. Enough to find items,
//! not to check them.

/// One token, or a bracketed group of them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Ident(String),
    Punct(char),
    /// `::`
    PathSep,
    /// `->` or `=>` (kept whole so that their `>` closes no generics).
    Arrow,
    Str(String),
    /// A number, a character or a lifetime.
    Other,
    /// `(`, `[` or `{` and what it holds up to its closing bracket.
    Group(char, Vec<Token>),
}

impl Token {
    pub(crate) fn is_ident(&self, word: &str) -> bool {
        matches!(self, Token::Ident(w) if w == word)
    }

    pub(crate) fn is_punct(&self, c: char) -> bool {
        *self == Token::Punct(c)
    }

    pub(crate) fn ident(&self) -> Option<&str> {
        match self {
            Token::Ident(w) => Some(w),
            _ => None,
        }
    }
}

/// The token trees of a source file.
pub(crate) fn tokens_of(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut stack: Vec<(char, Vec<Token>)> = vec![(' ', Vec::new())];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied().unwrap_or(' ');
        let mut push = |t: Token| stack.last_mut().unwrap().1.push(t);
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == '*' {
            i = block_comment_end(&chars, i);
        } else if c == '"' {
            let (text, end) = quoted(&chars, i);
            push(Token::Str(text));
            i = end;
        } else if let Some((text, end)) = prefixed_literal(&chars, i) {
            push(text);
            i = end;
        } else if c == '\'' {
            i = char_or_lifetime_end(&chars, i);
            push(Token::Other);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            push(Token::Ident(chars[start..i].iter().collect()));
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            push(Token::Other);
        } else if (c == ':' && next == ':') || ((c == '-' || c == '=') && next == '>') {
            push(if c == ':' { Token::PathSep } else { Token::Arrow });
            i += 2;
        } else if matches!(c, '(' | '[' | '{') {
            stack.push((c, Vec::new()));
            i += 1;
        } else if matches!(c, ')' | ']' | '}') {
            if stack.len() > 1 {
                let (open, inner) = stack.pop().unwrap();
                stack.last_mut().unwrap().1.push(Token::Group(open, inner));
            }
            i += 1;
        } else {
            push(Token::Punct(c));
            i += 1;
        }
    }
    while stack.len() > 1 {
        let (open, inner) = stack.pop().unwrap();
        stack.last_mut().unwrap().1.push(Token::Group(open, inner));
    }
    stack.pop().unwrap().1
}

fn block_comment_end(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// A `"..."` string at `start`: its contents and the index after it.
fn quoted(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start + 1;
    let mut text = String::new();
    while i < chars.len() && chars[i] != '"' {
        if chars[i] == '\\' {
            i += 1;
        }
        text.extend(chars.get(i));
        i += 1;
    }
    (text, i + 1)
}

/// `r"..."`, `r#"..."#`, `b"..."`, `br#"..."#`, `b'x'`, `c"..."`, or a raw identifier `r#name`.
fn prefixed_literal(chars: &[char], start: usize) -> Option<(Token, usize)> {
    let preceded_by_word = start > 0 && (chars[start - 1].is_alphanumeric() || chars[start - 1] == '_');
    if preceded_by_word {
        return None;
    }
    let mut i = start;
    if matches!(chars[i], 'b' | 'c') {
        i += 1;
    }
    if chars.get(i) == Some(&'\'') && i > start {
        return Some((Token::Other, char_or_lifetime_end(chars, i)));
    }
    let raw = chars.get(i) == Some(&'r');
    if raw {
        i += 1;
    }
    let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
    if raw && hashes == 1 && chars.get(i + 1).is_some_and(|c| c.is_alphabetic() || *c == '_') && i == start + 1 {
        let begin = i + 1;
        let mut end = begin;
        while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
            end += 1;
        }
        return Some((Token::Ident(chars[begin..end].iter().collect()), end));
    }
    if chars.get(i + hashes) != Some(&'"') || (i == start) || (!raw && hashes > 0) {
        return None;
    }
    if !raw {
        let (text, end) = quoted(chars, i);
        return Some((Token::Str(text), end));
    }
    let body = i + hashes + 1;
    let mut end = body;
    while end < chars.len()
        && !(chars[end] == '"' && chars[end + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes)
    {
        end += 1;
    }
    Some((Token::Str(chars[body..end.min(chars.len())].iter().collect()), end + 1 + hashes))
}

/// The index after a character literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`).
fn char_or_lifetime_end(chars: &[char], start: usize) -> usize {
    if chars.get(start + 1) == Some(&'\\') {
        let mut i = start + 2;
        while i < chars.len() && chars[i] != '\'' {
            i += 1;
        }
        return i + 1;
    }
    if chars.get(start + 2) == Some(&'\'') {
        return start + 3;
    }
    let mut i = start + 1;
    while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
        i += 1;
    }
    i
}
