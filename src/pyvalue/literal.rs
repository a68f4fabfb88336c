//! Python's `ast.literal_eval` for the literals tool arguments contain.
//!
//! `literal_eval(s)` does what CPython 3.12 does: `s.lstrip(" \t")`, parse
//! the whole string as an expression (any syntax error is a
//! [`LiteralError::Syntax`], even where the expression would also not be a
//! literal), then evaluate the tree allowing only constants, tuples, lists,
//! sets, dicts, `set()`, `+`/`-` on a number constant and `real ± imagj`;
//! anything else is a [`LiteralError::Value`]. Building a dict or set raises
//! [`LiteralError::Type`] for an unhashable key or element, in CPython's
//! evaluation order (`{[1]: 2, 'x': y}` is a `TypeError`, `{[1]: y}` a
//! `ValueError`).
//!
//! Deviations from CPython:
//! - `...` (Ellipsis) is a valid literal in Python but has no [`Value`]: it
//!   is reported as a `Value` error;
//! - `\N{name}` escapes are reported as a `Syntax` error (no Unicode name
//!   database); in an f-string (a `Value` error when well formed) a name of
//!   ASCII letters, digits, spaces and hyphens is taken as valid, so an
//!   unknown one such as `f'\N{x}'` is a `Value` error, not a `Syntax` one;
//! - `\uXXXX`/`\UXXXXXXXX` escapes of surrogates become U+FFFD (so keys
//!   that differ only in their surrogates are one key);
//! - a bad escape in an f-string's format spec is a [`LiteralError::Decode`]
//!   (CPython's `UnicodeDecodeError`) when the text before the f-string
//!   parses, a `Syntax` error otherwise, where CPython's error-recovery pass
//!   sometimes reaches the f-string anyway;
//! - `int ± complex` with an int too large for a float (an `OverflowError`
//!   in Python) is reported as a `Value` error;
//! - expression nesting is capped: brackets at 200 levels exactly like
//!   CPython's tokenizer, operators outside brackets (`- - - … 1`) at 100
//!   levels (a `Syntax` error; CPython 3.12 takes 2,994 before its
//!   `RecursionError`), which bounds the parser's recursion;
//! - f-string replacement fields are tokenized but their expressions are not
//!   checked for syntax errors.
use super::hash::SetBuilder;
use super::pyparse::{AddSub, Node, UnOp, parse_eval};
use super::pytoken::{Tok, Token, TokenizeError, tokenize};
use super::{Dict, Unhashable, Value};

/// Why `ast.literal_eval` failed: the reference catches `SyntaxError` and
/// `ValueError` (args fall back to `{}`) but not `TypeError`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LiteralError {
    #[error("invalid syntax: {0}")]
    Syntax(String),
    #[error("malformed node or string: {0}")]
    Value(String),
    /// CPython's `UnicodeDecodeError` for a bad escape in an f-string's
    /// format spec: a `ValueError` subclass, caught like one.
    #[error("{0}")]
    Decode(String),
    #[error(transparent)]
    Type(#[from] Unhashable),
}

/// Evaluates `s` as `ast.literal_eval(s)` would.
pub fn literal_eval(s: &str) -> Result<Value, LiteralError> {
    let src = s.trim_start_matches([' ', '\t']);
    let toks = match tokenize(src) {
        Ok(toks) => toks,
        Err(TokenizeError::Syntax(m)) => return Err(LiteralError::Syntax(m)),
        Err(TokenizeError::SpecDecode { before, message }) => {
            return Err(spec_decode_or_earlier(before, message));
        }
    };
    let node = parse_eval(toks).map_err(|e| LiteralError::Syntax(e.message))?;
    convert(node)
}

