//! Symbolic sizes as people read them. An archive stores each symbolic size as sympy's
//! `srepr` (`Mul(Integer(2), Symbol('s77', positive=True, integer=True))`); `info` shows it
//! as torch prints it (`2*s77`). Text that is not understood is shown as it is.

/// `srepr` text as an expression (`s17 + s77`, `2*s77`), or the text itself.
pub fn readable(srepr: &str) -> String {
    let mut p = Parser { text: srepr.as_bytes(), at: 0, depth: 0 };
    match p.expr() {
        Some(e) if p.at == p.text.len() => e.text,
        _ => srepr.to_string(),
    }
}

/// A printed sub-expression and whether it needs parentheses inside a product or power.
struct Printed {
    text: String,
    is_sum: bool,
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    depth: usize,
}

/// Deeper nesting than this is shown as written (and cannot exhaust the stack).
const MAX_DEPTH: usize = crate::limits::MAX_NESTING;

impl Parser<'_> {
    fn eat(&mut self, c: u8) -> bool {
        while self.text.get(self.at) == Some(&b' ') {
            self.at += 1;
        }
        if self.text.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> &str {
        let start = self.at;
        while self.text.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-') {
            self.at += 1;
        }
        std::str::from_utf8(&self.text[start..self.at]).unwrap_or("")
    }

    fn quoted(&mut self) -> Option<String> {
        let start = self.at;
        while *self.text.get(self.at)? != b'\'' {
            self.at += 1;
        }
        let s = std::str::from_utf8(&self.text[start..self.at]).ok()?.to_string();
        self.at += 1;
        Some(s)
    }

    /// An argument: an expression, a quoted name or `keyword=value` (kept out of the result).
    fn argument(&mut self) -> Option<Option<Printed>> {
        if self.eat(b'\'') {
            let s = self.quoted()?;
            return Some(Some(Printed { text: s, is_sum: false }));
        }
        let mark = self.at;
        self.word();
        if self.eat(b'=') {
            self.word();
            return Some(None);
        }
        self.at = mark;
        self.expr().map(Some)
    }

    fn expr(&mut self) -> Option<Printed> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let head = self.word().to_string();
        if head.is_empty() {
            return None;
        }
        if !self.eat(b'(') {
            self.depth -= 1;
            return Some(Printed { text: head, is_sum: false });
        }
        let mut args = Vec::new();
        if !self.eat(b')') {
            loop {
                if let Some(a) = self.argument()? {
                    args.push(a);
                }
                if self.eat(b')') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        self.depth -= 1;
        Some(combine(&head, args))
    }
}

fn factor(p: &Printed) -> String {
    if p.is_sum { format!("({})", p.text) } else { p.text.clone() }
}

fn combine(head: &str, args: Vec<Printed>) -> Printed {
    let simple = |text: String| Printed { text, is_sum: false };
    match (head, args.as_slice()) {
        ("Symbol" | "Integer", [a]) => simple(a.text.clone()),
        ("Rational", [p, q]) => simple(format!("{}/{}", p.text, q.text)),
        ("Add", [_, _, ..]) => {
            let mut text = args[0].text.clone();
            for a in &args[1..] {
                match a.text.strip_prefix('-') {
                    Some(rest) => text.push_str(&format!(" - {rest}")),
                    None => text.push_str(&format!(" + {}", a.text)),
                }
            }
            Printed { text, is_sum: true }
        }
        ("Mul", [_, _, ..]) => {
            let parts: Vec<String> = args.iter().map(factor).collect();
            let text = parts.join("*");
            simple(text.strip_prefix("-1*").map(|r| format!("-{r}")).unwrap_or(text))
        }
        ("Pow", [a, b]) => simple(format!("{}**{}", factor(a), factor(b))),
        ("FloorDiv", [a, b]) => simple(format!("({}//{})", a.text, b.text)),
        ("Mod", [a, b]) => simple(format!("Mod({}, {})", a.text, b.text)),
        _ => {
            let parts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
            simple(format!("{head}({})", parts.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn sizes_read_as_torch_prints_them() {
        let s77 = "Symbol('s77', positive=True, integer=True)";
        let s17 = "Symbol('s17', positive=True, integer=True)";
        assert_eq!(readable(s77), "s77");
        assert_eq!(readable(&format!("Mul(Integer(2), {s77})")), "2*s77");
        assert_eq!(readable(&format!("Add({s17}, {s77})")), "s17 + s77");
        assert_eq!(readable(&format!("Mul(Integer(3), Add({s17}, Integer(1)))")), "3*(s17 + 1)");
        assert_eq!(readable(&format!("Add({s17}, Integer(-1))")), "s17 - 1");
        assert_eq!(readable(&format!("FloorDiv({s17}, Integer(2))")), "(s17//2)");
    }

    #[test]
    fn what_is_not_understood_stays_as_written() {
        for text in ["s0 + 1", "Mul(Integer(2)", "Symbol('unterminated", "", "Add(,)"] {
            assert_eq!(readable(text), text);
        }
        let deep = format!("{}x{}", "Neg(".repeat(1000), ")".repeat(1000));
        assert_eq!(readable(&deep), deep);
    }
}
