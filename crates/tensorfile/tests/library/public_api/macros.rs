//! `macro_rules!` expansion, enough for macros that declare items (the library's
//! `internal_modules!`, `registry!`, `ggml_types!`): fragments, literal tokens, groups and
//! repetitions, matched without backtracking. A fragment of several tokens (`expr`, `path`,
//! `ty`, `meta`...) runs to the token the matcher expects after it.

use std::collections::BTreeMap;

use super::tokens::Token;

/// What a matcher's `$name` took: tokens, or one binding per repetition.
#[derive(Debug, Clone)]
enum Binding {
    Tokens(Vec<Token>),
    Repeated(Vec<BTreeMap<String, Binding>>),
}

type Bindings = BTreeMap<String, Binding>;

/// The expansion of a macro (its rules: `(matcher) => {template};`...) applied to `input`, by
/// its first rule that matches.
pub(crate) fn expand(rules: &[Token], input: &[Token]) -> Option<Vec<Token>> {
    let mut k = 0;
    while k + 2 < rules.len() {
        if let (Token::Group(_, matcher), Token::Arrow, Token::Group(_, template)) =
            (&rules[k], &rules[k + 1], &rules[k + 2])
        {
            let mut bindings = Bindings::new();
            let mut at = 0;
            if match_sequence(matcher, input, &mut at, None, &mut bindings) && at == input.len() {
                let mut out = Vec::new();
                transcribe(template, &bindings, &mut out);
                return Some(out);
            }
        }
        k += 3;
        while rules.get(k).is_some_and(|t| t.is_punct(';')) {
            k += 1;
        }
    }
    None
}

/// Matches `pattern` against `input` from `at`; `stop` is the token expected after the
/// pattern (where a fragment of several tokens ends).
fn match_sequence(
    pattern: &[Token],
    input: &[Token],
    at: &mut usize,
    stop: Option<&Token>,
    bindings: &mut Bindings,
) -> bool {
    let mut p = 0;
    while p < pattern.len() {
        match (&pattern[p], pattern.get(p + 1)) {
            (Token::Punct('$'), Some(Token::Group('(', inner))) => {
                let (separator, after) = repetition_operator(pattern, p + 2);
                let next = separator.or_else(|| pattern.get(after)).or(stop);
                let mut rounds = Vec::new();
                loop {
                    let (start, mut round) = (*at, Bindings::new());
                    if *at >= input.len() || !match_sequence(inner, input, at, next, &mut round) || *at == start {
                        *at = start;
                        break;
                    }
                    rounds.push(round);
                    match separator {
                        Some(s) if input.get(*at) == Some(s) => *at += 1,
                        Some(_) => break,
                        None => {}
                    }
                }
                for name in names_in(inner) {
                    bindings
                        .insert(name.clone(), Binding::Repeated(rounds.iter().map(|r| project(r, &name)).collect()));
                }
                p = after;
            }
            (Token::Punct('$'), Some(Token::Ident(name))) => {
                let kind = pattern.get(p + 3).and_then(Token::ident).unwrap_or("tt");
                let until = pattern.get(p + 4).or(stop);
                let end = match kind {
                    "ident" | "literal" | "tt" | "lifetime" | "block" => (*at + 1).min(input.len()),
                    _ => (*at..input.len()).find(|&k| Some(&input[k]) == until).unwrap_or(input.len()),
                };
                if end == *at {
                    return false;
                }
                bindings.insert(name.clone(), Binding::Tokens(input[*at..end].to_vec()));
                *at = end;
                p += 4;
            }
            (Token::Group(open, inner), _) => {
                let Some(Token::Group(given, inside)) = input.get(*at) else { return false };
                let mut inner_at = 0;
                if open != given
                    || !match_sequence(inner, inside, &mut inner_at, None, bindings)
                    || inner_at != inside.len()
                {
                    return false;
                }
                *at += 1;
                p += 1;
            }
            (literal, _) => {
                if input.get(*at) != Some(literal) {
                    return false;
                }
                *at += 1;
                p += 1;
            }
        }
    }
    true
}

/// After a repetition's `)` at `at`: its separator, if any, and the index past its operator.
fn repetition_operator(pattern: &[Token], at: usize) -> (Option<&Token>, usize) {
    let is_operator = |t: Option<&Token>| t.is_some_and(|t| ['*', '+', '?'].iter().any(|c| t.is_punct(*c)));
    if is_operator(pattern.get(at)) { (None, at + 1) } else { (pattern.get(at), at + 2) }
}

/// The `$name`s a matcher or template names.
fn names_in(tokens: &[Token]) -> Vec<String> {
    let mut names = Vec::new();
    for (k, t) in tokens.iter().enumerate() {
        match (t, tokens.get(k + 1)) {
            (Token::Punct('$'), Some(Token::Ident(name))) if name != "crate" => names.push(name.clone()),
            (Token::Group(_, inner), _) => names.extend(names_in(inner)),
            _ => {}
        }
    }
    names
}

/// A round's binding of `name` alone.
fn project(round: &Bindings, name: &str) -> Bindings {
    round.get(name).map(|b| Bindings::from([(name.to_string(), b.clone())])).unwrap_or_default()
}

fn transcribe(template: &[Token], bindings: &Bindings, out: &mut Vec<Token>) {
    let mut k = 0;
    while k < template.len() {
        match (&template[k], template.get(k + 1)) {
            (Token::Punct('$'), Some(Token::Ident(name))) => {
                match bindings.get(name) {
                    Some(Binding::Tokens(tokens)) => out.extend(tokens.iter().cloned()),
                    _ => out.push(Token::Ident(name.clone())),
                }
                k += 2;
            }
            (Token::Punct('$'), Some(Token::Group('(', inner))) => {
                let (separator, after) = repetition_operator(template, k + 2);
                let rounds = names_in(inner)
                    .iter()
                    .find_map(|n| match bindings.get(n) {
                        Some(Binding::Repeated(rounds)) => Some(rounds.len()),
                        _ => None,
                    })
                    .unwrap_or(0);
                for round in 0..rounds {
                    if round > 0 {
                        out.extend(separator.cloned());
                    }
                    let mut these = bindings.clone();
                    for (name, binding) in bindings {
                        if let Binding::Repeated(each) = binding {
                            these.remove(name);
                            these.extend(each.get(round).cloned().unwrap_or_default());
                        }
                    }
                    transcribe(inner, &these, out);
                }
                k = after;
            }
            (Token::Group(open, inner), _) => {
                let mut expanded = Vec::new();
                transcribe(inner, bindings, &mut expanded);
                out.push(Token::Group(*open, expanded));
                k += 1;
            }
            (t, _) => {
                out.push(t.clone());
                k += 1;
            }
        }
    }
}