/// CPython raises a format spec's decoding error when its parser reaches
/// the f-string, and a syntax error when the text before it fails to parse
/// first. Its error-recovery pass reaches further in some contexts (after a
/// name and a string, `ub'x', f'{1:\x4}'`, say), where the port says
/// `Syntax`: both are caught by the reference, so the scores agree.
fn spec_decode_or_earlier(mut before: Vec<Token>, message: String) -> LiteralError {
    let at = before.len();
    let line = before.last().map_or(1, |t| t.line);
    before.extend([Tok::FStr, Tok::End].map(|tok| Token { tok, line }));
    match parse_eval(before) {
        Err(e) if e.at < at => LiteralError::Syntax(e.message),
        _ => LiteralError::Decode(message),
    }
}

fn malformed(node: &Node) -> LiteralError {
    let kind = match node {
        Node::Int(_)
        | Node::Float(_)
        | Node::Imag(_)
        | Node::Str(_)
        | Node::Bytes(_)
        | Node::Bool(_)
        | Node::NoneLit
        | Node::Ellipsis => "Constant",
        Node::Tuple(_) => "Tuple",
        Node::List(_) => "List",
        Node::Set(_) => "Set",
        Node::Dict(_) => "Dict",
        Node::SetCall => "Call",
        Node::Unary(..) => "UnaryOp",
        Node::BinOp(..) => "BinOp",
        Node::Name { .. } => "Name",
        Node::Attribute => "Attribute",
        Node::Subscript => "Subscript",
        Node::Starred(_) => "Starred",
        Node::Other(k) => k,
    };
    LiteralError::Value(format!("<ast.{kind} object>"))
}

/// `_convert`.
fn convert(node: Node) -> Result<Value, LiteralError> {
    match node {
        Node::Int(i) => Ok(Value::Int(i)),
        Node::Float(f) => Ok(Value::Float(f)),
        Node::Imag(f) => Ok(Value::Complex(0.0, f)),
        Node::Str(s) => Ok(Value::Str(s)),
        Node::Bytes(b) => Ok(Value::Bytes(b)),
        Node::Bool(b) => Ok(Value::Bool(b)),
        Node::NoneLit => Ok(Value::None),
        Node::Ellipsis => Err(LiteralError::Value("Ellipsis is not supported".to_string())),
        Node::Tuple(items) => Ok(Value::Tuple(convert_all(items)?)),
        Node::List(items) => Ok(Value::List(convert_all(items)?)),
        Node::Set(items) => {
            // `set(map(_convert, elts))`: each element is added as converted.
            let mut set = SetBuilder::new();
            for item in items {
                set.add(convert(item)?)?;
            }
            Ok(Value::Set(set.finish()))
        }
        Node::SetCall => Ok(Value::Set(Vec::new())),
        Node::Dict(items) => {
            // `dict(zip(map(_convert, keys), map(_convert, values)))`: key,
            // value, insert, pair by pair.
            let mut d = Dict::with_capacity(items.len());
            for (k, v) in items {
                let Some(k) = k else {
                    return Err(LiteralError::Value("None".to_string()));
                };
                let k = convert(k)?;
                let v = convert(v)?;
                d.insert(k, v)?;
            }
            Ok(Value::Dict(d))
        }
        Node::BinOp(op, left, right) => {
            let l = convert_signed_num(*left)?;
            let r = convert_num(*right)?;
            let Value::Complex(r_re, r_im) = r else {
                return Err(LiteralError::Value("<ast.BinOp object>".to_string()));
            };
            let l = match l {
                Value::Int(i) => i.to_f64().ok_or_else(|| {
                    LiteralError::Value("int too large to convert to float".to_string())
                })?,
                Value::Float(f) => f,
                _ => return Err(LiteralError::Value("<ast.BinOp object>".to_string())),
            };
            // int/float ± complex: the real operand becomes complex(l, 0.0).
            Ok(match op {
                AddSub::Add => Value::Complex(l + r_re, 0.0 + r_im),
                AddSub::Sub => Value::Complex(l - r_re, 0.0 - r_im),
            })
        }
        other => convert_signed_num(other),
    }
}

fn convert_all(items: Vec<Node>) -> Result<Vec<Value>, LiteralError> {
    items.into_iter().map(convert).collect()
}

