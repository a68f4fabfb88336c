//! The JSON syntax errors of jiter 0.19 (pydantic-core's parser), as
//! pydantic reports them for `model_validate_json`: `Invalid JSON: <what> at
//! line L column C` (column in bytes, 1-based).
//!
//! Only the syntax is checked here: a document that passes is then read with
//! Python's `json.loads` ([`crate::pyvalue::json::loads`]), whose values are
//! the same for everything jiter accepts (NaN and ±Infinity included, as
//! pydantic parses with `allow_inf_nan`). Number errors are reported where
//! the number's text stops being a number, which is where jiter stops too
//! for the common cases (`01`, `1.`, `-x`).

/// jiter's nesting limit.
const RECURSION_LIMIT: usize = 200;

/// A syntax error: jiter's message and the byte index it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub message: &'static str,
    pub index: usize,
}

impl SyntaxError {
    /// `"<message> at line L column C"`, jiter's `description`.
    pub fn description(&self, data: &[u8]) -> String {
        let (line, column) = line_position(data, self.index);
        format!("{} at line {line} column {column}", self.message)
    }
}

/// jiter's `LinePosition::find`, quirks included (an index on a newline
/// reports column 0 of the next line).
fn line_position(data: &[u8], find: usize) -> (usize, usize) {
    let (mut line, mut last_line_start) = (1, 0);
    for (index, &b) in data.iter().enumerate() {
        if b == b'\n' {
            line += 1;
            last_line_start = index + 1;
        }
        if index == find {
            return (line, index + 1 - last_line_start);
        }
    }
    (line, data.len().saturating_sub(last_line_start))
}

/// Checks `data` as jiter parses a whole document.
pub fn check(data: &[u8]) -> Result<(), SyntaxError> {
    let mut p = Parser { data, index: 0 };
    let first = p.peek()?;
    p.value(first, 0)?;
    match p.eat_whitespace() {
        None => Ok(()),
        Some(_) => p.err("trailing characters"),
    }
}

struct Parser<'a> {
    data: &'a [u8],
    index: usize,
}

