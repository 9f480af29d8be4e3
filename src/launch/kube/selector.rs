//! Label selectors as the API server parses them (k8s.io/apimachinery `labels.Parse`), checked
//! here so that a malformed `--selector` is refused before any request is sent. Only the check:
//! the selector itself goes to the API server as the user wrote it.
//!
//! The grammar (apimachinery's own comment):
//!
//! ```text
//! <selector-syntax>         ::= <requirement> | <requirement> "," <selector-syntax>
//! <requirement>             ::= [!] KEY [ <set-based-restriction> | <exact-match-restriction> ]
//! <set-based-restriction>   ::= "" | <inclusion-exclusion> <value-set>
//! <inclusion-exclusion>     ::= "in" | "notin"
//! <value-set>               ::= "(" <values> ")"
//! <values>                  ::= VALUE | VALUE "," <values>
//! <exact-match-restriction> ::= ["="|"=="|"!="|">"|"<"] VALUE
//! ```
//!
//! KEY is a qualified name (`[prefix/]name`, the prefix a DNS-1123 subdomain, the name 1–63 of
//! `A-Za-z0-9-_.` alphanumeric at both ends), VALUE a label value (the same, 0–63), `>` and `<`
//! take an integer. The lexer is apimachinery's: whitespace separates, `=!(),<>` are symbols
//! (longest match of `=`, `==`, `!`, `!=`, …), every other run of characters is one word, and
//! `in`/`notin` are keywords only where an operator is expected. The empty selector selects
//! everything.

use super::names::is_label_value;
use crate::error::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    Not,
    Comma,
    Open,
    Close,
    End,
}

impl Token {
    /// The text the token was read from, for messages.
    fn literal(&self) -> &str {
        match self {
            Token::Word(w) => w,
            Token::In => "in",
            Token::NotIn => "notin",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::Greater => ">",
            Token::Less => "<",
            Token::Not => "!",
            Token::Comma => ",",
            Token::Open => "(",
            Token::Close => ")",
            Token::End => "",
        }
    }

    /// Where a value may stand, `in` and `notin` are words.
    fn as_value(&self) -> Token {
        match self {
            Token::In | Token::NotIn => Token::Word(self.literal().to_string()),
            t => t.clone(),
        }
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_symbol(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        "=" => Token::Equals,
        "==" => Token::DoubleEquals,
        "!=" => Token::NotEquals,
        "!" => Token::Not,
        ">" => Token::Greater,
        "<" => Token::Less,
        "," => Token::Comma,
        "(" => Token::Open,
        ")" => Token::Close,
        _ => return None,
    })
}

