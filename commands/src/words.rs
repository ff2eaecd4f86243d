//! Splitting command arguments into words, shell-style, and finding
//! top-level punctuation in text that mixes commands and C expressions.

/// One word of an argument list, with its quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub text: String,
    /// Byte offset just past the word in the scanned text.
    pub end: usize,
    /// An unquoted `<`, `>` or `>>` (only when operators are enabled).
    pub operator: bool,
}

/// Reads words one at a time, so that a caller can stop at a keyword such
/// as `-if` and take the rest of the line raw (expressions have their own
/// quoting rules and must not go through the shell rules).
pub(crate) struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    /// Treat unquoted `<`, `>`, `>>` as words of their own (for `run`).
    redirections: bool,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Self {
        Scanner {
            text,
            pos: 0,
            redirections: false,
        }
    }

    pub fn with_redirections(text: &'a str) -> Self {
        Scanner {
            redirections: true,
            ..Scanner::new(text)
        }
    }

    /// The unread rest of the text, without leading blanks.
    pub fn rest(&self) -> &'a str {
        self.text[self.pos..].trim()
    }

    /// The next word, `Ok(None)` at the end, or an error for an unclosed quote.
    pub fn next_word(&mut self) -> Result<Option<Word>, String> {
        let mut chars = self.text[self.pos..].char_indices().peekable();
        while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let Some(&(_, first)) = chars.peek() else {
            self.pos = self.text.len();
            return Ok(None);
        };
        let mut text = String::new();
        let mut end = self.text.len() - self.pos;
        if self.redirections && (first == '<' || first == '>') {
            chars.next();
            text.push(first);
            if first == '>' && chars.next_if(|(_, c)| *c == '>').is_some() {
                text.push('>');
            }
            end = chars.peek().map_or(end, |(i, _)| *i);
            self.pos += end;
            return Ok(Some(Word {
                text,
                end: self.pos,
                operator: true,
            }));
        }
        while let Some(&(i, c)) = chars.peek() {
            if c.is_whitespace() || (self.redirections && (c == '<' || c == '>')) {
                end = i;
                break;
            }
            chars.next();
            match c {
                '\'' => loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, ch)) => text.push(ch),
                        None => return Err("unterminated ' quote".to_string()),
                    }
                },
                '"' => loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, ch @ ('"' | '\\' | '$' | '`'))) => text.push(ch),
                            Some((_, ch)) => {
                                text.push('\\');
                                text.push(ch);
                            }
                            None => return Err("unterminated \" quote".to_string()),
                        },
                        Some((_, ch)) => text.push(ch),
                        None => return Err("unterminated \" quote".to_string()),
                    }
                },
                '\\' => text.push(chars.next().map_or('\\', |(_, ch)| ch)),
                _ => text.push(c),
            }
        }
        self.pos += end;
        Ok(Some(Word {
            text,
            end: self.pos,
            operator: false,
        }))
    }

    /// The next word as a function name: blanks inside `<>`, `()`, `[]`
    /// and `{}` belong to it (`Counter<K>::feed<String, main::{closure_env#1}>`,
    /// `<X as Y>::f`, `f(int, char)`). A quoted name is a plain word.
    pub fn next_name(&mut self) -> Result<Option<Word>, String> {
        let rest = &self.text[self.pos..];
        let start = rest.len() - rest.trim_start().len();
        let body = &rest[start..];
        if body.is_empty() || body.starts_with(['\'', '"']) {
            return self.next_word();
        }
        let mut depth = 0usize;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '<' | '(' | '[' | '{' => depth += 1,
                '>' | ')' | ']' | '}' => depth = depth.saturating_sub(1),
                c if c.is_whitespace() && depth == 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        if depth > 0 {
            return Err(format!("unbalanced brackets in \"{}\"", body.trim_end()));
        }
        let text = body[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        self.pos += start + end;
        Ok(Some(Word {
            text,
            end: self.pos,
            operator: false,
        }))
    }

    /// All remaining words.
    pub fn all_words(mut self) -> Result<Vec<Word>, String> {
        let mut words = Vec::new();
        while let Some(word) = self.next_word()? {
            words.push(word);
        }
        Ok(words)
    }
}

