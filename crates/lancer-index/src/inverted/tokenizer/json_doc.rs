//! Full-text indexing of JSON documents (`lance_tokenizer: "json"`, what pylance 14
//! builds for an INVERTED index on a JSON column): a document's tokens are
//! `path,type,value` triples, one per scalar it holds —
//!
//! - `path` the object keys from the root joined by `.` (as written, not analyzed;
//!   arrays add nothing: their elements share the array's path; a scalar document has
//!   the empty path);
//! - `type` one of `str`, `number`, `bool`, `null`;
//! - `value`: for a string, each token of the column's text analyzer (so
//!   `{"title": "Hello worlds"}` gives `title,str,hello` and `title,str,world`); for
//!   the others the JSON text as written (`1.5`, `1e+20`, `true`, `null`), unchanged.
//!
//! A query is one triple, `path,type,value` — split at its first two commas, the value
//! analyzed as above for `str` — and matches the documents holding its tokens (probed
//! against pylance 14: "Invalid triple format" / "Invalid triple type" otherwise).
//!
//! The documents arrive as JSON text (the column as reads return it, numbers written
//! as the stored JSONB writes them); the parser here keeps number lexemes as they are,
//! decodes string escapes, and bounds nesting.

/// The kind of a JSON scalar, as a triple names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Str,
    Number,
    Bool,
    Null,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Str => "str",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Null => "null",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "str" => Kind::Str,
            "number" => Kind::Number,
            "bool" => Kind::Bool,
            "null" => Kind::Null,
            _ => return None,
        })
    }
}

/// Nesting deeper than this is not a document this tokenizer indexes.
const MAX_DEPTH: usize = 256;

/// Calls `leaf(path, kind, value)` for every scalar of the JSON document `text`, in
/// document order (`value`: the decoded string, or the literal's text). Malformed
/// text is an error (nothing is promised about the leaves already handed out).
pub(crate) fn leaves(text: &str, leaf: &mut dyn FnMut(&str, Kind, &str)) -> Result<(), String> {
    let mut p = Parser {
        s: text.as_bytes(),
        text,
        at: 0,
    };
    let mut path = String::new();
    p.value(&mut path, 0, leaf)?;
    p.ws();
    if p.at != p.s.len() {
        return Err(format!("trailing characters at byte {}", p.at));
    }
    Ok(())
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self
            .s
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.ws();
        if self.s.get(self.at) == Some(&b) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", b as char, self.at))
        }
    }

    fn value(
        &mut self,
        path: &mut String,
        depth: usize,
        leaf: &mut dyn FnMut(&str, Kind, &str),
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        self.ws();
        match self.s.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                self.ws();
                if self.s.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(());
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.expect(b':')?;
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&key);
                    self.value(path, depth + 1, leaf)?;
                    path.truncate(len);
                    self.ws();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(());
                        }
                        _ => return Err(format!("expected ',' or '}}' at byte {}", self.at)),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                self.ws();
                if self.s.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(());
                }
                loop {
                    self.value(path, depth + 1, leaf)?;
                    self.ws();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(());
                        }
                        _ => return Err(format!("expected ',' or ']' at byte {}", self.at)),
                    }
                }
            }
            Some(b'"') => {
                let s = self.string()?;
                leaf(path, Kind::Str, &s);
                Ok(())
            }
            Some(b't') => self.literal("true", Kind::Bool, path, leaf),
            Some(b'f') => self.literal("false", Kind::Bool, path, leaf),
            Some(b'n') => self.literal("null", Kind::Null, path, leaf),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                leaf(path, Kind::Number, &self.text[start..self.at]);
                Ok(())
            }
            _ => Err(format!("expected a JSON value at byte {}", self.at)),
        }
    }

    fn literal(
        &mut self,
        word: &'static str,
        kind: Kind,
        path: &str,
        leaf: &mut dyn FnMut(&str, Kind, &str),
    ) -> Result<(), String> {
        if self.s[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            leaf(path, kind, word);
            Ok(())
        } else {
            Err(format!("expected '{word}' at byte {}", self.at))
        }
    }

    /// A string literal at the cursor, escapes decoded.
    fn string(&mut self) -> Result<String, String> {
        if self.s.get(self.at) != Some(&b'"') {
            return Err(format!("expected a string at byte {}", self.at));
        }
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self
                .s
                .get(self.at)
                .is_some_and(|&b| b != b'"' && b != b'\\')
            {
                self.at += 1;
            }
            out.push_str(&self.text[start..self.at]);
            match self.s.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let e = *self
                        .s
                        .get(self.at + 1)
                        .ok_or_else(|| "a string ends inside an escape".to_string())?;
                    self.at += 2;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let c = if (0xD800..0xDC00).contains(&hi)
                                && self.s[self.at..].starts_with(b"\\u")
                            {
                                self.at += 2;
                                let lo = self.hex4()?;
                                char::from_u32(
                                    0x10000
                                        + ((hi - 0xD800) << 10)
                                        + (lo.wrapping_sub(0xDC00) & 0x3FF),
                                )
                            } else {
                                char::from_u32(hi)
                            };
                            out.push(c.unwrap_or('\u{FFFD}'));
                        }
                        other => {
                            return Err(format!("unknown escape '\\{}'", other as char));
                        }
                    }
                }
                _ => return Err("an unterminated string".into()),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self
            .text
            .get(self.at..self.at + 4)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("a bad \\u escape at byte {}", self.at))?;
        self.at += 4;
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        leaves(text, &mut |p, k, v| {
            out.push(format!("{p},{},{v}", k.name()))
        })
        .unwrap();
        out
    }

    #[test]
    fn paths_types_and_literals_as_pylance_names_them() {
        assert_eq!(
            all(
                r#"{"a":{"b":[1,{"c":"x"}],"d":null},"e":true,"f":-1.5e+3,"g":[[2]],"h":{},"i":[]}"#
            ),
            [
                "a.b,number,1",
                "a.b.c,str,x",
                "a.d,null,null",
                "e,bool,true",
                "f,number,-1.5e+3",
                "g,number,2"
            ]
        );
        assert_eq!(all(r#""top""#), [",str,top"]);
        assert_eq!(all("[3, \"x\"]"), [",number,3", ",str,x"]);
        assert_eq!(all(r#"{"k.l":"\u00e9\ud83d\ude00\n"}"#), ["k.l,str,é😀\n"]);
    }

    #[test]
    fn malformed_text_is_an_error_not_a_panic() {
        for bad in [
            "{",
            "[1,",
            "{\"a\" 1}",
            "\"\\u12\"",
            "tru",
            "{\"a\":1}x",
            "\"\\ud800\\u",
        ] {
            assert!(leaves(bad, &mut |_, _, _| {}).is_err(), "{bad}");
        }
        let deep = "[".repeat(1000);
        assert!(leaves(&deep, &mut |_, _, _| {}).is_err());
    }
}
