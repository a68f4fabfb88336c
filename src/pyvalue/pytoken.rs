//! A tokenizer for Python 3.12 expressions (the part of `Parser/tokenizer.c`
//! that `ast.parse(s, mode='eval')` exercises), decoding literals on the way.
//!
//! Known gaps, all on input that is not a plain literal anyway:
//! - `\N{name}` escapes are rejected in plain strings, and in f-strings any
//!   name of ASCII letters, digits, spaces and `-` is taken as valid (no
//!   Unicode name database);
//! - identifiers are checked against the general categories of Unicode
//!   XID_Start/XID_Continue, without NFKC normalisation;
//! - the expressions inside f-string replacement fields are tokenized but
//!   not parsed.
use num_bigint::BigInt;
use unicode_general_category::GeneralCategory;

use super::Int;
use super::repr::general_category;

/// Deepest bracket nesting (`MAXLEVEL` in the tokenizer: "too many nested
/// parentheses").
pub(crate) const MAX_LEVEL: usize = 200;

/// `sys.get_int_max_str_digits()` default.
const MAX_INT_DIGITS: usize = 4300;

#[derive(Debug, Clone)]
pub(crate) enum Tok {
    Name(String),
    Int(Int),
    Float(f64),
    Imag(f64),
    Str(String),
    Bytes(Vec<u8>),
    /// An f-string (its value is never needed: it is not a literal).
    FStr,
    Op(&'static str),
    Newline,
    End,
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub line: usize,
}

/// Python's hard keywords.
pub(crate) const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

const OPS3: &[&str] = &["**=", "//=", ">>=", "<<=", "..."];
const OPS2: &[&str] = &[
    "!=", "%=", "&=", "**", "*=", "+=", "-=", "->", "//", "/=", ":=", "<<", "<=", "==", ">=", ">>",
    "@=", "^=", "|=",
];
const OPS1: &[&str] = &[
    "!", "%", "&", "(", ")", "*", "+", ",", "-", ".", "/", ":", ";", "<", "=", ">", "@", "[", "]",
    "^", "{", "|", "}", "~",
];

/// Why tokenizing stopped.
#[derive(Debug)]
pub(crate) enum TokenizeError {
    /// A `SyntaxError`.
    Syntax(String),
    /// An f-string format spec with a bad escape. CPython decodes a spec
    /// when its parser reaches it and lets the `UnicodeDecodeError` through
    /// unconverted, ahead of any later error; `before` holds the tokens
    /// before the f-string, so the caller can tell whether the parser would
    /// have failed before reaching it.
    SpecDecode { before: Vec<Token>, message: String },
}

/// Tokenizes `src` (already stripped of leading spaces and tabs).
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, TokenizeError> {
    if src.contains('\0') {
        return Err(TokenizeError::Syntax(
            "source code string cannot contain null bytes".into(),
        ));
    }
    // The tokenizer reads str input with universal newlines.
    let chars: Vec<char> = src
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .collect();
    let mut t = Tokenizer {
        c: chars,
        pos: 0,
        line: 1,
        parens: Vec::new(),
        atbol: true,
        blank: false,
        out: Vec::new(),
        spec_error: None,
    };
    match t.run() {
        Ok(()) => Ok(t.out),
        Err(message) => Err(match t.spec_error.take() {
            Some(message) => TokenizeError::SpecDecode {
                before: t.out,
                message,
            },
            None => TokenizeError::Syntax(message),
        }),
    }
}

struct Tokenizer {
    c: Vec<char>,
    pos: usize,
    line: usize,
    /// Open brackets.
    parens: Vec<char>,
    atbol: bool,
    /// The current line is blank (or comment only) so far.
    blank: bool,
    out: Vec<Token>,
    /// Set when a format spec's escapes fail to decode (see
    /// [`TokenizeError::SpecDecode`]); the error then unwinds the scan.
    spec_error: Option<String>,
}

fn is_id_start(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic() || c == '_';
    }
    matches!(
        general_category(c),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
            | GeneralCategory::LetterNumber
    ) || matches!(
        c,
        '\u{1885}' | '\u{1886}' | '\u{2118}' | '\u{212e}' | '\u{309b}' | '\u{309c}'
    )
}