impl Parser<'_> {
    fn err<T>(&self, message: &'static str) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            message,
            index: self.index,
        })
    }

    fn eat_whitespace(&mut self) -> Option<u8> {
        while let Some(&b) = self.data.get(self.index) {
            match b {
                b' ' | b'\r' | b'\t' | b'\n' => self.index += 1,
                _ => return Some(b),
            }
        }
        None
    }

    fn peek(&mut self) -> Result<u8, SyntaxError> {
        match self.eat_whitespace() {
            Some(b) => Ok(b),
            None => self.err("EOF while parsing a value"),
        }
    }

    fn value(&mut self, first: u8, depth: usize) -> Result<(), SyntaxError> {
        match first {
            b'n' => self.ident(b"ull"),
            b't' => self.ident(b"rue"),
            b'f' => self.ident(b"alse"),
            b'"' => self.string(),
            b'[' => self.array(depth + 1),
            b'{' => self.object(depth + 1),
            b'I' => self.ident(b"nfinity"),
            b'N' => self.ident(b"aN"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.err("expected value"),
        }
    }

    fn ident(&mut self, rest: &[u8]) -> Result<(), SyntaxError> {
        self.index += 1;
        for &c in rest {
            match self.data.get(self.index) {
                Some(&v) if v == c => self.index += 1,
                Some(_) => return self.err("expected ident"),
                None => return self.err("EOF while parsing a value"),
            }
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), SyntaxError> {
        let digit = |p: &Self| p.data.get(p.index).is_some_and(u8::is_ascii_digit);
        if self.data.get(self.index) == Some(&b'-') {
            self.index += 1;
            match self.data.get(self.index) {
                Some(b'I') => return self.ident(b"nfinity"),
                None => return self.err("EOF while parsing a value"),
                Some(b) if !b.is_ascii_digit() => return self.err("invalid number"),
                Some(_) => {}
            }
        }
        if self.data.get(self.index) == Some(&b'0') {
            self.index += 1;
            if digit(self) {
                return self.err("invalid number");
            }
        } else {
            while digit(self) {
                self.index += 1;
            }
        }
        if self.data.get(self.index) == Some(&b'.') {
            self.index += 1;
            if !digit(self) {
                return match self.data.get(self.index) {
                    None => self.err("EOF while parsing a value"),
                    Some(_) => self.err("invalid number"),
                };
            }
            while digit(self) {
                self.index += 1;
            }
        }
        if matches!(self.data.get(self.index), Some(b'e' | b'E')) {
            self.index += 1;
            if matches!(self.data.get(self.index), Some(b'+' | b'-')) {
                self.index += 1;
            }
            if !digit(self) {
                return match self.data.get(self.index) {
                    None => self.err("EOF while parsing a value"),
                    Some(_) => self.err("invalid number"),
                };
            }
            while digit(self) {
                self.index += 1;
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), SyntaxError> {
        self.index += 1;
        loop {
            let Some(&b) = self.data.get(self.index) else {
                return self.err("EOF while parsing a string");
            };
            match b {
                b'"' => {
                    self.index += 1;
                    return Ok(());
                }
                b'\\' => {
                    self.index += 1;
                    match self.data.get(self.index) {
                        None => return self.err("EOF while parsing a string"),
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.index += 1;
                        }
                        Some(b'u') => self.hex_escape()?,
                        Some(_) => return self.err("invalid escape"),
                    }
                }
                0..=0x1f => {
                    return self
                        .err("control character (\\u0000-\\u001F) found while parsing a string");
                }
                _ => self.index += 1,
            }
        }
    }

    /// `\uXXXX` (the index is on the `u`); a lone surrogate is an error in jiter.
    fn hex_escape(&mut self) -> Result<(), SyntaxError> {
        let code = self.hex4()?;
        if (0xDC00..0xE000).contains(&code) {
            return self.err("lone leading surrogate in hex escape");
        }
        if (0xD800..0xDC00).contains(&code) {
            match (self.data.get(self.index + 1), self.data.get(self.index + 2)) {
                (Some(b'\\'), Some(b'u')) => {
                    self.index += 2;
                    let low = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&low) {
                        return self.err("lone leading surrogate in hex escape");
                    }
                }
                (None, _) | (_, None) => return self.err("unexpected end of hex escape"),
                _ => return self.err("lone leading surrogate in hex escape"),
            }
        }
        self.index += 1;
        Ok(())
    }

    /// Reads the 4 hex digits after the `u` at `self.index`, leaving the
    /// index on the last digit.
    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let mut code = 0;
        for _ in 0..4 {
            self.index += 1;
            let Some(&b) = self.data.get(self.index) else {
                return self.err("EOF while parsing a string");
            };
            let Some(d) = (b as char).to_digit(16) else {
                return self.err("invalid escape");
            };
            code = code * 16 + d;
        }
        Ok(code)
    }

    fn array(&mut self, depth: usize) -> Result<(), SyntaxError> {
        if depth > RECURSION_LIMIT {
            return self.err("recursion limit exceeded");
        }
        self.index += 1;
        match self.eat_whitespace() {
            None => return self.err("EOF while parsing a list"),
            Some(b']') => {
                self.index += 1;
                return Ok(());
            }
            Some(b) => self.value(b, depth)?,
        }
        loop {
            match self.eat_whitespace() {
                None => return self.err("EOF while parsing a list"),
                Some(b']') => {
                    self.index += 1;
                    return Ok(());
                }
                Some(b',') => {
                    self.index += 1;
                    match self.eat_whitespace() {
                        None => return self.err("EOF while parsing a value"),
                        Some(b']') => return self.err("trailing comma"),
                        Some(b) => self.value(b, depth)?,
                    }
                }
                Some(_) => return self.err("expected `,` or `]`"),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), SyntaxError> {
        if depth > RECURSION_LIMIT {
            return self.err("recursion limit exceeded");
        }
        self.index += 1;
        match self.eat_whitespace() {
            None => return self.err("EOF while parsing an object"),
            Some(b'}') => {
                self.index += 1;
                return Ok(());
            }
            Some(b'"') => self.entry(depth)?,
            Some(_) => return self.err("key must be a string"),
        }
        loop {
            match self.eat_whitespace() {
                None => return self.err("EOF while parsing an object"),
                Some(b'}') => {
                    self.index += 1;
                    return Ok(());
                }
                Some(b',') => {
                    self.index += 1;
                    match self.eat_whitespace() {
                        Some(b'"') => self.entry(depth)?,
                        Some(b'}') => return self.err("trailing comma"),
                        Some(_) => return self.err("key must be a string"),
                        None => return self.err("EOF while parsing a value"),
                    }
                }
                Some(_) => return self.err("expected `,` or `}`"),
            }
        }
    }

    /// A key (the index is on its quote), the colon and the value.
    fn entry(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.string()?;
        match self.eat_whitespace() {
            Some(b':') => self.index += 1,
            Some(_) => return self.err("expected `:`"),
            None => return self.err("EOF while parsing an object"),
        }
        let b = self.peek()?;
        self.value(b, depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(s: &str) -> String {
        match check(s.as_bytes()) {
            Ok(()) => "ok".into(),
            Err(e) => e.description(s.as_bytes()),
        }
    }

    #[test]
    fn jiter_messages_and_positions() {
        assert_eq!(describe(r#"{"score": 0.5, "reason": "x"}"#), "ok");
        assert_eq!(describe(""), "EOF while parsing a value at line 1 column 0");
        assert_eq!(describe("Sure! {}"), "expected value at line 1 column 1");
        assert_eq!(describe("{\"a\": 1,}"), "trailing comma at line 1 column 9");
        assert_eq!(
            describe("{\"a\": 1} x"),
            "trailing characters at line 1 column 10"
        );
        assert_eq!(
            describe("{\"a\": 1"),
            "EOF while parsing an object at line 1 column 7"
        );
        assert_eq!(describe("```json\n{}"), "expected value at line 1 column 1");
        assert_eq!(
            describe("{\"a\": nul}"),
            "expected ident at line 1 column 10"
        );
        assert_eq!(describe("{\"a\": NaN}"), "ok");
    }
}