/// `_convert_num`: an int, float or complex constant (not a bool).
fn convert_num(node: Node) -> Result<Value, LiteralError> {
    match node {
        Node::Int(i) => Ok(Value::Int(i)),
        Node::Float(f) => Ok(Value::Float(f)),
        Node::Imag(f) => Ok(Value::Complex(0.0, f)),
        other => Err(malformed(&other)),
    }
}

/// `_convert_signed_num`.
fn convert_signed_num(node: Node) -> Result<Value, LiteralError> {
    match node {
        Node::Unary(op, operand) => {
            let v = convert_num(*operand)?;
            Ok(match op {
                UnOp::Plus => v,
                UnOp::Minus => match v {
                    Value::Int(i) => Value::Int(i.neg()),
                    Value::Float(f) => Value::Float(-f),
                    Value::Complex(re, im) => Value::Complex(-re, -im),
                    other => other,
                },
            })
        }
        other => convert_num(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> String {
        match literal_eval(s) {
            Ok(v) => v.repr(),
            Err(e) => panic!("literal_eval({s:?}) failed: {e}"),
        }
    }

    /// "SyntaxError", "ValueError", "UnicodeDecodeError" or "TypeError: <message>".
    fn err(s: &str) -> String {
        match literal_eval(s) {
            Ok(v) => panic!("literal_eval({s:?}) succeeded: {}", v.repr()),
            Err(LiteralError::Syntax(_)) => "SyntaxError".to_string(),
            Err(LiteralError::Value(_)) => "ValueError".to_string(),
            Err(LiteralError::Decode(_)) => "UnicodeDecodeError".to_string(),
            Err(LiteralError::Type(t)) => format!("TypeError: {t}"),
        }
    }

    /// (input, repr(ast.literal_eval(input))) — expected strings from CPython.
    const OK_CASES: &[(&str, &str)] = &[
        (
            "{'x': 1, 'y': True, 'z': None}",
            "{'x': 1, 'y': True, 'z': None}",
        ),
        (
            "{'tags': {1, 2}, 'flag': True}",
            "{'tags': {1, 2}, 'flag': True}",
        ),
        ("{'tags': (1, 'x')}", "{'tags': (1, 'x')}"),
        (" {'a': 1}", "{'a': 1}"),
        ("\t {'a': 1}", "{'a': 1}"),
        ("set()", "set()"),
        ("(set)()", "set()"),
        ("set ( )", "set()"),
        ("(1,)", "(1,)"),
        ("1+2j", "(1+2j)"),
        ("1 +2j", "(1+2j)"),
        ("1-2j", "(1-2j)"),
        ("-1-2j", "(-1-2j)"),
        ("1.5+2j", "(1.5+2j)"),
        ("-0.0-0j", "(-0+0j)"),
        ("-0.0+0j", "0j"),
        ("0.0-0j", "0j"),
        ("-5", "-5"),
        ("+5", "5"),
        ("- 1", "-1"),
        ("-(1)", "-1"),
        ("+(1.5)", "1.5"),
        ("-0", "0"),
        ("-0.0", "-0.0"),
        ("-1j", "(-0-1j)"),
        ("-0j", "(-0-0j)"),
        ("0j", "0j"),
        ("1.5j", "1.5j"),
        ("-1e400j", "(-0-infj)"),
        ("1e400", "inf"),
        ("-1e400", "-inf"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("9223372036854775808", "9223372036854775808"),
        ("-9223372036854775809", "-9223372036854775809"),
        ("b'ab'", "b'ab'"),
        ("'a' 'b'", "'ab'"),
        ("b'a' b'b'", "b'ab'"),
        ("'a' \"b\" '''c'''", "'abc'"),
        ("[1, 2,]", "[1, 2]"),
        ("(1, 2,)", "(1, 2)"),
        ("{1, 2,}", "{1, 2}"),
        ("{'a': 1,}", "{'a': 1}"),
        ("()", "()"),
        ("(1)", "1"),
        ("((1))", "1"),
        ("{}", "{}"),
        ("[]", "[]"),
        ("1,2", "(1, 2)"),
        ("1,", "(1,)"),
        ("{1: 'a', True: 'b'}", "{1: 'b'}"),
        ("{1, True, 1.0}", "{1}"),
        ("{True, 1}", "{True}"),
        ("{'a': 1, 'b': 2, 'a': 3}", "{'a': 3, 'b': 2}"),
        ("{2, 1}", "{1, 2}"),
        ("{10, 3}", "{10, 3}"),
        ("{3, 10}", "{10, 3}"),
        ("{100, 5, 37, 2, 9}", "{2, 100, 37, 5, 9}"),
        ("{(1, 2), (3,), 7}", "{(1, 2), (3,), 7}"),
        ("{0.5, 1, -1}", "{0.5, 1, -1}"),
        ("{(1, [2]) for x in y} if 0 else 1", ""),
        ("((1, [2]),)", "((1, [2]),)"),
        ("[(1, {'a': [2, {3}]})]", "[(1, {'a': [2, {3}]})]"),
        ("00", "0"),
        ("0_0", "0"),
        ("09.5", "9.5"),
        ("09j", "9j"),
        ("0xFF", "255"),
        ("0XfF", "255"),
        ("0o17", "15"),
        ("0b11", "3"),
        ("0x_1f", "31"),
        ("1_000_000", "1000000"),
        ("1_0.5", "10.5"),
        ("1e1_0", "10000000000.0"),
        (".5", "0.5"),
        ("5.", "5.0"),
        ("1.e5", "100000.0"),
        ("1E5", "100000.0"),
        ("1e-5", "1e-05"),
        ("0.1", "0.1"),
        ("12345678901234567890123", "12345678901234567890123"),
        (
            "0x123456789abcdef0123456789",
            "90144042682896311822508713865",
        ),
        (
            "'\\x41\\101\\u00e9\\U0001F527\\n\\t\\r\\a\\b\\f\\v\\0'",
            "'AAé🔧\\n\\t\\r\\x07\\x08\\x0c\\x0b\\x00'",
        ),
        ("'\\d\\w'", "'\\\\d\\\\w'"),
        ("'\\777'", "'ǿ'"),
        ("b'\\777'", "b'\\xff'"),
        ("b'\\u1234'", "b'\\\\u1234'"),
        ("b'\\x41\\n'", "b'A\\n'"),
        ("r'\\n'", "'\\\\n'"),
        ("R'\\n'", "'\\\\n'"),
        ("rb'\\n'", "b'\\\\n'"),
        ("Rb'x'", "b'x'"),
        ("bR'x'", "b'x'"),
        ("BR'x'", "b'x'"),
        ("u'x'", "'x'"),
        ("U'x'", "'x'"),
        ("r'\\''", "\"\\\\'\""),
        ("'\\\nb'", "'b'"),
        ("'''a\nb'''", "'a\\nb'"),
        ("\"\"\"a'b\"\"\"", "\"a'b\""),
        ("'''a''' ''", "'a'"),
        ("'it\\'s'", "\"it's\""),
        ("'検索結果 🔧 é'", "'検索結果 🔧 é'"),
        ("'\\ud800'", "'\u{fffd}'"),
        ("1\n", "1"),
        ("1\n\n  \n#c\n", "1"),
        ("# c\n1", "1"),
        ("1 # c", "1"),
        ("\n1", "1"),
        ("\u{c}1", "1"),
        ("[1,\n 2]", "[1, 2]"),
        ("[1,\n\n   # comment\n 2]", "[1, 2]"),
        ("{'a':\n  1}", "{'a': 1}"),
        ("[1, \\\n 2]", "[1, 2]"),
        ("1\r\n", "1"),
        ("1\n \n", "1"),
        ("1\n  #c", "1"),
        ("1\n\u{c}", "1"),
        ("[1,\n ]", "[1]"),
        ("[1,\r2]", "[1, 2]"),
        ("True", "True"),
        ("None", "None"),
        ("False", "False"),
        ("[True, False, None]", "[True, False, None]"),
        ("'a' if 0 else 'b'", ""),
    ];

    #[test]
    fn accepts() {
        for &(s, expected) in OK_CASES {
            if expected.is_empty() {
                continue;
            }
            assert_eq!(ok(s), expected, "{s:?}");
        }
    }

    /// (input, outcome) — expected outcomes from CPython.
    const ERR_CASES: &[(&str, &str)] = &[
        ("{'a': }", "SyntaxError"),
        ("{[1]: 2}", "TypeError: unhashable type: 'list'"),
        (
            "{'a': 1, {'b': 2}: 3}",
            "TypeError: unhashable type: 'dict'",
        ),
        ("{(1, [2]): 3}", "TypeError: unhashable type: 'list'"),
        ("{[1], x}", "TypeError: unhashable type: 'list'"),
        ("{[1]: 2, 'x': y}", "TypeError: unhashable type: 'list'"),
        ("{{1}: 2}", "TypeError: unhashable type: 'set'"),
        ("{set(): 2}", "TypeError: unhashable type: 'set'"),
        ("[{[]: 1}]", "TypeError: unhashable type: 'list'"),
        ("{[1]: x}", "ValueError"),
        ("{x: [1]}", "ValueError"),
        ("[x, {[1]: 2}]", "ValueError"),
        ("{1: {[1]: 2}, 2: y}", "TypeError: unhashable type: 'list'"),
        ("{[1]: 2, 'x': y(}", "SyntaxError"),
        ("query=paris&limit=3", "SyntaxError"),
        ("{a: 1}", "ValueError"),
        ("paris", "ValueError"),
        ("hello world", "SyntaxError"),
        ("", "SyntaxError"),
        ("   ", "SyntaxError"),
        ("\n", "SyntaxError"),
        ("*a,", "SyntaxError"),
        ("*a, b", "SyntaxError"),
        ("await x", "ValueError"),
        ("f(a=1, a=2)", "ValueError"),
        ("f(x for x in y, )", "SyntaxError"),
        ("f(x for x in y)", "ValueError"),
        ("f(1, x for x in y)", "SyntaxError"),
        ("lambda x, x: 1", "ValueError"),
        ("(yield)", "ValueError"),
        ("(yield 1, *a)", "ValueError"),
        ("(yield from x)", "ValueError"),
        ("yield", "SyntaxError"),
        ("[*a for a in b]", "SyntaxError"),
        ("a[]", "SyntaxError"),
        ("{**a, 'b': 1}", "ValueError"),
        ("{'b': [1], **a}", "ValueError"),
        ("{**a for a in b}", "SyntaxError"),
        ("{x := 1}", "ValueError"),
        ("x := 1", "SyntaxError"),
        ("(x := 1)", "ValueError"),
        ("(a.b := 1)", "SyntaxError"),
        ("1if 1else 2", "ValueError"),
        ("1 if 1", "SyntaxError"),
        ("f(**a, *b)", "SyntaxError"),
        ("f(a=1, b)", "SyntaxError"),
        ("f(**a, b)", "SyntaxError"),
        ("f(*a, **b, c=1)", "ValueError"),
        ("f(**b, c=1)", "ValueError"),
        ("f(c=1, *a)", "ValueError"),
        ("f(a.b=1)", "SyntaxError"),
        ("f(True=1)", "SyntaxError"),
        ("lambda *: 1", "SyntaxError"),
        ("lambda *, **k: 1", "SyntaxError"),
        ("lambda a=1, b: 1", "SyntaxError"),
        ("lambda a, /: 1", "ValueError"),
        ("lambda /: 1", "SyntaxError"),
        ("lambda **k,: 1", "ValueError"),
        ("lambda *a, b, **c: (a, b)", "ValueError"),
        ("lambda: (yield)", "ValueError"),
        ("[1 for True in x]", "SyntaxError"),
        ("[1 for f() in x]", "SyntaxError"),
        ("[1 for a.b, c[0], *d, (e, [f]) in x]", "ValueError"),
        ("[i for i in range(3) if i if i]", "ValueError"),
        ("[x for x in y for z in w]", "ValueError"),
        ("[x async for x in y]", "ValueError"),
        ("{x: y for x, y in z}", "ValueError"),
        ("{x for x in y}", "ValueError"),
        ("(x for x in y)", "ValueError"),
        ("a not b", "SyntaxError"),
        ("a not in b", "ValueError"),
        ("a is not b", "ValueError"),
        ("a < b < c", "ValueError"),
        ("not a == b", "ValueError"),
        ("a == not b", "SyntaxError"),
        ("1.__class__", "SyntaxError"),
        ("1 .real", "ValueError"),
        ("1j.imag", "ValueError"),
        ("0777", "SyntaxError"),
        ("1_", "SyntaxError"),
        ("1__0", "SyntaxError"),
        ("1_.5", "SyntaxError"),
        ("1._5", "SyntaxError"),
        ("0x", "SyntaxError"),
        ("0x_", "SyntaxError"),
        ("0b102", "SyntaxError"),
        ("0o8", "SyntaxError"),
        ("0o", "SyntaxError"),
        ("0b", "SyntaxError"),
        ("1e", "SyntaxError"),
        ("1e+", "SyntaxError"),
        ("1ef", "SyntaxError"),
        ("1abc", "SyntaxError"),
        ("1else", "SyntaxError"),
        ("1 2", "SyntaxError"),
        ("\n  1", "SyntaxError"),
        ("1\n 2", "SyntaxError"),
        ("1\n2", "SyntaxError"),
        ("1\n ", "SyntaxError"),
        ("1\n\t", "SyntaxError"),
        ("{[1]: 2}\n ", "SyntaxError"),
        ("1 \\\n+2", "ValueError"),
        ("1\\", "SyntaxError"),
        ("1 \\\n", "SyntaxError"),
        ("1 \\ 2", "SyntaxError"),
        ("f'{x}'", "ValueError"),
        ("f'{'a'}'", "ValueError"),
        ("f'a' 'b'", "ValueError"),
        ("F'{x!r:>{w}}'", "ValueError"),
        ("f'{}'", "SyntaxError"),
        ("f'}'", "SyntaxError"),
        ("f'{{}}'", "ValueError"),
        // An f-string's literal parts have their escapes checked.
        (r"f'\x4'", "SyntaxError"),
        (r"f'\U00110000'", "SyntaxError"),
        (r"f'{1}\x4{2}'", "SyntaxError"),
        (r"f'\x4{{'", "SyntaxError"),
        ("f'''a\\\n\\u12'''", "SyntaxError"),
        (r"f'a{1}\x41'", "ValueError"),
        (r"f'\{6}'", "ValueError"),
        (r"f'\{{'", "ValueError"),
        (r"f'x\\'", "ValueError"),
        (r"rf'\x4'", "ValueError"),
        (r"f'\N{BULLET}'", "ValueError"),
        (r"f'\N{BULLET}\x4'", "SyntaxError"),
        // An unterminated name ends at the string's end, not at a later `}`.
        (r"f'a\N{b' , '}'", "SyntaxError"),
        (r"f'\N{}'", "SyntaxError"),
        (r"f'\N{é}'", "SyntaxError"),
        (r"f'\N{BULLET }x\N{\x41}'", "SyntaxError"),
        (r"f'\N{latin small letter a}'", "ValueError"),
        // A format spec's bad escape is CPython's UnicodeDecodeError, raised
        // when the parser reaches it: before the f-string's own literal
        // parts, raw or not, and before anything later.
        (r"f'{1:\x4}'", "UnicodeDecodeError"),
        (r"rf'{1:\x4}'", "UnicodeDecodeError"),
        (r"f'\x4{1:\U00110000}'", "UnicodeDecodeError"),
        (r"f'{1:\N{é}}'", "UnicodeDecodeError"),
        (r"fr'{1:\N{BULLET}}'", "UnicodeDecodeError"),
        (r"f'{1:\N{BULLET}}'", "ValueError"),
        (r"f'{1:{2:\x4}}'", "UnicodeDecodeError"),
        (r"f'{1:a\x4' + '\x4'", "UnicodeDecodeError"),
        (r"[f'{1:\x4}',, 1]", "UnicodeDecodeError"),
        (r"1 f'{1:\x4}'", "UnicodeDecodeError"),
        (r"1 1 f'{1:\x4}'", "SyntaxError"),
        (r"[1,, f'{1:\x4}']", "SyntaxError"),
        (r"['\x4', f'{1:\x4}']", "SyntaxError"),
        (r"f'{1:\}'", "ValueError"),
        // Identifiers by CPython 3.12's Unicode 15.0: U+2EBF0 (CJK extension
        // I, Unicode 15.1) is no letter there; U+AE5A (Hangul) is.
        ("\u{2ebf0}\u{ae5a}", "SyntaxError"),
        ("\u{ae5a}", "ValueError"),
        (r"{1: 2 f'{1:\x4}'}", "UnicodeDecodeError"),
        // A `{` inside a name still opens a field.
        (r"f'\N{{1:\x4}'", "UnicodeDecodeError"),
        (r"f'\N{a{{1:\x4}'", "SyntaxError"),
        (r"f'{1:\N{a{2:\x4}}'", "UnicodeDecodeError"),
        // Inside a name or a spec, a backslash escapes a quote or a newline.
        (r"f'\N{a\'b}{1:\x4}'", "UnicodeDecodeError"),
        ("f'{1:\\'\\\n\\x4}'", "UnicodeDecodeError"),
        ("f'\\N{\\\n}'", "SyntaxError"),
        (r"{set(), f'\N{x' ,{}}", "SyntaxError"),
        (r"f'\\N\x4'", "SyntaxError"),
        ("b'a' f'b'", "SyntaxError"),
        ("'a' b'b'", "SyntaxError"),
        ("ub'x'", "SyntaxError"),
        ("b'é'", "SyntaxError"),
        ("'\\x4'", "SyntaxError"),
        ("b'\\x4'", "SyntaxError"),
        ("'\\U00110000'", "SyntaxError"),
        ("'\\N{BULLET}'", "SyntaxError"),
        ("'a\nb'", "SyntaxError"),
        ("r'\\'", "SyntaxError"),
        ("'abc", "SyntaxError"),
        ("'''abc", "SyntaxError"),
        ("(*a)", "SyntaxError"),
        ("(*a,)", "ValueError"),
        ("[*a]", "ValueError"),
        ("{*a, b}", "ValueError"),
        ("(a, *b)", "ValueError"),
        ("a if b else c if d else e", "ValueError"),
        ("not not 1", "ValueError"),
        ("a.b", "ValueError"),
        ("a.True", "SyntaxError"),
        ("[x:=1, 2]", "ValueError"),
        ("{x:=1: 2}", "SyntaxError"),
        ("{'a': *b}", "SyntaxError"),
        ("print(1, end='')", "ValueError"),
        ("1;", "SyntaxError"),
        ("...", "ValueError"),
        ("set(*[])", "ValueError"),
        ("set(1)", "ValueError"),
        ("-True", "ValueError"),
        ("+None", "ValueError"),
        ("-'a'", "ValueError"),
        ("--1", "ValueError"),
        ("-(-1)", "ValueError"),
        ("~1", "ValueError"),
        ("1+-2j", "ValueError"),
        ("(1+2j)+3j", "ValueError"),
        ("1j+1", "ValueError"),
        ("1+2", "ValueError"),
        ("1j+2j", "ValueError"),
        ("True+1j", "ValueError"),
        ("1*2j", "ValueError"),
        ("1 + 2 j", "SyntaxError"),
        ("'a' + 'b'", "ValueError"),
        ("1 < 2", "ValueError"),
        ("a @ b", "ValueError"),
        ("a ** -b", "ValueError"),
        ("2 ** 3", "ValueError"),
        ("not", "SyntaxError"),
        ("$", "SyntaxError"),
        ("a?", "SyntaxError"),
        ("é", "ValueError"),
        ("{é: 1}", "ValueError"),
        ("1\0", "SyntaxError"),
        ("\u{feff}1", "SyntaxError"),
        ("\u{a0}1", "SyntaxError"),
        ("1 → 2", "SyntaxError"),
        ("{,}", "SyntaxError"),
        ("[,]", "SyntaxError"),
        ("(,)", "SyntaxError"),
        ("[1,,2]", "SyntaxError"),
        ("f(1)", "ValueError"),
        ("a[1:2, ::3]", "ValueError"),
        ("a[*b]", "ValueError"),
        ("a[:]", "ValueError"),
        ("a[x:=1:2]", "SyntaxError"),
        ("x.y(1)[2]", "ValueError"),
        ("f(x)(y)", "ValueError"),
        ("[1, 2", "SyntaxError"),
        ("[1, 2)", "SyntaxError"),
        ("(1, 2]", "SyntaxError"),
        ("1)", "SyntaxError"),
        ("{'a': 1}}", "SyntaxError"),
        ("{'a' 1}", "SyntaxError"),
        ("{'a': 1 'b': 2}", "SyntaxError"),
        ("{'a', 'b': 1}", "SyntaxError"),
        ("{'a': 1, 'b'}", "SyntaxError"),
        ("import os", "SyntaxError"),
        ("__import__('os').system('ls')", "ValueError"),
        ("if", "SyntaxError"),
        ("a = 1", "SyntaxError"),
        ("a == 1", "ValueError"),
        ("{'a': 1} {'b': 2}", "SyntaxError"),
        ("{\"a\": true}", "ValueError"),
        ("{\"a\": null}", "ValueError"),
        ("{\"a\": 1, \"b\": [true, false]}", "ValueError"),
        ("[1, 2, 3][0]", "ValueError"),
        ("{'a': lambda: 1}", "ValueError"),
        ("{'a': 1 if x else 2}", "ValueError"),
    ];

    #[test]
    fn rejects() {
        for &(s, expected) in ERR_CASES {
            assert_eq!(err(s), expected, "{s:?}");
        }
    }

    #[test]
    fn nesting() {
        let ok200 = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(literal_eval(&ok200).is_ok());
        let bad201 = format!("{}{}", "[".repeat(201), "]".repeat(201));
        assert_eq!(err(&bad201), "SyntaxError");
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(err(&deep), "SyntaxError");
        let unary = format!("{}1", "-".repeat(100_000));
        assert!(literal_eval(&unary).is_err());
        let nots = format!("{}1", "not ".repeat(100_000));
        assert!(literal_eval(&nots).is_err());
        let pow = format!("2{}", " ** 2".repeat(100_000));
        assert!(literal_eval(&pow).is_err());
        let ternary = "1 if 1 else ".repeat(100_000) + "1";
        assert!(literal_eval(&ternary).is_err());
        let lambdas = "lambda: ".repeat(100_000) + "1";
        assert!(literal_eval(&lambdas).is_err());
        let sum = format!("1{}", " + 1".repeat(100_000));
        assert_eq!(err(&sum), "ValueError");
    }

    #[test]
    fn deep_nesting_fits_a_small_stack() {
        let run = || {
            let mixed = format!("{}{}{}", "[(-{".repeat(50), "1: 2", "})]".repeat(50));
            let _ = literal_eval(&mixed);
            let unary = format!("[{}1]", "- ".repeat(990));
            let _ = literal_eval(&unary);
            let brackets = format!("{}-1{}", "[".repeat(200), "]".repeat(200));
            let _ = literal_eval(&brackets);
        };
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(run)
            .map(|h| h.join().is_ok());
        assert_eq!(handle.ok(), Some(true));
    }

    #[test]
    fn large_input_is_fast() {
        let mut s = String::from("{");
        for i in 0..50_000 {
            s.push_str(&format!("'k{i}': [{i}, 'v', 1.5, None, (1, 2)], "));
        }
        s.push('}');
        let v = literal_eval(&s).map(|v| v.as_dict().map(|d| d.len()));
        assert_eq!(v, Ok(Some(50_000)));
        let set = format!(
            "{{{}}}",
            (0..100_000)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert!(matches!(literal_eval(&set), Ok(Value::Set(v)) if v.len() == 100_000));
    }
}
