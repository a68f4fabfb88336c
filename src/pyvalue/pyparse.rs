//! A parser for Python 3.12's expression grammar (`ast.parse(s, mode='eval')`).
//!
//! It accepts exactly what the PEG grammar accepts for expressions (so that
//! a syntax error and a non-literal expression are told apart the way
//! `ast.literal_eval` tells them apart) but only builds the nodes
//! `literal_eval` can evaluate; every other node is an opaque
//! [`Node::Other`] (or one of the few kinds needed to check assignment
//! targets).
use std::cell::Cell;

use super::Int;
use super::pytoken::{KEYWORDS, Tok, Token};

/// How deeply operators may nest outside of brackets (`- - - 1`,
/// `not not x`, `a ** b ** c`, chained `if`/`else`, `lambda: lambda: …`).
/// Brackets are limited separately, to 200 levels by the tokenizer exactly
/// as in CPython; together the two bound the parser's recursion.
const MAX_OPERATOR_NESTING: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnOp {
    Plus,
    Minus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AddSub {
    Add,
    Sub,
}

/// An expression node, as `ast.literal_eval` sees it.
#[derive(Debug)]
pub(crate) enum Node {
    Int(Int),
    Float(f64),
    Imag(f64),
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
    NoneLit,
    Ellipsis,
    Tuple(Vec<Node>),
    List(Vec<Node>),
    Set(Vec<Node>),
    /// Key `None` for a `**mapping` entry.
    Dict(Vec<(Option<Node>, Node)>),
    /// `set()`.
    SetCall,
    Unary(UnOp, Box<Node>),
    BinOp(AddSub, Box<Node>, Box<Node>),
    Name {
        is_set: bool,
    },
    Attribute,
    Subscript,
    Starred(Box<Node>),
    /// Any other expression (`ast` class name).
    Other(&'static str),
}

/// Operator precedences for the Pratt loop.
const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_NOT: u8 = 3;
const PREC_CMP: u8 = 4;
const PREC_BITOR: u8 = 5;
const PREC_UNARY: u8 = 11;
const PREC_POW: u8 = 12;

pub(crate) fn parse_eval(toks: Vec<Token>) -> Result<Node, ParseError> {
    let mut p = Parser {
        toks,
        i: 0,
        depth: 0,
        error_at: Cell::new(0),
    };
    let parsed = p.expressions().and_then(|node| {
        while matches!(p.peek(), Tok::Newline) {
            p.i += 1;
        }
        if !matches!(p.peek(), Tok::End) {
            return p.err("invalid syntax");
        }
        Ok(node)
    });
    parsed.map_err(|message| ParseError {
        message,
        at: p.error_at.get(),
    })
}

/// A syntax error and the index of the token the parser was at.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub message: String,
    pub at: usize,
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    depth: usize,
    /// Where the last error was raised (see [`ParseError`]).
    error_at: Cell<usize>,
}

const END: Tok = Tok::End;

fn is_keyword(n: &str) -> bool {
    KEYWORDS.contains(&n)
}

fn is_target(n: &Node) -> bool {
    match n {
        Node::Name { .. } | Node::Attribute | Node::Subscript => true,
        Node::Starred(inner) => !matches!(**inner, Node::Starred(_)) && is_target(inner),
        Node::Tuple(items) | Node::List(items) => items.iter().all(is_target),
        _ => false,
    }
}

fn target_kind(n: &Node) -> &'static str {
    match n {
        Node::Bool(true) => "True",
        Node::Bool(false) => "False",
        Node::NoneLit => "None",
        Node::Int(_)
        | Node::Float(_)
        | Node::Imag(_)
        | Node::Str(_)
        | Node::Bytes(_)
        | Node::Ellipsis => "literal",
        Node::Dict(_) => "dict literal",
        Node::Set(_) => "set display",
        Node::SetCall => "function call",
        Node::Unary(..) | Node::BinOp(..) => "expression",
        Node::Other(kind) => kind,
        _ => "expression",
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.i).map_or(&END, |t| &t.tok)
    }

    fn peek_at(&self, n: usize) -> &Tok {
        self.toks.get(self.i + n).map_or(&END, |t| &t.tok)
    }

    fn advance(&mut self) -> Tok {
        let t = self.peek().clone();
        self.i += 1;
        t
    }

    fn err<T>(&self, msg: &str) -> Result<T, String> {
        self.error_at.set(self.i);
        let line = self
            .toks
            .get(self.i)
            .or_else(|| self.toks.last())
            .map_or(1, |t| t.line);
        Err(format!("{msg} (line {line})"))
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> Result<(), String> {
        if self.eat_op(op) {
            Ok(())
        } else {
            self.err("invalid syntax")
        }
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// A NAME token that is not a keyword.
    fn is_plain_name(&self) -> bool {
        matches!(self.peek(), Tok::Name(n) if !is_keyword(n))
    }

    fn starts_expr(&self) -> bool {
        match self.peek() {
            Tok::Name(n) => {
                !is_keyword(n)
                    || matches!(
                        n.as_str(),
                        "True" | "False" | "None" | "lambda" | "not" | "await"
                    )
            }
            Tok::Int(_)
            | Tok::Float(_)
            | Tok::Imag(_)
            | Tok::Str(_)
            | Tok::Bytes(_)
            | Tok::FStr => true,
            Tok::Op(o) => matches!(*o, "(" | "[" | "{" | "-" | "+" | "~" | "..."),
            Tok::Newline | Tok::End => false,
        }
    }

    /// Enters one level of operator nesting (see [`MAX_OPERATOR_NESTING`]);
    /// the caller must call [`Parser::leave`] after the nested parse.
    fn enter(&mut self) -> Result<(), String> {
        if self.depth >= MAX_OPERATOR_NESTING {
            return self.err("too many nested operators");
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// `expression()` one operator level deeper.
    fn nested_expression(&mut self) -> Result<Node, String> {
        self.enter()?;
        let r = self.expression();
        self.leave();
        r
    }

    /// `pratt(min)` one operator level deeper.
    fn nested_pratt(&mut self, min: u8) -> Result<Node, String> {
        self.enter()?;
        let r = self.pratt(min);
        self.leave();
        r
    }

    /// `expressions: expression (',' expression)* [',']`.
    fn expressions(&mut self) -> Result<Node, String> {
        let first = self.expression()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if !self.starts_expr() {
                break;
            }
            items.push(self.expression()?);
        }
        Ok(Node::Tuple(items))
    }

    /// `expression: disjunction ['if' disjunction 'else' expression] | lambdef`.
    fn expression(&mut self) -> Result<Node, String> {
        if self.is_kw("lambda") {
            self.enter()?;
            let r = self.lambdef();
            self.leave();
            return r;
        }
        let body = self.pratt(PREC_OR)?;
        if self.eat_kw("if") {
            self.pratt(PREC_OR)?;
            if !self.eat_kw("else") {
                return self.err("expected 'else' after 'if' expression");
            }
            self.nested_expression()?;
            return Ok(Node::Other("IfExp"));
        }
        Ok(body)
    }

    /// `named_expression`; also says whether it was an assignment expression.
    fn named_expression(&mut self) -> Result<(Node, bool), String> {
        if self.is_plain_name() && matches!(self.peek_at(1), Tok::Op(":=")) {
            self.i += 2;
            self.expression()?;
            return Ok((Node::Other("NamedExpr"), true));
        }
        let e = self.expression()?;
        if self.is_op(":=") {
            return self.err(&format!(
                "cannot use assignment expressions with {}",
                target_kind(&e)
            ));
        }
        Ok((e, false))
    }

    /// `star_named_expression: '*' bitwise_or | named_expression`.
    fn star_named_expression(&mut self) -> Result<Node, String> {
        if self.eat_op("*") {
            return Ok(Node::Starred(Box::new(self.pratt(PREC_BITOR)?)));
        }
        Ok(self.named_expression()?.0)
    }

    /// Infix operator at the current token: (precedence, token count, node kind).
    fn infix(&self) -> Option<(u8, usize, &'static str)> {
        let r = match self.peek() {
            Tok::Name(n) => match n.as_str() {
                "or" => (PREC_OR, 1, "BoolOp"),
                "and" => (PREC_AND, 1, "BoolOp"),
                "in" => (PREC_CMP, 1, "Compare"),
                "is" if matches!(self.peek_at(1), Tok::Name(m) if m == "not") => {
                    (PREC_CMP, 2, "Compare")
                }
                "is" => (PREC_CMP, 1, "Compare"),
                "not" if matches!(self.peek_at(1), Tok::Name(m) if m == "in") => {
                    (PREC_CMP, 2, "Compare")
                }
                _ => return None,
            },
            Tok::Op(o) => match *o {
                "==" | "!=" | "<" | "<=" | ">" | ">=" => (PREC_CMP, 1, "Compare"),
                "|" => (PREC_BITOR, 1, "BinOp"),
                "^" => (6, 1, "BinOp"),
                "&" => (7, 1, "BinOp"),
                "<<" | ">>" => (8, 1, "BinOp"),
                "+" => (9, 1, "+"),
                "-" => (9, 1, "-"),
                "*" | "/" | "//" | "%" | "@" => (10, 1, "BinOp"),
                "**" => (PREC_POW, 1, "BinOp"),
                _ => return None,
            },
            _ => return None,
        };
        Some(r)
    }

    fn pratt(&mut self, min: u8) -> Result<Node, String> {
        let mut lhs = if min <= PREC_NOT && self.is_kw("not") {
            self.i += 1;
            self.nested_pratt(PREC_NOT)?;
            Node::Other("UnaryOp")
        } else if self.is_op("-") || self.is_op("+") || self.is_op("~") {
            let op = self.advance();
            let operand = self.nested_pratt(PREC_UNARY)?;
            match op {
                Tok::Op("-") => Node::Unary(UnOp::Minus, Box::new(operand)),
                Tok::Op("+") => Node::Unary(UnOp::Plus, Box::new(operand)),
                _ => Node::Other("UnaryOp"),
            }
        } else if self.eat_kw("await") {
            self.primary()?;
            Node::Other("Await")
        } else {
            self.primary()?
        };
        while let Some((prec, ntok, kind)) = self.infix() {
            if prec < min {
                break;
            }
            self.i += ntok;
            let rhs = match prec {
                PREC_POW => self.nested_pratt(PREC_UNARY)?,
                _ => self.pratt(prec + 1)?,
            };
            lhs = match kind {
                // A sum whose left side is itself a sum is never a literal;
                // keeping it opaque also keeps `1 + 1 + … + 1` from building
                // a tree too deep to drop recursively.
                "+" | "-" if matches!(lhs, Node::BinOp(..)) => Node::Other("BinOp"),
                "+" => Node::BinOp(AddSub::Add, Box::new(lhs), Box::new(rhs)),
                "-" => Node::BinOp(AddSub::Sub, Box::new(lhs), Box::new(rhs)),
                other => Node::Other(other),
            };
        }
        Ok(lhs)
    }

    /// `primary`: an atom with `.name`, `(args)` and `[slices]` trailers.
    fn primary(&mut self) -> Result<Node, String> {
        let mut node = self.atom()?;
        loop {
            if self.eat_op(".") {
                if !self.is_plain_name() {
                    return self.err("invalid syntax");
                }
                self.i += 1;
                node = Node::Attribute;
            } else if self.is_op("(") {
                let is_set = matches!(node, Node::Name { is_set: true });
                let empty = self.call_args()?;
                node = if is_set && empty {
                    Node::SetCall
                } else {
                    Node::Other("Call")
                };
            } else if self.is_op("[") {
                self.slices()?;
                node = Node::Subscript;
            } else {
                return Ok(node);
            }
        }
    }

    /// `'(' [arguments] ')'`; returns whether there were no arguments.
    fn call_args(&mut self) -> Result<bool, String> {
        self.expect_op("(")?;
        if self.eat_op(")") {
            return Ok(true);
        }
        let mut n_args = 0usize;
        let mut seen_kw = false;
        let mut seen_dstar = false;
        loop {
            if self.eat_op("*") {
                if seen_dstar {
                    return self
                        .err("iterable argument unpacking follows keyword argument unpacking");
                }
                self.expression()?;
            } else if self.eat_op("**") {
                self.expression()?;
                seen_dstar = true;
            } else if self.is_plain_name() && matches!(self.peek_at(1), Tok::Op("=")) {
                self.i += 2;
                self.expression()?;
                seen_kw = true;
            } else {
                let (e, _) = self.named_expression()?;
                if self.is_kw("for") || self.is_kw("async") {
                    self.comprehension_clauses()?;
                    if n_args > 0 || !self.is_op(")") {
                        return self.err("Generator expression must be parenthesized");
                    }
                } else if self.is_op("=") {
                    return self.err(&format!(
                        "expression cannot contain assignment, perhaps you meant \"==\"? ({})",
                        target_kind(&e)
                    ));
                }
                if seen_dstar {
                    return self.err("positional argument follows keyword argument unpacking");
                }
                if seen_kw {
                    return self.err("positional argument follows keyword argument");
                }
            }
            n_args += 1;
            if self.eat_op(",") {
                if self.eat_op(")") {
                    return Ok(false);
                }
                continue;
            }
            self.expect_op(")")?;
            return Ok(false);
        }
    }

    /// `'[' slices ']'`.
    fn slices(&mut self) -> Result<(), String> {
        self.expect_op("[")?;
        loop {
            if self.eat_op("*") {
                self.expression()?;
            } else {
                let mut walrus = false;
                if !self.is_op(":") {
                    walrus = self.named_expression()?.1;
                }
                if self.eat_op(":") {
                    if walrus {
                        return self.err("invalid syntax");
                    }
                    if !self.is_op(":") && !self.is_op("]") && !self.is_op(",") {
                        self.expression()?;
                    }
                    if self.eat_op(":") && !self.is_op("]") && !self.is_op(",") {
                        self.expression()?;
                    }
                }
            }
            if self.eat_op(",") {
                if self.is_op("]") {
                    break;
                }
                continue;
            }
            break;
        }
        self.expect_op("]")
    }

    fn atom(&mut self) -> Result<Node, String> {
        match self.peek() {
            Tok::Name(n) => {
                let node = match n.as_str() {
                    "True" => Node::Bool(true),
                    "False" => Node::Bool(false),
                    "None" => Node::NoneLit,
                    k if is_keyword(k) => return self.err("invalid syntax"),
                    name => Node::Name {
                        is_set: name == "set",
                    },
                };
                self.i += 1;
                Ok(node)
            }
            Tok::Int(v) => {
                let v = v.clone();
                self.i += 1;
                Ok(Node::Int(v))
            }
            Tok::Float(f) => {
                let f = *f;
                self.i += 1;
                Ok(Node::Float(f))
            }
            Tok::Imag(f) => {
                let f = *f;
                self.i += 1;
                Ok(Node::Imag(f))
            }
            Tok::Str(_) | Tok::Bytes(_) | Tok::FStr => self.strings(),
            Tok::Op("...") => {
                self.i += 1;
                Ok(Node::Ellipsis)
            }
            Tok::Op("(") => self.paren(),
            Tok::Op("[") => self.list(),
            Tok::Op("{") => self.brace(),
            _ => self.err("invalid syntax"),
        }
    }

    /// Adjacent string literals, concatenated.
    fn strings(&mut self) -> Result<Node, String> {
        let (mut has_bytes, mut has_str, mut has_f) = (false, false, false);
        let mut s = String::new();
        let mut b = Vec::new();
        loop {
            match self.peek() {
                Tok::Str(x) => {
                    has_str = true;
                    s.push_str(x);
                }
                Tok::Bytes(x) => {
                    has_bytes = true;
                    b.extend_from_slice(x);
                }
                Tok::FStr => has_f = true,
                _ => break,
            }
            self.i += 1;
        }
        if has_bytes && (has_str || has_f) {
            return self.err("cannot mix bytes and nonbytes literals");
        }
        Ok(if has_f {
            Node::Other("JoinedStr")
        } else if has_bytes {
            Node::Bytes(b)
        } else {
            Node::Str(s)
        })
    }

    fn paren(&mut self) -> Result<Node, String> {
        self.expect_op("(")?;
        if self.eat_op(")") {
            return Ok(Node::Tuple(Vec::new()));
        }
        if self.eat_kw("yield") {
            self.yield_rest()?;
            self.expect_op(")")?;
            return Ok(Node::Other("Yield"));
        }
        let first = if self.is_op("*") {
            let s = self.star_named_expression()?;
            if !self.is_op(",") {
                return self.err("cannot use starred expression here");
            }
            s
        } else {
            let (e, _) = self.named_expression()?;
            if self.is_kw("for") || self.is_kw("async") {
                self.comprehension_clauses()?;
                self.expect_op(")")?;
                return Ok(Node::Other("GeneratorExp"));
            }
            e
        };
        if !self.is_op(",") {
            self.expect_op(")")?;
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op(")") {
                break;
            }
            items.push(self.star_named_expression()?);
        }
        self.expect_op(")")?;
        Ok(Node::Tuple(items))
    }

    /// After `yield`: `'from' expression | [star_expressions]`.
    fn yield_rest(&mut self) -> Result<(), String> {
        if self.eat_kw("from") {
            self.expression()?;
            return Ok(());
        }
        if !self.starts_expr() && !self.is_op("*") {
            return Ok(());
        }
        loop {
            if self.eat_op("*") {
                self.pratt(PREC_BITOR)?;
            } else {
                self.expression()?;
            }
            if !self.eat_op(",") || (!self.starts_expr() && !self.is_op("*")) {
                return Ok(());
            }
        }
    }

    fn list(&mut self) -> Result<Node, String> {
        self.expect_op("[")?;
        if self.eat_op("]") {
            return Ok(Node::List(Vec::new()));
        }
        let first = self.star_named_expression()?;
        if self.is_kw("for") || self.is_kw("async") {
            if matches!(first, Node::Starred(_)) {
                return self.err("iterable unpacking cannot be used in comprehension");
            }
            self.comprehension_clauses()?;
            self.expect_op("]")?;
            return Ok(Node::Other("ListComp"));
        }
        let mut items = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            items.push(self.star_named_expression()?);
        }
        self.expect_op("]")?;
        Ok(Node::List(items))
    }

    /// A dict value: `expression`, with CPython's messages for the usual
    /// mistakes.
    fn dict_value(&mut self) -> Result<Node, String> {
        if self.is_op("*") {
            return self.err("cannot use a starred expression in a dictionary value");
        }
        if !self.starts_expr() {
            return self.err("expression expected after dictionary key and ':'");
        }
        self.expression()
    }

    fn brace(&mut self) -> Result<Node, String> {
        self.expect_op("{")?;
        if self.eat_op("}") {
            return Ok(Node::Dict(Vec::new()));
        }
        if self.eat_op("**") {
            self.pratt(PREC_BITOR)?;
            if self.is_kw("for") || self.is_kw("async") {
                return self.err("dict unpacking cannot be used in dict comprehension");
            }
            return self.dict_rest(vec![(None, Node::Other("Dict"))]);
        }
        if self.is_op("*") {
            let first = self.star_named_expression()?;
            if self.is_kw("for") || self.is_kw("async") {
                return self.err("iterable unpacking cannot be used in comprehension");
            }
            return self.set_rest(vec![first]);
        }
        let (first, walrus) = self.named_expression()?;
        if self.eat_op(":") {
            if walrus {
                return self.err("invalid syntax");
            }
            let value = self.dict_value()?;
            if self.is_kw("for") || self.is_kw("async") {
                self.comprehension_clauses()?;
                self.expect_op("}")?;
                return Ok(Node::Other("DictComp"));
            }
            return self.dict_rest(vec![(Some(first), value)]);
        }
        if self.is_kw("for") || self.is_kw("async") {
            self.comprehension_clauses()?;
            self.expect_op("}")?;
            return Ok(Node::Other("SetComp"));
        }
        self.set_rest(vec![first])
    }

    fn dict_rest(&mut self, mut items: Vec<(Option<Node>, Node)>) -> Result<Node, String> {
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            if self.eat_op("**") {
                self.pratt(PREC_BITOR)?;
                items.push((None, Node::Other("Dict")));
                continue;
            }
            let key = self.expression()?;
            self.expect_op(":")?;
            let value = self.dict_value()?;
            items.push((Some(key), value));
        }
        self.expect_op("}")?;
        Ok(Node::Dict(items))
    }

    fn set_rest(&mut self, mut items: Vec<Node>) -> Result<Node, String> {
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            items.push(self.star_named_expression()?);
        }
        self.expect_op("}")?;
        Ok(Node::Set(items))
    }

    /// `for_if_clauses` (at least one).
    fn comprehension_clauses(&mut self) -> Result<(), String> {
        loop {
            if self.eat_kw("async") {
                if !self.eat_kw("for") {
                    return self.err("invalid syntax");
                }
            } else if !self.eat_kw("for") {
                return Ok(());
            }
            self.star_targets()?;
            if !self.eat_kw("in") {
                return self.err("invalid syntax");
            }
            self.pratt(PREC_OR)?;
            while self.eat_kw("if") {
                self.pratt(PREC_OR)?;
            }
        }
    }

    /// `star_targets` of a comprehension, checked for assignability.
    fn star_targets(&mut self) -> Result<(), String> {
        loop {
            let t = if self.eat_op("*") {
                Node::Starred(Box::new(self.pratt(PREC_BITOR)?))
            } else {
                self.pratt(PREC_BITOR)?
            };
            if !is_target(&t) {
                return self.err(&format!("cannot assign to {}", target_kind(&t)));
            }
            if self.eat_op(",") {
                if self.is_kw("in") {
                    return Ok(());
                }
                continue;
            }
            return Ok(());
        }
    }

    /// `lambda [params]: expression`.
    fn lambdef(&mut self) -> Result<Node, String> {
        self.i += 1; // `lambda`
        let mut seen_default = false;
        let mut seen_star = false;
        let mut seen_slash = false;
        let mut seen_kwds = false;
        let mut bare_star_pending = false;
        let mut n_params = 0usize;
        if !self.is_op(":") {
            loop {
                if seen_kwds {
                    return self.err("arguments cannot follow var-keyword argument");
                }
                if self.eat_op("**") {
                    if !self.is_plain_name() {
                        return self.err("invalid syntax");
                    }
                    self.i += 1;
                    if bare_star_pending {
                        return self.err("named arguments must follow bare *");
                    }
                    seen_kwds = true;
                } else if self.eat_op("*") {
                    if seen_star {
                        return self.err("* argument may appear only once");
                    }
                    seen_star = true;
                    if self.is_plain_name() {
                        self.i += 1;
                    } else {
                        bare_star_pending = true;
                    }
                } else if self.eat_op("/") {
                    if seen_slash || seen_star || n_params == 0 {
                        return self.err("invalid syntax");
                    }
                    seen_slash = true;
                } else if self.is_plain_name() {
                    self.i += 1;
                    n_params += 1;
                    if self.eat_op("=") {
                        self.expression()?;
                        if !seen_star {
                            seen_default = true;
                        }
                    } else if !seen_star && seen_default {
                        return self.err("non-default argument follows default argument");
                    }
                    bare_star_pending = false;
                } else {
                    return self.err("invalid syntax");
                }
                if self.eat_op(",") {
                    if self.is_op(":") {
                        break;
                    }
                    continue;
                }
                break;
            }
        }
        if bare_star_pending {
            return self.err("named arguments must follow bare *");
        }
        self.expect_op(":")?;
        self.expression()?;
        Ok(Node::Other("Lambda"))
    }
}