fn is_id_continue(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    is_id_start(c)
        || matches!(
            general_category(c),
            GeneralCategory::NonspacingMark
                | GeneralCategory::SpacingMark
                | GeneralCategory::DecimalNumber
                | GeneralCategory::ConnectorPunctuation
        )
        || matches!(
            c,
            '\u{b7}' | '\u{387}' | '\u{1369}'..='\u{1371}' | '\u{19da}'
        )
}

/// `is_potential_identifier_char` for ASCII.
fn is_ascii_id_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_digit(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_digit())
}

/// String prefix flags (`saw_b`, `saw_r`, `saw_f`), if `name` is a valid prefix.
fn string_prefix(name: &str) -> Option<(bool, bool, bool)> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "b" => Some((true, false, false)),
        "r" => Some((false, true, false)),
        "u" => Some((false, false, false)),
        "f" => Some((false, false, true)),
        "br" | "rb" => Some((true, true, false)),
        "fr" | "rf" => Some((false, true, true)),
        _ => None,
    }
}

impl Tokenizer {
    fn peek(&self) -> Option<char> {
        self.c.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<char> {
        self.c.get(self.pos + off).copied()
    }

    fn push(&mut self, tok: Tok) {
        self.out.push(Token {
            tok,
            line: self.line,
        });
    }

    fn err<T>(&self, msg: impl Into<String>) -> Result<T, String> {
        Err(format!("{} (line {})", msg.into(), self.line))
    }

    fn run(&mut self) -> Result<(), String> {
        loop {
            let tok = self.next_token()?;
            let end = matches!(tok, Tok::End);
            self.push(tok);
            if end {
                return Ok(());
            }
        }
    }

    /// `tok_get` in normal mode.
    fn next_token(&mut self) -> Result<Tok, String> {
        loop {
            if self.atbol {
                self.atbol = false;
                let mut col = 0usize;
                while let Some(c) = self.peek() {
                    match c {
                        ' ' => col += 1,
                        '\t' => col = (col / 8 + 1) * 8,
                        '\u{c}' => col = 0,
                        _ => break,
                    }
                    self.pos += 1;
                }
                // Whitespace up to the end of input is not a blank line:
                // `1\n ` is an "unexpected indent", as in CPython.
                self.blank = matches!(self.peek(), Some('#' | '\n'));
                if !self.blank && self.parens.is_empty() && col > 0 {
                    return self.err("unexpected indent");
                }
            }
            // Skip spaces.
            while matches!(self.peek(), Some(' ' | '\t' | '\u{c}')) {
                self.pos += 1;
            }
            let Some(c) = self.peek() else {
                if let Some(&open) = self.parens.last() {
                    return self.err(format!("'{open}' was never closed"));
                }
                return Ok(Tok::End);
            };
            match c {
                '#' => {
                    while !matches!(self.peek(), None | Some('\n')) {
                        self.pos += 1;
                    }
                    continue;
                }
                '\n' => {
                    self.pos += 1;
                    self.atbol = true;
                    let emit = !self.blank && self.parens.is_empty();
                    let line = self.line;
                    self.line += 1;
                    if emit {
                        self.out.push(Token {
                            tok: Tok::Newline,
                            line,
                        });
                    }
                    continue;
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {
                            self.pos += 2;
                            self.line += 1;
                            if self.peek().is_none() {
                                return self.err("unexpected EOF while parsing");
                            }
                        }
                        _ => {
                            return self
                                .err("unexpected character after line continuation character");
                        }
                    }
                    continue;
                }
                _ => {}
            }
            self.blank = false;
            if is_id_start(c) {
                return self.name_or_string();
            }
            if c.is_ascii_digit() || (c == '.' && is_digit(self.peek_at(1))) {
                return self.number();
            }
            if c == '"' || c == '\'' {
                return self.string(false, false, false);
            }
            return self.operator();
        }
    }