/// The byte positions of characters outside quotes and at nesting depth 0
/// of `()[]{}`, with their depth-0 flag; C quoting rules (backslash escapes
/// in both quote kinds).
fn top_level_chars(text: &str) -> Result<Vec<(usize, char, usize)>, String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' | '"' => {
                let quote = c;
                loop {
                    match chars.next() {
                        Some((_, '\\')) => {
                            chars.next();
                        }
                        Some((_, ch)) if ch == quote => break,
                        Some(_) => {}
                        None => return Err(format!("unterminated {quote} quote")),
                    }
                }
            }
            '(' | '[' | '{' => {
                out.push((i, c, depth));
                depth += 1;
            }
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                out.push((i, c, depth));
            }
            _ => out.push((i, c, depth)),
        }
    }
    Ok(out)
}

/// Position of the first `{` outside quotes and brackets, and of its
/// matching `}` if there is one.
pub(crate) fn find_braces(text: &str) -> Result<Option<(usize, Option<usize>)>, String> {
    let chars = top_level_chars(text)?;
    let Some(&(open, _, _)) = chars.iter().find(|(_, c, d)| *c == '{' && *d == 0) else {
        return Ok(None);
    };
    let close = chars
        .iter()
        .find(|(i, c, d)| *i > open && *c == '}' && *d == 0)
        .map(|(i, _, _)| *i);
    Ok(Some((open, close)))
}

/// Splits on `separator` where it is outside quotes and brackets.
pub(crate) fn split_top_level(text: &str, separator: char) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c, depth) in top_level_chars(text)? {
        if c == separator && depth == 0 {
            parts.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&text[start..]);
    Ok(parts)
}

/// Position of a lone `=` (assignment, not `==`, `<=`, `>=`, `!=`) at top level.
pub(crate) fn find_assignment(text: &str) -> Result<Option<usize>, String> {
    let bytes = text.as_bytes();
    for (i, c, depth) in top_level_chars(text)? {
        if c != '=' || depth != 0 {
            continue;
        }
        let before = i.checked_sub(1).map(|j| bytes[j]);
        let after = bytes.get(i + 1).copied();
        let compound = matches!(before, Some(b'=' | b'<' | b'>' | b'!')) || after == Some(b'=');
        if !compound {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str, redirections: bool) -> Vec<String> {
        let scanner = if redirections {
            Scanner::with_redirections(line)
        } else {
            Scanner::new(line)
        };
        scanner
            .all_words()
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(
            texts(r#"a 'b c' "d \"e\"" f\ g "x"y"#, false),
            ["a", "b c", "d \"e\"", "f g", "xy"]
        );
        assert_eq!(texts("  ", false), Vec::<String>::new());
        assert!(Scanner::new("'abc").all_words().is_err());
        assert!(Scanner::new("\"abc").all_words().is_err());
    }

    #[test]
    fn redirections_split_words() {
        assert_eq!(
            texts("a<in >out >>log '>'x", true),
            ["a", "<", "in", ">", "out", ">>", "log", ">x"]
        );
        assert_eq!(texts("vector<int>", false), ["vector<int>"]);
    }

    #[test]
    fn rest_after_a_word() {
        let mut s = Scanner::new("in f -if x == 'a' ");
        s.next_word().unwrap();
        s.next_word().unwrap();
        assert_eq!(s.next_word().unwrap().unwrap().text, "-if");
        assert_eq!(s.rest(), "x == 'a'");
    }

    #[test]
    fn top_level_splitting() {
        assert_eq!(
            split_top_level("print \";\"; when in f { a; b }; p ';'", ';').unwrap(),
            ["print \";\"", " when in f { a; b }", " p ';'"]
        );
        assert_eq!(
            find_braces("in f { p \"}\" }").unwrap(),
            Some((5, Some(13)))
        );
        assert_eq!(find_braces("in f { p x").unwrap(), Some((5, None)));
        assert_eq!(find_assignment("a[i==1] = b").unwrap(), Some(8));
        assert_eq!(find_assignment("a == b").unwrap(), None);
        assert_eq!(find_assignment("a <= b").unwrap(), None);
    }
}