fn lex(selector: &str) -> Vec<Token> {
    let chars: Vec<char> = selector.chars().collect();
    let mut tokens = vec![];
    let mut i = 0;
    loop {
        while i < chars.len() && is_space(chars[i]) {
            i += 1;
        }
        if i == chars.len() {
            tokens.push(Token::End);
            return tokens;
        }
        if is_symbol(chars[i]) {
            // The longest run of symbols that is a token (every single symbol is one).
            let mut best = (i + 1, symbol(&chars[i].to_string()).expect("a symbol"));
            let mut j = i + 1;
            while j < chars.len() && is_symbol(chars[j]) {
                let text: String = chars[i..=j].iter().collect();
                match symbol(&text) {
                    Some(t) => best = (j + 1, t),
                    None => break,
                }
                j += 1;
            }
            i = best.0;
            tokens.push(best.1);
        } else {
            let start = i;
            while i < chars.len() && !is_space(chars[i]) && !is_symbol(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Word(word),
            });
        }
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek_value(&self) -> Token {
        self.tokens[self.at].as_value()
    }

    fn next_value(&mut self) -> Token {
        let t = self.peek_value();
        self.at = (self.at + 1).min(self.tokens.len() - 1);
        t
    }

    fn next_operator(&mut self) -> Token {
        let t = self.tokens[self.at].clone();
        self.at = (self.at + 1).min(self.tokens.len() - 1);
        t
    }

    fn selector(&mut self) -> Result<(), String> {
        loop {
            match self.peek_value() {
                Token::Word(_) | Token::Not => {
                    self.requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    match self.next_value() {
                        Token::End => return Ok(()),
                        Token::Comma => match self.peek_value() {
                            Token::Word(_) | Token::Not => {}
                            t => {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    t.literal()
                                ));
                            }
                        },
                        t => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.literal()
                            ));
                        }
                    }
                }
                Token::End => return Ok(()),
                t => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<(), String> {
        let mut token = self.next_value();
        let not = token == Token::Not;
        if not {
            token = self.next_value();
        }
        let Token::Word(key) = token else {
            return Err(format!("found '{}', expected: identifier", token.literal()));
        };
        check_key(&key)?;
        // `!key` and `key` alone: existence.
        if not || matches!(self.peek_value(), Token::End | Token::Comma) {
            return Ok(());
        }
        let operator = self.next_operator();
        let values = match operator {
            Token::In | Token::NotIn => self.value_set()?,
            Token::Equals | Token::DoubleEquals | Token::NotEquals => vec![self.exact_value()?],
            Token::Greater | Token::Less => {
                let value = self.exact_value()?;
                if value.parse::<i64>().is_err() {
                    return Err(format!(
                        "for '{}' the value must be an integer, not '{value}'",
                        operator.literal()
                    ));
                }
                vec![value]
            }
            t => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, >, <",
                    t.literal()
                ));
            }
        };
        for value in values {
            if !is_label_value(&value) {
                return Err(format!(
                    "invalid label value '{value}' for key '{key}': at most 63 of A-Za-z0-9, \
                     '-', '_' and '.', beginning and ending with a letter or digit"
                ));
            }
        }
        Ok(())
    }

    /// `(a, b, …)`; empty entries are the empty value.
    fn value_set(&mut self) -> Result<Vec<String>, String> {
        let open = self.next_value();
        if open != Token::Open {
            return Err(format!("found '{}', expected: '('", open.literal()));
        }
        let mut values = vec![];
        match self.peek_value() {
            Token::Close => {
                self.next_value();
                return Ok(vec![String::new()]);
            }
            Token::Word(_) | Token::Comma => {}
            t => {
                return Err(format!(
                    "found '{}', expected: ',', ')' or identifier",
                    t.literal()
                ));
            }
        }
        loop {
            match self.next_value() {
                Token::Word(w) => {
                    values.push(w);
                    match self.peek_value() {
                        Token::Comma => {}
                        Token::Close => break,
                        t => return Err(format!("found '{}', expected: ',' or ')'", t.literal())),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    match self.peek_value() {
                        Token::Close => {
                            values.push(String::new());
                            break;
                        }
                        Token::Comma => {
                            self.next_value();
                            values.push(String::new());
                        }
                        _ => {}
                    }
                }
                t => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        t.literal()
                    ));
                }
            }
        }
        let close = self.next_value();
        if close != Token::Close {
            return Err(format!("found '{}', expected: ')'", close.literal()));
        }
        Ok(values)
    }

    /// The one value after `=`, `==`, `!=`, `>`, `<` (none before `,` or the end: empty).
    fn exact_value(&mut self) -> Result<String, String> {
        if matches!(self.peek_value(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.next_value() {
            Token::Word(w) => Ok(w),
            t => Err(format!("found '{}', expected: identifier", t.literal())),
        }
    }
}

/// A DNS-1123 subdomain as apimachinery checks one (`IsDNS1123Subdomain`): 1–253 characters,
/// dot-separated parts of `a-z0-9-`, each alphanumeric at both ends. Its pattern puts no limit
/// on a part's length (a name's own parts are limited elsewhere; a key's prefix is not).
fn is_subdomain(s: &str) -> bool {
    (1..=253).contains(&s.len())
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

/// `[prefix/]name`: the prefix a DNS-1123 subdomain, the name 1–63 label characters.
fn check_key(key: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("invalid label key '{key}': {why}"));
    let name = match key.split('/').collect::<Vec<_>>()[..] {
        [name] => name,
        [prefix, name] => {
            if !is_subdomain(prefix) {
                return bad("the prefix before '/' must be a DNS subdomain (e.g. example.com)");
            }
            name
        }
        _ => return bad("at most one '/'"),
    };
    if name.is_empty() || !is_label_value(name) {
        return bad(
            "the name must be 1 to 63 of A-Za-z0-9, '-', '_' and '.', beginning and ending \
             with a letter or digit",
        );
    }
    Ok(())
}

/// Whether the API server would accept `selector` as a label selector; if not, why (in the
/// words apimachinery uses).
pub fn check(selector: &str) -> Result<(), String> {
    Parser {
        tokens: lex(selector),
        at: 0,
    }
    .selector()
}

/// `--selector` (`-l`), checked before anything is sent: a malformed one is the user's input
/// (exit 2), named with the flag.
pub fn check_flag(selector: &str) -> Result<(), Error> {
    check(selector).map_err(|why| invalid(selector, &why))
}

/// A `--selector` that is not a label selector (said by `check`, or by the API server's 400).
pub fn invalid(selector: &str, why: &str) -> Error {
    Error::Usage {
        message: format!("--selector `{selector}` is not a valid label selector: {why}"),
        hint: Some(
            "write it as kubectl does: key=value, key!=value, key in (a,b), notin, key, !key, \
             comma-separated"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn what_the_api_server_accepts() {
        for ok in [
            "",
            "  ",
            "a",
            "!a",
            "a=b",
            "a==b",
            "a!=b",
            "a=",
            "a==",
            "a = b",
            "a in (b, c)",
            "a notin (b)",
            "a in ()",
            "a in (,)",
            "a in (b,,c)",
            "a in (in)",
            "in=notin",
            "a>1",
            "a<10",
            "a,b=c,!d",
            "node.kubernetes.io/instance-type=p5.48xlarge",
            "example.com/Key_1.x=V-1",
            "a=b,c in (d),!e,f!=g",
        ] {
            assert_eq!(check(ok), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn what_the_api_server_refuses() {
        for (bad, why) in [
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            ("!!", "found '!', expected: identifier"),
            ("a in (b", "found '', expected: ',' or ')'"),
            ("a,", "expected: identifier after ','"),
            (",a", "found ','"),
            ("a b", "found 'b', expected: in, notin"),
            ("a in b", "expected: '('"),
            ("!a=b", "found '=', expected: ',' or 'end of string'"),
            ("a>b", "must be an integer"),
            ("a>", "must be an integer"),
            ("-a=b", "invalid label key '-a'"),
            ("a/b/c", "at most one '/'"),
            ("/a", "prefix"),
            ("Example.com/a", "prefix"),
            ("a/", "the name must be"),
            ("a=-b", "invalid label value '-b'"),
            ("a in (b c)", "found 'c', expected: ',' or ')'"),
            ("a=(b)", "found '(', expected: identifier"),
            ("a>=1", "found '=', expected: identifier"),
        ] {
            let err = check(bad).expect_err(bad);
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let long = format!("a={}", "v".repeat(64));
        assert!(check(&long).is_err());
    }
}