    fn operator(&mut self) -> Result<Tok, String> {
        let rest = |n: usize| -> String { self.c.iter().skip(self.pos).take(n).collect() };
        let three = rest(3);
        let two = rest(2);
        let one = rest(1);
        let op = OPS3
            .iter()
            .find(|o| **o == three)
            .or_else(|| OPS2.iter().find(|o| **o == two))
            .or_else(|| OPS1.iter().find(|o| **o == one))
            .copied();
        let Some(op) = op else {
            let c = self.peek().unwrap_or(' ');
            if c.is_ascii() && !c.is_ascii_control() {
                return self.err("invalid syntax");
            }
            if c.is_ascii_control() || !super::repr::is_printable(c) {
                return self.err(format!(
                    "invalid non-printable character U+{:04X}",
                    u32::from(c)
                ));
            }
            return self.err(format!("invalid character '{c}' (U+{:04X})", u32::from(c)));
        };
        self.pos += op.chars().count();
        match op {
            "(" | "[" | "{" => {
                if self.parens.len() >= MAX_LEVEL {
                    return self.err("too many nested parentheses");
                }
                self.parens.push(op.chars().next().unwrap_or('('));
            }
            ")" | "]" | "}" => {
                let close = op.chars().next().unwrap_or(')');
                let Some(open) = self.parens.pop() else {
                    return self.err(format!("unmatched '{close}'"));
                };
                let expected = match open {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                if close != expected {
                    return self.err(format!(
                        "closing parenthesis '{close}' does not match opening parenthesis '{open}'"
                    ));
                }
            }
            _ => {}
        }
        Ok(Tok::Op(op))
    }

    fn name_or_string(&mut self) -> Result<Tok, String> {
        let start = self.pos;
        while self.peek().is_some_and(is_id_continue) {
            self.pos += 1;
        }
        let name: String = self.c[start..self.pos].iter().collect();
        if matches!(self.peek(), Some('\'' | '"'))
            && let Some((b, r, f)) = string_prefix(&name)
        {
            return self.string(b, r, f);
        }
        if let Some(bad) = self.peek().filter(|c| !c.is_ascii() && !is_id_continue(*c)) {
            if !super::repr::is_printable(bad) {
                return self.err(format!(
                    "invalid non-printable character U+{:04X}",
                    u32::from(bad)
                ));
            }
            return self.err(format!(
                "invalid character '{bad}' (U+{:04X})",
                u32::from(bad)
            ));
        }
        Ok(Tok::Name(name))
    }

    // ----- numbers -----

    /// `tok_decimal_tail`: digits with single underscores between them; the
    /// first digit is at `pos`.
    fn decimal_tail(&mut self) -> Result<(), String> {
        loop {
            while is_digit(self.peek()) {
                self.pos += 1;
            }
            if self.peek() != Some('_') {
                return Ok(());
            }
            self.pos += 1;
            if !is_digit(self.peek()) {
                return self.err("invalid decimal literal");
            }
        }
    }

    /// `verify_end_of_number`: a number glued to a name is an error, except
    /// for the keywords that may follow a number (`1if x else 2`).
    fn verify_end(&self, kind: &str) -> Result<(), String> {
        let c = self.peek();
        let rest = |s: &str| {
            s.chars()
                .enumerate()
                .all(|(i, ch)| self.peek_at(1 + i) == Some(ch))
        };
        let keyword_follows = match c {
            Some('a') => rest("nd"),
            Some('e') => rest("lse"),
            Some('f') => rest("or"),
            Some('i') => matches!(self.peek_at(1), Some('f' | 'n' | 's')),
            Some('o') => rest("r"),
            Some('n') => rest("ot"),
            _ => false,
        };
        if !keyword_follows && is_ascii_id_char(c) {
            return self.err(format!("invalid {kind} literal"));
        }
        Ok(())
    }

    fn number(&mut self) -> Result<Tok, String> {
        let start = self.pos;
        let first = self.peek();
        if first == Some('0') {
            match self.peek_at(1) {
                Some('x' | 'X') => return self.radix_int(16, "hexadecimal"),
                Some('o' | 'O') => return self.radix_int(8, "octal"),
                Some('b' | 'B') => return self.radix_int(2, "binary"),
                _ => {}
            }
            // Zeros, maybe an old-style octal (an error unless a float follows).
            self.pos += 1;
            loop {
                if self.peek() == Some('_') {
                    self.pos += 1;
                    if !is_digit(self.peek()) {
                        return self.err("invalid decimal literal");
                    }
                }
                if self.peek() != Some('0') {
                    break;
                }
                self.pos += 1;
            }
            let mut nonzero = false;
            if is_digit(self.peek()) {
                nonzero = true;
                self.decimal_tail()?;
            }
            match self.peek() {
                Some('.') => {
                    self.pos += 1;
                    return self.fraction(start);
                }
                Some('e' | 'E') => return self.exponent(start),
                Some('j' | 'J') => return self.imaginary(start),
                _ => {}
            }
            if nonzero {
                return self.err(
                    "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
                );
            }
            self.verify_end("decimal")?;
            return self.finish_int(start);
        }
        if first == Some('.') {
            self.pos += 1;
            return self.fraction(start);
        }
        self.decimal_tail()?;
        match self.peek() {
            Some('.') => {
                self.pos += 1;
                self.fraction(start)
            }
            Some('e' | 'E') => self.exponent(start),
            Some('j' | 'J') => self.imaginary(start),
            _ => {
                self.verify_end("decimal")?;
                self.finish_int(start)
            }
        }
    }

    /// After the `.` of a float.
    fn fraction(&mut self, start: usize) -> Result<Tok, String> {
        if is_digit(self.peek()) {
            self.decimal_tail()?;
        }
        match self.peek() {
            Some('e' | 'E') => self.exponent(start),
            Some('j' | 'J') => self.imaginary(start),
            _ => {
                self.verify_end("decimal")?;
                self.finish_float(start, false)
            }
        }
    }

    /// At the `e` of a float.
    fn exponent(&mut self, start: usize) -> Result<Tok, String> {
        let e_pos = self.pos;
        self.pos += 1;
        match self.peek() {
            Some('+' | '-') => {
                self.pos += 1;
                if !is_digit(self.peek()) {
                    return self.err("invalid decimal literal");
                }
            }
            c if !is_digit(c) => {
                // Not an exponent: the number ends before the `e`.
                self.pos = e_pos;
                self.verify_end("decimal")?;
                return self.finish_number_before_e(start);
            }
            _ => {}
        }
        self.decimal_tail()?;
        if matches!(self.peek(), Some('j' | 'J')) {
            return self.imaginary(start);
        }
        self.verify_end("decimal")?;
        self.finish_float(start, false)
    }

    /// The number `start..pos` ended just before an `e` that starts a
    /// keyword (`1else`): an int or a float depending on its text.
    fn finish_number_before_e(&mut self, start: usize) -> Result<Tok, String> {
        if self.c[start..self.pos].contains(&'.') {
            self.finish_float(start, false)
        } else {
            self.finish_int(start)
        }
    }

    /// At the `j` of an imaginary literal.
    fn imaginary(&mut self, start: usize) -> Result<Tok, String> {
        self.pos += 1;
        self.verify_end("imaginary")?;
        self.finish_float(start, true)
    }

    fn clean_text(&self, start: usize, end: usize) -> String {
        self.c[start..end].iter().filter(|&&c| c != '_').collect()
    }

    fn finish_float(&mut self, start: usize, imag: bool) -> Result<Tok, String> {
        let end = if imag { self.pos - 1 } else { self.pos };
        let text = self.clean_text(start, end).to_ascii_lowercase();
        let (mant, exp) = match text.split_once('e') {
            Some((m, e)) => (m.to_string(), Some(e.to_string())),
            None => (text.clone(), None),
        };
        let mut norm = String::new();
        if mant.starts_with('.') {
            norm.push('0');
        }
        norm.push_str(&mant);
        if mant.ends_with('.') {
            norm.push('0');
        }
        if let Some(e) = exp {
            norm.push('e');
            norm.push_str(&e);
        }
        let Ok(f) = norm.parse::<f64>() else {
            return self.err("invalid decimal literal");
        };
        Ok(if imag { Tok::Imag(f) } else { Tok::Float(f) })
    }

    fn finish_int(&mut self, start: usize) -> Result<Tok, String> {
        let text = self.clean_text(start, self.pos);
        if text.len() <= 18
            && let Ok(i) = text.parse::<i64>()
        {
            return Ok(Tok::Int(Int::Small(i)));
        }
        if text.len() > MAX_INT_DIGITS {
            return self.err(format!(
                "Exceeds the limit ({MAX_INT_DIGITS} digits) for integer string conversion: value has {} digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal for huge integer literals to avoid decimal conversion limits.",
                text.len()
            ));
        }
        match text.parse::<BigInt>() {
            Ok(b) => Ok(Tok::Int(Int::from_bigint(b))),
            Err(_) => self.err("invalid decimal literal"),
        }
    }

    /// `0x…`, `0o…`, `0b…`.
    fn radix_int(&mut self, radix: u32, kind: &str) -> Result<Tok, String> {
        self.pos += 2;
        let digits_start = self.pos;
        loop {
            if self.peek() == Some('_') {
                self.pos += 1;
            }
            let c = self.peek();
            if !c.is_some_and(|c| c.is_digit(radix)) {
                if radix != 16 && is_digit(c) {
                    let d = c.unwrap_or('0');
                    return self.err(format!("invalid digit '{d}' in {kind} literal"));
                }
                return self.err(format!("invalid {kind} literal"));
            }
            while self.peek().is_some_and(|c| c.is_digit(radix)) {
                self.pos += 1;
            }
            if self.peek() != Some('_') {
                break;
            }
        }
        if radix != 16 && is_digit(self.peek()) {
            let d = self.peek().unwrap_or('0');
            return self.err(format!("invalid digit '{d}' in {kind} literal"));
        }
        self.verify_end(kind)?;
        let digits = self.clean_text(digits_start, self.pos);
        match BigInt::parse_bytes(digits.as_bytes(), radix) {
            Some(b) => Ok(Tok::Int(Int::from_bigint(b))),
            None => self.err(format!("invalid {kind} literal")),
        }
    }

    // ----- strings -----

    /// A string literal whose opening quote is at `pos`.
    fn string(&mut self, bytes: bool, raw: bool, fstr: bool) -> Result<Tok, String> {
        let quote = self.peek().unwrap_or('\'');
        let start_line = self.line;
        self.pos += 1;
        let triple = self.peek() == Some(quote) && self.peek_at(1) == Some(quote);
        if triple {
            self.pos += 2;
        } else if self.peek() == Some(quote) {
            self.pos += 1;
            return Ok(if fstr {
                Tok::FStr
            } else if bytes {
                Tok::Bytes(Vec::new())
            } else {
                Tok::Str(String::new())
            });
        }
        if fstr {
            self.fstring_body(quote, triple, raw, start_line)?;
            return Ok(Tok::FStr);
        }
        let body_start = self.pos;
        let body_end = self.string_body(quote, triple, start_line)?;
        let body = &self.c[body_start..body_end];
        if bytes {
            decode_bytes(body, raw)
                .map(Tok::Bytes)
                .map_err(|m| format!("{m} (line {start_line})"))
        } else {
            decode_str(body, raw)
                .map(Tok::Str)
                .map_err(|m| format!("{m} (line {start_line})"))
        }
    }

    fn unterminated<T>(&self, triple: bool, start_line: usize) -> Result<T, String> {
        if triple {
            Err(format!(
                "unterminated triple-quoted string literal (detected at line {}) (line {start_line})",
                self.line
            ))
        } else {
            Err(format!(
                "unterminated string literal (detected at line {}) (line {start_line})",
                self.line
            ))
        }
    }

    fn at_close(&self, quote: char, triple: bool) -> bool {
        self.peek() == Some(quote)
            && (!triple || (self.peek_at(1) == Some(quote) && self.peek_at(2) == Some(quote)))
    }

    /// Scans to the closing quote; returns the end of the body and leaves
    /// `pos` after the closing quote(s).
    fn string_body(
        &mut self,
        quote: char,
        triple: bool,
        start_line: usize,
    ) -> Result<usize, String> {
        loop {
            let Some(c) = self.peek() else {
                return self.unterminated(triple, start_line);
            };
            if self.at_close(quote, triple) {
                let end = self.pos;
                self.pos += if triple { 3 } else { 1 };
                return Ok(end);
            }
            match c {
                '\n' if !triple => return self.unterminated(triple, start_line),
                '\n' => self.line += 1,
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        None => return self.unterminated(triple, start_line),
                        Some('\n') => self.line += 1,
                        _ => {}
                    }
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Scans an f-string body (3.12 rules: replacement fields are tokenized,
    /// so they may contain strings with the same quotes).
    fn fstring_body(
        &mut self,
        quote: char,
        triple: bool,
        raw: bool,
        start_line: usize,
    ) -> Result<(), String> {
        let mut literal_start = self.pos;
        // CPython decodes the literal parts when the whole f-string has been
        // parsed, after its format specs: the first bad escape waits.
        let mut literal_error = None;
        let mut in_name = false;
        loop {
            let Some(c) = self.peek() else {
                return self.unterminated(triple, start_line);
            };
            if self.at_close(quote, triple) {
                self.fstring_literal(literal_start, raw, start_line, &mut literal_error);
                self.pos += if triple { 3 } else { 1 };
                return literal_error.map_or(Ok(()), Err);
            }
            match c {
                '\n' if !triple => return self.unterminated(triple, start_line),
                '\n' => self.line += 1,
                '\\' => in_name |= self.escape(raw),
                '}' if in_name => in_name = false,
                '{' | '}' if self.peek_at(1) == Some(c) => {
                    in_name = false;
                    self.fstring_literal(literal_start, raw, start_line, &mut literal_error);
                    self.pos += 1;
                    literal_start = self.pos + 1;
                }
                '{' => {
                    in_name = false;
                    self.fstring_literal(literal_start, raw, start_line, &mut literal_error);
                    self.pos += 1;
                    self.replacement_field(quote, triple, raw, start_line)?;
                    literal_start = self.pos;
                    continue;
                }
                '}' => return self.err("f-string: single '}' is not allowed"),
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// Checks the escapes of an f-string's literal part (from `from` to
    /// `pos`), keeping the first error in `first`: CPython decodes them as a
    /// plain string's, so a bad one is a syntax error.
    fn fstring_literal(
        &self,
        from: usize,
        raw: bool,
        start_line: usize,
        first: &mut Option<String>,
    ) {
        if raw || first.is_some() {
            return;
        }
        let part = self.c.get(from..self.pos).unwrap_or_default();
        if let Err(m) = check_escapes(part) {
            *first = Some(format!("(unicode error) {m} (line {start_line})"));
        }
    }

    /// After the `{` of a replacement field; leaves `pos` after its `}`.
    fn replacement_field(
        &mut self,
        quote: char,
        triple: bool,
        raw: bool,
        start_line: usize,
    ) -> Result<(), String> {
        let saved_parens = std::mem::take(&mut self.parens);
        // Treat the field like a bracket so newlines are not NEWLINE tokens.
        self.parens.push('{');
        let r = self.replacement_field_inner(quote, triple, raw, start_line);
        self.parens = saved_parens;
        r
    }

    fn replacement_field_inner(
        &mut self,
        quote: char,
        triple: bool,
        raw: bool,
        start_line: usize,
    ) -> Result<(), String> {
        let mut depth = 0usize;
        let mut n_tokens = 0usize;
        loop {
            let tok = self.next_token()?;
            match tok {
                Tok::End => return self.unterminated(triple, start_line),
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]") => depth = depth.saturating_sub(1),
                Tok::Op("}") if depth > 0 => depth -= 1,
                Tok::Op("}") => {
                    if n_tokens == 0 {
                        return self.err("f-string: valid expression required before '}'");
                    }
                    return Ok(());
                }
                Tok::Op("!" | ":") if depth == 0 => {
                    if n_tokens == 0 {
                        return self.err("f-string: valid expression required before '!'");
                    }
                    let is_conv = matches!(tok, Tok::Op("!"));
                    if is_conv {
                        match self.next_token()? {
                            Tok::Name(n) if matches!(n.as_str(), "r" | "s" | "a") => {}
                            _ => return self.err("f-string: invalid conversion character"),
                        }
                        match self.next_token()? {
                            Tok::Op("}") => return Ok(()),
                            Tok::Op(":") => {}
                            _ => return self.err("f-string: expecting '}'"),
                        }
                    }
                    return self.format_spec(quote, triple, raw, start_line);
                }
                _ => {}
            }
            n_tokens += 1;
        }
    }

    /// After the `:` of a replacement field: text with nested fields up to
    /// the closing `}`. Each run of text is decoded with escapes (even in a
    /// raw f-string, as CPython 3.12 does) when it ends.
    fn format_spec(
        &mut self,
        quote: char,
        triple: bool,
        raw: bool,
        start_line: usize,
    ) -> Result<(), String> {
        let mut text_start = self.pos;
        let mut in_name = false;
        loop {
            let Some(c) = self.peek() else {
                return self.unterminated(triple, start_line);
            };
            if self.at_close(quote, triple) {
                self.spec_text(text_start)?;
                return self.err("f-string: expecting '}'");
            }
            match c {
                '\\' => in_name |= self.escape(raw),
                '}' if in_name => in_name = false,
                '}' => {
                    self.spec_text(text_start)?;
                    self.pos += 1;
                    return Ok(());
                }
                '{' => {
                    in_name = false;
                    self.spec_text(text_start)?;
                    self.pos += 1;
                    self.replacement_field(quote, triple, raw, start_line)?;
                    text_start = self.pos;
                    continue;
                }
                '\n' if !triple => return self.unterminated(triple, start_line),
                '\n' => self.line += 1,
                _ => {}
            }
            self.pos += 1;
        }
    }

    /// At a backslash in an f-string's text (`pos` stays on it): steps over
    /// the escaped character, except a brace, which keeps its meaning (a
    /// field or `{{`), as CPython's tokenizer does. Returns whether a
    /// `\N{name}` escape began: its `}` then ends the name, not a field,
    /// while a `{` still opens a field.
    fn escape(&mut self, raw: bool) -> bool {
        match self.peek_at(1) {
            Some('N') if !raw && self.peek_at(2) == Some('{') => {
                self.pos += 2;
                true
            }
            Some('{' | '}') | None => false,
            Some(next) => {
                if next == '\n' {
                    self.line += 1;
                }
                self.pos += 1;
                false
            }
        }
    }

    /// Decodes a format spec's text from `from` to `pos`; a bad escape stops
    /// the scan as a [`TokenizeError::SpecDecode`].
    fn spec_text(&mut self, from: usize) -> Result<(), String> {
        let part = self.c.get(from..self.pos).unwrap_or_default();
        check_escapes(part).inspect_err(|m| self.spec_error = Some(m.clone()))
    }
}

/// Decodes the escapes of an f-string's text as CPython's `unicodeescape`
/// codec would, for errors only. A `\N{name}` is refused when the name is
/// missing, empty or has a character no Unicode name or alias has (names
/// are ASCII letters, digits, space and `-`; CPython matches them ignoring
/// case); any other name is taken as valid, as there is no name database
/// here (a documented deviation). A backslash that ends the text (before a
/// brace) is kept by CPython as an invalid escape.
fn check_escapes(part: &[char]) -> Result<(), String> {
    const MALFORMED: &str =
        "'unicodeescape' codec can't decode bytes: malformed \\N character escape";
    let mut kept = Vec::with_capacity(part.len());
    let mut i = 0;
    while let Some(&c) = part.get(i) {
        match (c, part.get(i + 1)) {
            ('\\', Some('N')) => {
                let name_at = i + 3;
                if part.get(i + 2) != Some(&'{') {
                    return Err(MALFORMED.into());
                }
                let Some(end) = part[name_at..].iter().position(|&c| c == '}') else {
                    return Err(MALFORMED.into());
                };
                let name = &part[name_at..name_at + end];
                if name.is_empty() {
                    return Err(MALFORMED.into());
                }
                if !name
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-'))
                {
                    return Err(
                        "'unicodeescape' codec can't decode bytes: unknown Unicode character name"
                            .into(),
                    );
                }
                i = name_at + end + 1;
            }
            ('\\', Some(&e)) => {
                kept.extend([c, e]);
                i += 2;
            }
            ('\\', None) => i += 1,
            _ => {
                kept.push(c);
                i += 1;
            }
        }
    }
    decode_str(&kept, false)
        .map(drop)
        .map_err(|m| m.trim_start_matches("(unicode error) ").to_owned())
}

fn hex_value(digits: &[char]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0u32, |acc, d| Some((acc << 4) | d.to_digit(16)?))
}

/// Decodes the body of a `str` literal.
fn decode_str(body: &[char], raw: bool) -> Result<String, String> {
    if raw {
        return Ok(body.iter().collect());
    }
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = body.get(i) else {
            return Err(
                "(unicode error) 'unicodeescape' codec can't decode bytes: \\ at end of string"
                    .into(),
            );
        };
        i += 1;
        match e {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(e),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match body.get(i).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'x' | 'u' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let digits = body.get(i..i + n);
                let Some(v) = digits.and_then(hex_value) else {
                    return Err(format!(
                        "(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\{}{} escape",
                        e,
                        "X".repeat(n)
                    ));
                };
                i += n;
                if v > 0x10ffff {
                    return Err("(unicode error) 'unicodeescape' codec can't decode bytes: illegal Unicode character".into());
                }
                // A lone surrogate cannot live in a Rust string: U+FFFD instead.
                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
            }
            'N' => {
                return Err("(unicode error) \\N{...} escapes are not supported".into());
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// Decodes the body of a `bytes` literal.
fn decode_bytes(body: &[char], raw: bool) -> Result<Vec<u8>, String> {
    if body.iter().any(|c| !c.is_ascii()) {
        return Err("bytes can only contain ASCII literal characters".into());
    }
    // All ASCII from here on, so `as u8` is lossless.
    if raw {
        return Ok(body.iter().map(|&c| c as u8).collect());
    }
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != '\\' {
            out.push(c as u8);
            continue;
        }
        let Some(&e) = body.get(i) else {
            return Err("(value error) Trailing \\ in string".into());
        };
        i += 1;
        match e {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(e as u8),
            'a' => out.push(7),
            'b' => out.push(8),
            'f' => out.push(12),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(11),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match body.get(i).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                // CPython stores the value in a char: truncated to 8 bits.
                out.push((v & 0xff) as u8);
            }
            'x' => {
                let Some(v) = body.get(i..i + 2).and_then(hex_value) else {
                    return Err(format!(
                        "(value error) invalid \\x escape at position {}",
                        i - 2
                    ));
                };
                i += 2;
                out.push(v as u8);
            }
            other => {
                out.push(b'\\');
                out.push(other as u8);
            }
        }
    }
    Ok(out)
}
