//! C-like expressions: parsing into an [`Expr`] tree and evaluating it
//! against a stopped program through an [`EvalContext`].
//!
//! Arithmetic follows C on LP64 x86-64 (integer promotions, the usual
//! arithmetic conversions, wrapping to the result type), with gdb's answers
//! where C leaves things undefined: over-wide shifts give 0, float division
//! by zero gives inf, integer division by zero is an error.

pub use crate::call::Argument;
use crate::error::{Error, Result};
use crate::symbols::{TypeRef, ELEMENT_LIMIT, MAX_ARRAY_LAYERS};
use crate::value::{Aggregate, SyntheticTarget, Typed, Value};

/// An expression tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Integer, floating-point and character literals, already typed.
    Literal(Value),
    /// A string literal, escapes resolved.
    String(String),
    /// A variable, possibly qualified (`ns::x`).
    Name(String),
    /// `$rip`, `$pc`, `$eax`...: the name without `$`.
    Register(String),
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// Binary operators of one precedence, left to right: `a + b - c` is
    /// `first` = a, `rest` = [(Add, b), (Sub, c)]. Flat, so that a sum of
    /// ten thousand terms parses, evaluates and drops without recursing
    /// per term.
    Binary {
        first: Box<Expr>,
        rest: Vec<(BinaryOp, Expr)>,
    },
    /// `condition ? then : otherwise`.
    Conditional {
        condition: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `base.field`, or `base->field` when `arrow`.
    Member {
        base: Box<Expr>,
        field: String,
        arrow: bool,
    },
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// dbx's slice `base[first..last:stride]`: the elements from `first`
    /// (default 0) to `last` (default an array's last element) inclusive,
    /// every `stride`-th (default 1).
    Slice {
        base: Box<Expr>,
        first: Option<Box<Expr>>,
        last: Option<Box<Expr>>,
        stride: Option<Box<Expr>>,
    },
    /// `function(args...)`: an injected call of the program's function.
    Call {
        function: String,
        args: Vec<Expr>,
    },
    /// `(TYPE) operand`.
    Cast {
        target: TypeName,
        operand: Box<Expr>,
    },
    /// `sizeof(TYPE)`.
    SizeofType(TypeName),
    /// `sizeof EXPR`.
    SizeofExpr(Box<Expr>),
}

/// A type as written in a cast or `sizeof`: `struct point`, `unsigned
/// char`, `mytypedef`, with `pointers` levels of `*`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeName {
    pub base: String,
    pub pointers: u8,
}

impl TypeName {
    /// The C spelling gdb uses: `int`, `int *`, `struct point **`.
    pub fn spelling(&self) -> String {
        if self.pointers == 0 {
            self.base.clone()
        } else {
            format!("{} {}", self.base, "*".repeat(usize::from(self.pointers)))
        }
    }
}

/// Words that can only start a type name.
const TYPE_KEYWORDS: [&str; 16] = [
    "struct", "union", "enum", "unsigned", "signed", "char", "short", "int", "long", "float",
    "double", "void", "_Bool", "const", "volatile", "bool",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Plus,
    Negate,
    Not,
    Complement,
    Deref,
    AddressOf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
    /// gdb's `@`: `first@count` is an array of `count` objects in memory
    /// from `first` on.
    Repeat,
}

impl BinaryOp {
    /// Binding strength; higher binds tighter. All are left-associative.
    /// `@` sits between shifts and sums, as in gdb (`*p@n+1` is
    /// `*p@(n+1)`).
    fn precedence(self) -> u8 {
        use BinaryOp::*;
        match self {
            Or => 1,
            And => 2,
            BitOr => 3,
            BitXor => 4,
            BitAnd => 5,
            Eq | Ne => 6,
            Lt | Le | Gt | Ge => 7,
            Shl | Shr => 8,
            Repeat => 9,
            Add | Sub => 10,
            Mul | Div | Rem => 11,
        }
    }

    fn from_token(text: &str) -> Option<BinaryOp> {
        use BinaryOp::*;
        Some(match text {
            "*" => Mul,
            "/" => Div,
            "%" => Rem,
            "+" => Add,
            "-" => Sub,
            "<<" => Shl,
            ">>" => Shr,
            "<" => Lt,
            "<=" => Le,
            ">" => Gt,
            ">=" => Ge,
            "==" => Eq,
            "!=" => Ne,
            "&" => BitAnd,
            "^" => BitXor,
            "|" => BitOr,
            "&&" => And,
            "||" => Or,
            "@" => Repeat,
            _ => return None,
        })
    }
}

/// What the evaluator needs from the debugger: the program's variables,
/// registers and memory in the selected frame.
pub trait EvalContext {
    /// A local, parameter or global; `Err(Error::NoSuchSymbol)` when unknown.
    fn variable(&self, name: &str) -> Result<Value>;
    /// A register by name without `$` ("rip", "rsp", "pc", "eax"...).
    fn register(&self, name: &str) -> Option<Value>;
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// Calls the program's function `function` (`FUNC(ARGS)`); `None` for
    /// a void function. Contexts that must not run the program (breakpoint
    /// conditions, `whatis`) keep this default.
    fn call(&self, function: &str, args: &[Argument]) -> Result<Option<Value>> {
        let _ = args;
        Err(Error::Expression(format!(
            "cannot call \"{function}\" here; use print or call"
        )))
    }
    /// A named type of the program (`struct point`, `mytypedef`), for
    /// casts and `sizeof`; `ObjectFile::lookup_type` answers it. Without
    /// it, only base types and types of the program the expression's
    /// values come from are found.
    fn lookup_type(&self, name: &str) -> Option<TypeRef> {
        let _ = name;
        None
    }
    /// Names visible in the selected frame (locals, parameters, globals),
    /// for "did you mean" when a name is unknown.
    fn visible_names(&self) -> Vec<String> {
        Vec::new()
    }
    /// The symbol at a runtime address, shown after code pointers the
    /// evaluator reads (`s.callback` gives `0x401136 <twice>`).
    fn symbol_at(&self, address: u64) -> Option<String> {
        let _ = address;
        None
    }
    /// Writes the program's memory (for assignments); contexts that must
    /// not change the program keep this default.
    fn write_memory(&self, addr: u64, bytes: &[u8]) -> Result<()> {
        let _ = bytes;
        Err(Error::Expression(format!(
            "cannot write memory at 0x{addr:x} here"
        )))
    }
    /// Sets a register (`rax`, `rip`...) of the selected frame's thread;
    /// only the innermost frame's registers are the thread's own.
    fn write_register(&self, name: &str, value: u64) -> Result<()> {
        let _ = value;
        Err(Error::Expression(format!("cannot set ${name} here")))
    }
}

// ---------------------------------------------------------------- lexing

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    Literal(Value),
    String(String),
    Name(String),
    Register(String),
    Punct(&'static str),
    End,
}

#[derive(Debug, Clone, PartialEq)]
struct Token {
    kind: TokenKind,
    /// 1-based character column where the token starts.
    column: usize,
}

/// Longest first, so that `<<` wins over `<`.
const PUNCTUATION: [&str; 31] = [
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "..", "+", "-", "*", "/", "%", "<", ">",
    "&", "^", "|", "!", "~", "?", ":", "(", ")", "[", "]", ".", ",", "@",
];

/// Most levels of nesting in one expression. Parentheses, unary
/// operators, casts, `sizeof`, the branches of `?:`, subscripts, members,
/// calls and each rise in operator precedence nest one level; the parser
/// and the evaluator recurse on them (a chain of one operator does not
/// nest: it is one flat [`Expr::Binary`]). The bound keeps that recursion
/// well inside the stack of the main thread (8 MiB), in a debug build too.
pub const MAX_NESTING: usize = 256;

fn syntax_error(column: usize, message: impl std::fmt::Display) -> Error {
    Error::Expression(format!("syntax error at column {column}: {message}"))
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    /// Where the last run of name characters that was no file scope
    /// ended: a name starting before it is no file scope either (without
    /// this, `s.a.a.a...` would be scanned to its end at every name).
    unscoped_until: usize,
}

impl Lexer {
    fn tokens(text: &str) -> Result<Vec<Token>> {
        let mut lexer = Lexer {
            chars: text.chars().collect(),
            pos: 0,
            unscoped_until: 0,
        };
        let mut tokens = Vec::new();
        loop {
            while lexer.peek(0).is_some_and(char::is_whitespace) {
                lexer.pos += 1;
            }
            let column = lexer.pos + 1;
            let Some(c) = lexer.peek(0) else {
                tokens.push(Token {
                    kind: TokenKind::End,
                    column,
                });
                return Ok(tokens);
            };
            // After an operand, `.1` is a member (a Rust tuple's field
            // `__1`), not the number 0.1.
            let ends_operand = |t: Option<&Token>| {
                t.is_some_and(|t| {
                    matches!(
                        &t.kind,
                        TokenKind::Name(_) | TokenKind::Register(_) | TokenKind::Punct(")" | "]")
                    )
                })
            };
            let after_operand = ends_operand(tokens.last());
            let after_member_dot = tokens.len() >= 2
                && matches!(tokens[tokens.len() - 1].kind, TokenKind::Punct("."))
                && ends_operand(tokens.get(tokens.len() - 2));
            let kind = if c.is_ascii_digit() && after_member_dot {
                TokenKind::Name(format!("__{}", lexer.digits()))
            } else if c == '.' && after_operand {
                lexer.punctuation(column)?
            } else if c.is_ascii_digit()
                || (c == '.' && lexer.peek(1).is_some_and(|d| d.is_ascii_digit()))
            {
                lexer.number(column)?
            } else if let Some(name) = lexer.scoped_name() {
                TokenKind::Name(name)
            } else if c.is_alphabetic() || c == '_' {
                TokenKind::Name(lexer.identifier(true))
            } else if c == '$' {
                lexer.pos += 1;
                TokenKind::Register(lexer.identifier(false))
            } else if c == '\'' {
                lexer.char_literal(column)?
            } else if c == '"' {
                lexer.string_literal(column)?
            } else {
                lexer.punctuation(column)?
            };
            tokens.push(Token { kind, column });
        }
    }

    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// Decimal digits only (a tuple field's index).
    fn digits(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek(0).filter(char::is_ascii_digit) {
            out.push(c);
            self.pos += 1;
        }
        out
    }

    /// gdb's file scope, `'q.c'::counter` or `q.c::counter`: the file
    /// name up to `::` and the name after it, as one name.
    fn scoped_name(&mut self) -> Option<String> {
        let quoted = self.peek(0) == Some('\'');
        if !quoted && !self.peek(0).is_some_and(|c| c.is_alphabetic() || c == '_') {
            return None;
        }
        if !quoted && self.pos < self.unscoped_until {
            return None;
        }
        let start = self.pos + usize::from(quoted);
        let mut end = start;
        while let Some(c) = self.chars.get(end) {
            let in_name = c.is_alphanumeric() || matches!(c, '_' | '.');
            if !(in_name || (quoted && *c != '\'')) {
                break;
            }
            end += 1;
        }
        let file: String = self.chars[start..end].iter().collect();
        let close = end + usize::from(quoted);
        let valid = end > start
            && (!quoted || self.chars.get(end) == Some(&'\''))
            && (quoted || file.contains('.'))
            && self.chars.get(close) == Some(&':')
            && self.chars.get(close + 1) == Some(&':');
        if !valid {
            if !quoted {
                self.unscoped_until = end;
            }
            return None;
        }
        self.pos = close + 2;
        Some(format!("{file}::{}", self.identifier(true)))
    }

    /// Letters, digits and `_`; with `qualified`, also `::` between parts.
    fn identifier(&mut self, qualified: bool) -> String {
        let mut name = String::new();
        loop {
            match self.peek(0) {
                Some(c) if c.is_alphanumeric() || c == '_' => {
                    name.push(c);
                    self.pos += 1;
                }
                Some(':')
                    if qualified
                        && self.peek(1) == Some(':')
                        && self.peek(2).is_some_and(|c| c.is_alphabetic() || c == '_') =>
                {
                    name.push_str("::");
                    self.pos += 2;
                }
                _ => return name,
            }
        }
    }

    fn number(&mut self, column: usize) -> Result<TokenKind> {
        let start = self.pos;
        let hex = self.peek(0) == Some('0') && matches!(self.peek(1), Some('x' | 'X'));
        while let Some(c) = self.peek(0) {
            let exponent_sign = !hex
                && (c == '+' || c == '-')
                && matches!(self.chars.get(self.pos.wrapping_sub(1)), Some('e' | 'E'));
            // `2..4` is a slice's range, not a number.
            let range = c == '.' && self.peek(1) == Some('.');
            if (c.is_alphanumeric() || c == '.' || c == '_' || exponent_sign) && !range {
                self.pos += 1;
            } else {
                break;
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        let literal = if !hex && (text.contains('.') || text.contains(['e', 'E'])) {
            float_literal(&text)
        } else {
            integer_literal(&text)
        };
        literal
            .map(TokenKind::Literal)
            .ok_or_else(|| syntax_error(column, format!("invalid number \"{text}\"")))
    }

    /// One possibly escaped character inside quotes.
    fn quoted_char(&mut self, column: usize) -> Result<u32> {
        let c = self
            .peek(0)
            .ok_or_else(|| syntax_error(column, "unterminated quote"))?;
        self.pos += 1;
        if c != '\\' {
            return Ok(c as u32);
        }
        let e = self
            .peek(0)
            .ok_or_else(|| syntax_error(column, "unterminated quote"))?;
        self.pos += 1;
        Ok(match e {
            'n' => 10,
            't' => 9,
            'r' => 13,
            'a' => 7,
            'b' => 8,
            'f' => 12,
            'v' => 11,
            'e' => 27,
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek(0).and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                value
            }
            'x' => {
                let mut value = 0u32;
                let mut digits = 0;
                while let Some(d) = self.peek(0).and_then(|d| d.to_digit(16)) {
                    value = value.wrapping_mul(16).wrapping_add(d);
                    self.pos += 1;
                    digits += 1;
                }
                if digits == 0 {
                    return Err(syntax_error(column, "\\x without hex digits"));
                }
                value
            }
            other => other as u32,
        })
    }

    fn char_literal(&mut self, column: usize) -> Result<TokenKind> {
        self.pos += 1;
        if self.peek(0) == Some('\'') {
            return Err(syntax_error(column, "empty character constant"));
        }
        let code = self.quoted_char(column)?;
        if self.peek(0) != Some('\'') {
            return Err(syntax_error(column, "invalid character constant"));
        }
        self.pos += 1;
        // `char` is signed on x86-64: '\377' is -1.
        let value = if code <= 0xff {
            i64::from(code as u8 as i8)
        } else {
            i64::from(code)
        };
        Ok(TokenKind::Literal(Value::Char {
            value,
            size: 1,
            type_name: "char".to_string(),
        }))
    }

    fn string_literal(&mut self, column: usize) -> Result<TokenKind> {
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.peek(0) {
                None => return Err(syntax_error(column, "unterminated string")),
                Some('"') => {
                    self.pos += 1;
                    return Ok(TokenKind::String(text));
                }
                Some(_) => {
                    let code = self.quoted_char(column)?;
                    text.push(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER));
                }
            }
        }
    }

    fn punctuation(&mut self, column: usize) -> Result<TokenKind> {
        let rest: String = self.chars[self.pos..].iter().take(2).collect();
        match PUNCTUATION.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                self.pos += p.chars().count();
                Ok(TokenKind::Punct(p))
            }
            None => {
                let c = self.chars[self.pos];
                Err(syntax_error(column, format!("unexpected character '{c}'")))
            }
        }
    }
}

/// A C integer literal with LP64 typing: the first of int, (unsigned int,)
/// long, unsigned long that holds it, as the suffix and base allow.
fn integer_literal(text: &str) -> Option<Value> {
    let digits_end = text
        .rfind(|c: char| !matches!(c, 'u' | 'U' | 'l' | 'L'))
        .map_or(0, |i| i + 1);
    let (digits, suffix) = text.split_at(digits_end);
    let suffix = suffix.to_ascii_lowercase();
    let unsigned = suffix.contains('u');
    let long = suffix.contains('l');
    if suffix.len() > usize::from(unsigned) + 2 || suffix.replace('u', "").chars().any(|c| c != 'l')
    {
        return None;
    }
    let (radix, body) = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        (16, hex)
    } else if let Some(bin) = digits.strip_prefix("0b").or(digits.strip_prefix("0B")) {
        (2, bin)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    let value = u64::from_str_radix(body, radix).ok()?;
    let decimal = radix == 10;
    let fits_int = value <= i32::MAX as u64;
    let fits_uint = value <= u32::MAX as u64;
    let fits_long = value <= i64::MAX as u64;
    let (size, signed) = match (unsigned, long) {
        (false, false) if fits_int => (4, true),
        (false, false) if fits_uint && !decimal => (4, false),
        (true, false) if fits_uint => (4, false),
        (false, _) if fits_long => (8, true),
        _ => (8, false),
    };
    Some(make_integer(i128::from(value), size, signed))
}

/// `1.5`, `1e3`, `.5f`; `f` makes a float, `l` a long double (kept as a
/// double, which is all the precision we carry).
fn float_literal(text: &str) -> Option<Value> {
    let (body, size, type_name) = match text.chars().last()? {
        'f' | 'F' => (&text[..text.len() - 1], 4, "float"),
        'l' | 'L' => (&text[..text.len() - 1], 16, "long double"),
        _ => (text, 8, "double"),
    };
    let value: f64 = body.parse().ok()?;
    let value = if size == 4 {
        value as f32 as f64
    } else {
        value
    };
    Some(Value::Float {
        value,
        size,
        type_name: type_name.to_string(),
    })
}

// ---------------------------------------------------------------- parsing

/// Parses a whole expression; errors name the 1-based column.
pub fn parse(text: &str) -> Result<Expr> {
    let tokens = Lexer::tokens(text)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let expr = parser.conditional()?;
    match parser.peek() {
        TokenKind::End => Ok(expr),
        _ => Err(parser.unexpected()),
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Levels of nesting open where the parser is (see [`MAX_NESTING`]).
    depth: usize,
}

impl Parser {
    /// Enters one more level of nesting, refusing to go past
    /// [`MAX_NESTING`]; the caller leaves it with [`Parser::leave`].
    fn enter(&mut self) -> Result<()> {
        if self.depth >= MAX_NESTING {
            return Err(Error::Expression(format!(
                "expression nested too deeply at column {}: the limit is {MAX_NESTING} levels \
                 of parentheses, unary operators, casts, subscripts, members and calls",
                self.column()
            )));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self, levels: usize) {
        self.depth -= levels;
    }

    /// Runs `inner` one level of nesting deeper.
    fn nested(&mut self, inner: impl FnOnce(&mut Self) -> Result<Expr>) -> Result<Expr> {
        self.enter()?;
        let result = inner(self);
        self.leave(1);
        result
    }

    fn peek(&self) -> &TokenKind {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].kind
    }

    fn column(&self) -> usize {
        self.tokens[self.pos.min(self.tokens.len() - 1)].column
    }

    fn advance(&mut self) -> TokenKind {
        let kind = self.peek().clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        kind
    }

    fn at_punct(&self, p: &str) -> bool {
        matches!(self.peek(), TokenKind::Punct(q) if *q == p)
    }

    fn expect(&mut self, p: &str) -> Result<()> {
        if self.at_punct(p) {
            self.advance();
            Ok(())
        } else {
            Err(syntax_error(
                self.column(),
                format!("expected '{p}', found {}", self.describe()),
            ))
        }
    }

    fn describe(&self) -> String {
        match self.peek() {
            TokenKind::End => "end of expression".to_string(),
            TokenKind::Punct(p) => format!("'{p}'"),
            TokenKind::Name(n) => format!("\"{n}\""),
            TokenKind::Register(r) => format!("\"${r}\""),
            TokenKind::Literal(v) => format!("\"{v}\""),
            TokenKind::String(s) => format!("{s:?}"),
        }
    }

    fn unexpected(&self) -> Error {
        syntax_error(self.column(), format!("unexpected {}", self.describe()))
    }

    /// `a ? b : c`, right-associative, lowest precedence.
    fn conditional(&mut self) -> Result<Expr> {
        let condition = self.binary(1)?;
        if !self.at_punct("?") {
            return Ok(condition);
        }
        self.advance();
        let then = self.nested(Self::conditional)?;
        self.expect(":")?;
        let otherwise = self.nested(Self::conditional)?;
        Ok(Expr::Conditional {
            condition: Box::new(condition),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        })
    }

    /// Precedence climbing over the binary operators: operators of one
    /// precedence gather in one flat chain; a lower one after them makes
    /// the chain so far its first operand.
    fn binary(&mut self, min_precedence: u8) -> Result<Expr> {
        let mut first = self.unary()?;
        let mut rest: Vec<(BinaryOp, Expr)> = Vec::new();
        loop {
            let op = match self.peek() {
                TokenKind::Punct(p) => BinaryOp::from_token(p),
                _ => None,
            };
            let Some(op) = op.filter(|op| op.precedence() >= min_precedence) else {
                break;
            };
            self.advance();
            let right = self.nested(|parser| parser.binary(op.precedence() + 1))?;
            if rest
                .last()
                .is_some_and(|(last, _)| last.precedence() != op.precedence())
            {
                first = Expr::Binary {
                    first: Box::new(first),
                    rest: std::mem::take(&mut rest),
                };
            }
            rest.push((op, right));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        Ok(Expr::Binary {
            first: Box::new(first),
            rest,
        })
    }

    fn unary(&mut self) -> Result<Expr> {
        if matches!(self.peek(), TokenKind::Name(n) if n == "sizeof") {
            self.advance();
            if self.at_punct("(") && self.type_follows(1).is_some() {
                self.advance();
                let target = self.type_name()?;
                self.expect(")")?;
                return Ok(Expr::SizeofType(target));
            }
            return Ok(Expr::SizeofExpr(Box::new(self.nested(Self::unary)?)));
        }
        if self.at_punct("(") {
            if let Some(is_cast) = self.type_follows(1) {
                if is_cast {
                    self.advance();
                    let target = self.type_name()?;
                    self.expect(")")?;
                    return Ok(Expr::Cast {
                        target,
                        operand: Box::new(self.nested(Self::unary)?),
                    });
                }
            }
        }
        let op = match self.peek() {
            TokenKind::Punct("+") => UnaryOp::Plus,
            TokenKind::Punct("-") => UnaryOp::Negate,
            TokenKind::Punct("!") => UnaryOp::Not,
            TokenKind::Punct("~") => UnaryOp::Complement,
            TokenKind::Punct("*") => UnaryOp::Deref,
            TokenKind::Punct("&") => UnaryOp::AddressOf,
            _ => return self.postfix(),
        };
        self.advance();
        Ok(Expr::Unary {
            op,
            operand: Box::new(self.nested(Self::unary)?),
        })
    }

    /// An operand and the subscripts, members and calls after it. They
    /// are parsed in a loop but make a tree as deep as they are many, so
    /// each counts as a level of nesting.
    fn postfix(&mut self) -> Result<Expr> {
        let operand = self.primary()?;
        let outer = self.depth;
        let result = self.postfix_operators(operand);
        let levels = self.depth - outer;
        self.leave(levels);
        result
    }

    fn postfix_operators(&mut self, mut expr: Expr) -> Result<Expr> {
        loop {
            if self.at_punct("[") || self.at_punct("(") || self.at_punct(".") || self.at_punct("->")
            {
                self.enter()?;
            }
            if self.at_punct("[") {
                self.advance();
                expr = self.subscript_or_slice(expr)?;
            } else if self.at_punct("(") {
                let Expr::Name(function) = expr else {
                    return Err(syntax_error(
                        self.column(),
                        "only a function named directly can be called",
                    ));
                };
                self.advance();
                expr = Expr::Call {
                    function,
                    args: self.call_arguments()?,
                };
            } else if self.at_punct(".") || self.at_punct("->") {
                let arrow = self.at_punct("->");
                self.advance();
                let TokenKind::Name(field) = self.peek().clone() else {
                    return Err(syntax_error(
                        self.column(),
                        format!("expected a field name, found {}", self.describe()),
                    ));
                };
                self.advance();
                expr = Expr::Member {
                    base: Box::new(expr),
                    field,
                    arrow,
                };
            } else {
                return Ok(expr);
            }
        }
    }

    /// After `base[`: `index]`, or a slice `first..last:stride]` whose
    /// parts may each be left out (`..`, `2..`, `..4`, `2..8:2`).
    fn subscript_or_slice(&mut self, base: Expr) -> Result<Expr> {
        let first = if self.at_punct("..") {
            None
        } else {
            let index = self.nested(Self::conditional)?;
            if !self.at_punct("..") {
                self.expect("]")?;
                return Ok(Expr::Index {
                    base: Box::new(base),
                    index: Box::new(index),
                });
            }
            Some(Box::new(index))
        };
        self.advance();
        let last = if self.at_punct("]") || self.at_punct(":") {
            None
        } else {
            Some(Box::new(self.nested(Self::conditional)?))
        };
        let stride = if self.at_punct(":") {
            self.advance();
            Some(Box::new(self.nested(Self::conditional)?))
        } else {
            None
        };
        self.expect("]")?;
        Ok(Expr::Slice {
            base: Box::new(base),
            first,
            last,
            stride,
        })
    }

    fn token_at(&self, ahead: usize) -> &TokenKind {
        &self.tokens[(self.pos + ahead).min(self.tokens.len() - 1)].kind
    }

    /// Whether a type name starts `ahead` tokens on: `Some(true)` when the
    /// parenthesised text is a type. A keyword (`struct`, `unsigned`...)
    /// always starts one; a plain name does when stars follow it
    /// (`(mytype *)p`) or when an operand follows the `)`
    /// (`(mytype) v`), since `(v) w` means nothing else.
    fn type_follows(&self, ahead: usize) -> Option<bool> {
        let TokenKind::Name(first) = self.token_at(ahead) else {
            return None;
        };
        if TYPE_KEYWORDS.contains(&first.as_str()) {
            return Some(true);
        }
        let mut k = ahead + 1;
        let mut stars = 0;
        while matches!(self.token_at(k), TokenKind::Punct("*")) {
            k += 1;
            stars += 1;
        }
        if !matches!(self.token_at(k), TokenKind::Punct(")")) {
            return None;
        }
        let operand_follows = matches!(
            self.token_at(k + 1),
            TokenKind::Name(_)
                | TokenKind::Literal(_)
                | TokenKind::String(_)
                | TokenKind::Register(_)
                | TokenKind::Punct("(")
        );
        if stars > 0 || operand_follows {
            Some(true)
        } else {
            None
        }
    }

    /// `struct point *`, `unsigned long`, `mytype **`, `const char *`.
    fn type_name(&mut self) -> Result<TypeName> {
        let mut words: Vec<String> = Vec::new();
        while let TokenKind::Name(word) = self.peek().clone() {
            if matches!(word.as_str(), "const" | "volatile") {
                self.advance();
                continue;
            }
            let tagged = words
                .last()
                .is_some_and(|w| matches!(w.as_str(), "struct" | "union" | "enum"));
            let complete = !words.is_empty()
                && !tagged
                && (!TYPE_KEYWORDS.contains(&word.as_str())
                    || !words.iter().all(|w| TYPE_KEYWORDS.contains(&w.as_str())));
            if complete {
                break;
            }
            words.push(word);
            self.advance();
            if tagged {
                break;
            }
        }
        if let Some(tag) = words
            .last()
            .filter(|w| matches!(w.as_str(), "struct" | "union" | "enum"))
        {
            return Err(syntax_error(
                self.column(),
                format!("expected a name after '{tag}', found {}", self.describe()),
            ));
        }
        if words.is_empty() {
            return Err(syntax_error(
                self.column(),
                format!("expected a type, found {}", self.describe()),
            ));
        }
        let mut pointers = 0u8;
        loop {
            if self.at_punct("*") {
                pointers = pointers.saturating_add(1);
                self.advance();
            } else if matches!(self.peek(), TokenKind::Name(n) if n == "const" || n == "volatile") {
                self.advance();
            } else {
                break;
            }
        }
        Ok(TypeName {
            base: words.join(" "),
            pointers,
        })
    }

    /// `a, b, c)` after a call's `(`, the `)` included.
    fn call_arguments(&mut self) -> Result<Vec<Expr>> {
        let mut args = Vec::new();
        if self.at_punct(")") {
            self.advance();
            return Ok(args);
        }
        loop {
            args.push(self.nested(Self::conditional)?);
            if self.at_punct(",") {
                self.advance();
                continue;
            }
            self.expect(")")?;
            return Ok(args);
        }
    }

    fn primary(&mut self) -> Result<Expr> {
        match self.peek().clone() {
            TokenKind::Literal(value) => {
                self.advance();
                Ok(Expr::Literal(value))
            }
            TokenKind::String(text) => {
                self.advance();
                Ok(Expr::String(text))
            }
            TokenKind::Name(name) => {
                self.advance();
                Ok(Expr::Name(name))
            }
            TokenKind::Register(name) => {
                self.advance();
                Ok(Expr::Register(name))
            }
            TokenKind::Punct("(") => {
                self.advance();
                let inner = self.nested(Self::conditional)?;
                self.expect(")")?;
                Ok(inner)
            }
            _ => Err(self.unexpected()),
        }
    }
}

// ---------------------------------------------------------------- evaluation

/// Evaluates an expression in the context of the selected frame.
pub fn evaluate(expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    eval(expr, ctx)
        .map(Value::into_plain)
        .map_err(|e| suggest(e, ctx))
}

/// Like [`evaluate`], but the value keeps its DWARF type, bytes and
/// address ([`Value::Typed`]) when it has them, so that it can be used
/// again (the value history's `$1.y`, `&$1`, `*$2`) or assigned to.
pub fn evaluate_typed(expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    eval(expr, ctx).map_err(|e| suggest(e, ctx))
}

/// Like [`evaluate_statement`], keeping types as [`evaluate_typed`] does.
pub fn evaluate_statement_typed(expr: &Expr, ctx: &dyn EvalContext) -> Result<Option<Value>> {
    match expr {
        Expr::Call { .. } => call(expr, ctx).map_err(|e| suggest(e, ctx)),
        other => evaluate_typed(other, ctx).map(Some),
    }
}

/// An unknown name's error, with the nearest visible name when one is
/// close enough to be a likely typo.
fn suggest(error: Error, ctx: &dyn EvalContext) -> Error {
    let Error::NoSuchSymbol(name) = &error else {
        return error;
    };
    match nearest_name(name, &ctx.visible_names()) {
        Some(best) => Error::Expression(format!(
            "no symbol \"{name}\" in current context; did you mean \"{best}\"?"
        )),
        None => error,
    }
}

/// The candidate with the smallest edit distance to `name`, if that is at
/// most a third of the name's length (and at least one edit is allowed).
fn nearest_name<'a>(name: &str, candidates: &'a [String]) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .iter()
        .filter(|c| c.as_str() != name)
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, c)| c.as_str())
}

/// Evaluation keeping DWARF types on values, so that the next operator
/// can use them.
fn eval(expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    match expr {
        Expr::Literal(value) => Ok(value.clone()),
        Expr::String(text) => Ok(Value::Composite {
            type_name: format!("char [{}]", text.len() + 1),
            text: format!("{text:?}"),
            parts: None,
        }),
        Expr::Name(name) => ctx.variable(name),
        Expr::Register(name) => ctx
            .register(name)
            .ok_or_else(|| Error::Expression(format!("no register \"${name}\""))),
        Expr::Unary { op, operand } => unary(*op, operand, ctx),
        Expr::Binary { first, rest } => chain(first, rest, ctx),
        Expr::Conditional {
            condition,
            then,
            otherwise,
        } => {
            if truth(&operand_of(condition, ctx)?)? {
                eval(then, ctx)
            } else {
                eval(otherwise, ctx)
            }
        }
        Expr::Index { base, index } => {
            let base = operand_of(base, ctx)?;
            let index = operand_of(index, ctx)?;
            subscript(&base, &index, ctx)
        }
        Expr::Slice { .. } => slice(expr, ctx),
        Expr::Member { base, field, arrow } => {
            let base = operand_of(base, ctx)?;
            member(base, field, *arrow, ctx)
        }
        Expr::Call { function, .. } => call(expr, ctx)?.ok_or_else(|| {
            Error::Expression(format!("{function} returns void: its value cannot be used"))
        }),
        Expr::Cast { target, operand } => {
            let value = decay(operand_of(operand, ctx)?, ctx);
            cast(target, value, ctx)
        }
        Expr::SizeofType(target) => {
            let size = match resolve_type(target, None, ctx) {
                Some(ty) => ty.size(),
                None if target.pointers > 0 => Some(8),
                None => base_type(&target.base).map(|(size, _)| u64::from(size)),
            };
            let size = size.ok_or_else(|| no_type(target))?;
            Ok(make_integer(i128::from(size), 8, false))
        }
        Expr::SizeofExpr(operand) => {
            let value = match (eval(operand, ctx), operand.as_ref()) {
                // `sizeof(mytype)` parses as an expression; a type is meant
                // when no variable has the name.
                (Err(Error::NoSuchSymbol(_)), Expr::Name(name)) => {
                    let target = TypeName {
                        base: name.clone(),
                        pointers: 0,
                    };
                    let ty = resolve_type(&target, None, ctx).ok_or_else(|| no_type(&target))?;
                    let size = ty.size().ok_or_else(|| no_type(&target))?;
                    return Ok(make_integer(i128::from(size), 8, false));
                }
                (value, _) => value?,
            };
            let size = size_of_value(&value).ok_or_else(|| {
                Error::Expression(format!(
                    "the size of a value of type \"{}\" is not known",
                    value.type_name()
                ))
            })?;
            Ok(make_integer(i128::from(size), 8, false))
        }
    }
}

/// An operand of an operator: C++ references are seen through to what
/// they refer to, as gdb does (`ref + 1`, `obj.b`, `&ref`).
fn operand_of(expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    let value = eval(expr, ctx)?;
    let Some(t) = typed(&value).filter(|t| t.ty.is_reference()) else {
        return Ok(value);
    };
    let Some(referred) = t.ty.pointee() else {
        return Ok(value);
    };
    let mut raw = [0u8; 8];
    let n = t.bytes.len().min(8);
    raw[..n].copy_from_slice(&t.bytes[..n]);
    read_object(referred, u64::from_le_bytes(raw), ctx)
}

fn no_type(target: &TypeName) -> Error {
    Error::Expression(format!("no type named \"{}\"", target.spelling()))
}

fn size_of_value(value: &Value) -> Option<u64> {
    match value {
        Value::Typed(typed) => typed.ty.size(),
        Value::Integer { size, .. } | Value::Char { size, .. } | Value::Float { size, .. } => {
            Some(u64::from(*size))
        }
        Value::Bool(_) => Some(1),
        Value::Pointer { .. } => Some(8),
        Value::Enum { .. } => Some(4),
        Value::Composite { type_name, .. } => type_name
            .strip_prefix("char [")
            .and_then(|n| n.strip_suffix(']'))
            .and_then(|n| n.parse().ok()),
        _ => None,
    }
}

fn typed(value: &Value) -> Option<&Typed> {
    match value {
        Value::Typed(typed) => Some(typed),
        _ => None,
    }
}

/// A value of type `ty` decoded from `bytes` (strings it points to are read).
fn make_typed(ty: TypeRef, bytes: Vec<u8>, address: Option<u64>, ctx: &dyn EvalContext) -> Value {
    make_typed_known(ty, bytes, None, address, ctx)
}

/// [`make_typed`] of bytes of which only the bits set in `known` (a mask
/// per byte) are available: part of an object assembled from pieces.
fn make_typed_known(
    ty: TypeRef,
    bytes: Vec<u8>,
    known: Option<Vec<u8>>,
    address: Option<u64>,
    ctx: &dyn EvalContext,
) -> Value {
    let read = |addr: u64, buf: &mut [u8]| ctx.read_memory(addr, buf);
    let symbolizer = |addr: u64| ctx.symbol_at(addr);
    let known = known.filter(|k| k.iter().any(|b| *b != 0xff));
    let value = ty.decode_known(&bytes, known.as_deref(), &read, &symbolizer);
    Value::Typed(Box::new(Typed {
        absent_type_name: Typed::absent_name(&value, &ty),
        value,
        ty,
        bytes,
        known,
        address,
        register: None,
        synthetic: None,
    }))
}

/// The masks of `len` bytes from `start` of a value's known bits, when
/// some of its bits are unknown.
fn known_part(typed: &Typed, start: usize, len: usize) -> Option<Vec<u8>> {
    let known = typed.known.as_ref()?;
    Some(known.get(start..start + len).unwrap_or(&[]).to_vec())
}

/// A synthetic pointer (one the compiler optimized away, whose target
/// DWARF still names) and its target.
fn synthetic(value: &Value) -> Option<(&Typed, &SyntheticTarget)> {
    let typed = typed(value)?;
    Some((typed, typed.synthetic.as_deref()?))
}

/// `*(pointer + extra)` for a synthetic pointer: the bytes of its target
/// object, as gdb reads them.
fn synthetic_dereference(
    pointer: &Typed,
    target: &SyntheticTarget,
    extra: i64,
    ctx: &dyn EvalContext,
) -> Result<Value> {
    let pointee = pointer.ty.pointee().ok_or_else(|| {
        Error::Expression("attempt to take contents of a non-pointer value".into())
    })?;
    let size = pointee.size().ok_or_else(|| {
        Error::Expression(format!(
            "the size of type \"{}\" is not known",
            pointee.name()
        ))
    })? as usize;
    let Some(object) = typed(&target.object) else {
        return match target.object.plain() {
            // The target is gone: so is what the pointer points to.
            Value::OptimizedOut => Ok(make_typed_known(
                pointee,
                vec![0; size],
                Some(vec![0; size]),
                None,
                ctx,
            )),
            other => Ok(other.clone()),
        };
    };
    let start = target
        .offset
        .checked_add(extra)
        .and_then(|s| usize::try_from(s).ok())
        .filter(|s| {
            s.checked_add(size)
                .is_some_and(|end| end <= object.bytes.len())
        })
        .ok_or_else(|| Error::Expression("a synthetic pointer points outside its object".into()))?;
    if object.synthetic.is_some() && start == 0 && size == object.bytes.len() {
        return Ok(target.object.clone());
    }
    let bytes = object.bytes[start..start + size].to_vec();
    let known = known_part(object, start, size);
    let address = object.address.map(|a| a.wrapping_add(start as u64));
    Ok(make_typed_known(pointee, bytes, known, address, ctx))
}

/// `synthetic + n`, `n + synthetic`, `synthetic - n`: the same target
/// further along, or `None` when neither side is a synthetic pointer.
fn synthetic_arithmetic(op: BinaryOp, left: &Value, right: &Value) -> Result<Option<Value>> {
    let (pointer, count) = match (op, synthetic(left), synthetic(right)) {
        (BinaryOp::Add | BinaryOp::Sub, Some(_), None) => (left, right),
        (BinaryOp::Add, None, Some(_)) => (right, left),
        _ => return Ok(None),
    };
    let Operand::Int { value, .. } = operand(count)? else {
        return Ok(None);
    };
    let Some((typed, target)) = synthetic(pointer) else {
        return Ok(None);
    };
    let size = typed.ty.pointee().and_then(|p| p.size()).unwrap_or(1);
    let step = i64::try_from(value.wrapping_mul(i128::from(size))).unwrap_or(i64::MAX);
    let step = if op == BinaryOp::Sub { -step } else { step };
    let mut moved = typed.clone();
    moved.synthetic = Some(Box::new(SyntheticTarget {
        object: target.object.clone(),
        offset: target.offset.wrapping_add(step),
    }));
    Ok(Some(Value::Typed(Box::new(moved))))
}

/// gdb's error for operating on a value that is not there. Parts of an
/// aggregate assembled from pieces are still reachable (`h.n.f` is
/// `<optimized out>`, not an error); a pointer's target is not.
fn optimized_out_error(value: &Value) -> Option<Error> {
    let partial_aggregate = typed(value).is_some_and(|t| {
        t.known.is_some()
            && matches!(
                t.ty.kind(),
                crate::symbols::TypeKind::Struct | crate::symbols::TypeKind::Array
            )
    });
    (matches!(value.plain(), Value::OptimizedOut) && !partial_aggregate)
        .then(|| Error::Expression("value has been optimized out".into()))
}

/// A function as a value, as gdb shows it: `{int (int, double)}
/// 0x401136 <helper>`. Its type is the function's DWARF type, when known;
/// it decays to a pointer to the function as in C.
pub(crate) fn function_value(ty: Option<TypeRef>, address: u64, symbol: Option<String>) -> Value {
    let type_name = ty
        .as_ref()
        .map(TypeRef::name)
        .unwrap_or_else(|| "<text variable, no debug info>".to_string());
    let text = match &symbol {
        Some(name) => format!("{{{type_name}}} 0x{address:x} <{name}>"),
        None => format!("{{{type_name}}} 0x{address:x}"),
    };
    let plain = Value::Composite {
        type_name,
        text,
        parts: None,
    };
    match ty {
        Some(ty) => Value::Typed(Box::new(Typed {
            value: plain,
            ty,
            bytes: address.to_le_bytes().to_vec(),
            known: None,
            address: Some(address),
            register: None,
            synthetic: None,
            absent_type_name: None,
        })),
        None => plain,
    }
}

fn is_function(value: &Value) -> bool {
    typed(value).is_some_and(|t| t.ty.kind() == crate::symbols::TypeKind::Function)
}

/// Largest object read for `*p` or `a[i]`; bigger ones are refused.
const MAX_READ: u64 = 1 << 24;

/// The object of type `ty` at `address`.
fn read_object(ty: TypeRef, address: u64, ctx: &dyn EvalContext) -> Result<Value> {
    let size = ty.size().ok_or_else(|| {
        Error::Expression(format!("the size of type \"{}\" is not known", ty.name()))
    })?;
    if size > MAX_READ {
        return Err(Error::Expression(format!(
            "\"{}\" is too large to read ({size} bytes)",
            ty.name()
        )));
    }
    let mut bytes = vec![0; size as usize];
    ctx.read_memory(address, &mut bytes)?;
    Ok(make_typed(ty, bytes, Some(address), ctx))
}

/// A pointer of type `ty` (a pointer type) holding `address`.
fn typed_pointer(ty: TypeRef, address: u64, ctx: &dyn EvalContext) -> Value {
    make_typed(ty, address.to_le_bytes().to_vec(), None, ctx)
}

/// Arrays in memory become pointers to their first element, and
/// functions pointers to themselves, as in C.
fn decay(value: Value, ctx: &dyn EvalContext) -> Value {
    let Some(typed) = typed(&value) else {
        return value;
    };
    if let (true, Some(address)) = (is_function(&value), typed.address) {
        return typed_pointer(typed.ty.pointer_to(), address, ctx);
    }
    match (typed.ty.element(), typed.address) {
        (Some((element, _)), Some(address)) => typed_pointer(element.pointer_to(), address, ctx),
        _ => value,
    }
}

/// `base[index]`: array elements, or `*(pointer + index)`.
fn subscript(base: &Value, index: &Value, ctx: &dyn EvalContext) -> Result<Value> {
    if let Some(error) = optimized_out_error(base) {
        return Err(error);
    }
    if let Some((pointer, target)) = synthetic(base) {
        let size = pointer.ty.pointee().and_then(|p| p.size()).unwrap_or(0);
        let extra = i64::try_from(index_value(index)?.wrapping_mul(i128::from(size)))
            .map_err(|_| Error::Expression("array subscript out of range".into()))?;
        return synthetic_dereference(pointer, target, extra, ctx);
    }
    if let Some(typed) = typed(base) {
        if let Some((element, _)) = typed.ty.element() {
            let i = index_value(index)?;
            let size = element.size().unwrap_or(0);
            let start = i128::from(size) * i;
            let in_bytes = usize::try_from(start)
                .ok()
                .and_then(|s| typed.bytes.get(s..s + size as usize));
            let address = typed
                .address
                .map(|a| wrap(i128::from(a) + start, 8, false) as u64);
            return match (in_bytes, address) {
                (Some(bytes), address) => {
                    let known = known_part(typed, start as usize, bytes.len());
                    Ok(make_typed_known(
                        element,
                        bytes.to_vec(),
                        known,
                        address,
                        ctx,
                    ))
                }
                (None, Some(address)) => read_object(element, address, ctx),
                (None, None) => Err(Error::Expression(format!("no such vector element: {i}"))),
            };
        }
    }
    let base = decay(base.clone(), ctx);
    if !matches!(base.plain(), Value::Pointer { .. }) {
        return Err(Error::Expression(format!(
            "cannot subscript something of type \"{}\"",
            base.type_name()
        )));
    }
    let element = pointer_arithmetic(BinaryOp::Add, &base, index, ctx)?;
    dereference(&element, ctx)
}

/// gdb's `first@count`: `count` objects of `first`'s type in memory from
/// `first`'s address on, as one array (`*argv@argc`, `arr[2]@3`).
fn repeat(first: &Value, count: &Value, ctx: &dyn EvalContext) -> Result<Value> {
    let count = match operand(count)? {
        Operand::Int { value, .. } => value,
        _ => {
            return Err(Error::Expression(
                "the count after @ must be an integer".into(),
            ))
        }
    };
    if count < 1 {
        return Err(Error::Expression(format!(
            "invalid count {count} after @: it must be at least 1"
        )));
    }
    let in_memory = typed(first).filter(|t| t.synthetic.is_none());
    let Some((element, address)) = in_memory.and_then(|t| Some((&t.ty, t.address?))) else {
        return Err(Error::Expression(
            "only values in memory can be extended with @".into(),
        ));
    };
    if element.kind() == crate::symbols::TypeKind::Function {
        return Err(Error::Expression(
            "@ makes arrays of objects, not of functions".into(),
        ));
    }
    let size = element.size().ok_or_else(|| {
        Error::Expression(format!(
            "the size of type \"{}\" is not known",
            element.name()
        ))
    })?;
    let count = u64::try_from(count)
        .ok()
        .filter(|count| {
            count
                .checked_mul(size)
                .is_some_and(|total| total <= MAX_READ)
        })
        .ok_or_else(|| {
            Error::Expression(format!(
                "{count} objects of {size} bytes are more than the {MAX_READ} bytes read at once"
            ))
        })?;
    let array = element.array_of(count).ok_or_else(|| {
        Error::Expression(format!(
            "arrays made with @ nest at most {MAX_ARRAY_LAYERS} deep"
        ))
    })?;
    read_object(array, address, ctx)
}

/// The parts of one dimension of a slice, evaluated.
struct SliceBounds {
    first: Option<i128>,
    last: Option<i128>,
    stride: Option<i128>,
}

/// dbx's `base[first..last:stride]`, each slice after the first taking
/// the next dimension (`grid[0..1][1..2]`): the chosen elements with their
/// indexes, as gdb shows indexed arrays: `{[2] = 30, [3] = 40}`. A slice
/// is a value to show, not an operand of other operators.
fn slice(expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    let mut dimensions = Vec::new();
    let mut base = expr;
    while let Expr::Slice {
        base: inner,
        first,
        last,
        stride,
    } = base
    {
        let bound = |part: &Option<Box<Expr>>| -> Result<Option<i128>> {
            part.as_ref()
                .map(|part| index_value(&operand_of(part, ctx)?))
                .transpose()
        };
        dimensions.push(SliceBounds {
            first: bound(first)?,
            last: bound(last)?,
            stride: bound(stride)?,
        });
        base = inner;
    }
    dimensions.reverse();
    let base = operand_of(base, ctx)?;
    Ok(slice_dimensions(&base, &dimensions, ctx)?.0)
}

/// The slice of `base` by the first of `dimensions`, each element sliced
/// by the others, and the slice's type when its elements have one.
fn slice_dimensions(
    base: &Value,
    dimensions: &[SliceBounds],
    ctx: &dyn EvalContext,
) -> Result<(Value, Option<TypeRef>)> {
    let Some((bounds, inner)) = dimensions.split_first() else {
        return Ok((base.clone(), base.type_ref().cloned()));
    };
    let (first, last, stride) = slice_indexes(base, bounds)?;
    let count = (last - first) / stride + 1;
    let mut element_type = None;
    let mut parts = Vec::new();
    let mut index = first;
    while index <= last && parts.len() < ELEMENT_LIMIT {
        let element = match subscript(base, &make_integer(index, 8, true), ctx) {
            Ok(element) => {
                let (element, ty) = slice_dimensions(&element, inner, ctx)?;
                element_type = element_type.or(ty);
                element.into_plain()
            }
            Err(e) => Value::Unavailable(format!("error: {e}")),
        };
        parts.push((format!("[{index}]"), element));
        index += stride;
    }
    let items: Vec<String> = parts.iter().map(|(i, v)| format!("{i} = {v}")).collect();
    let more = if count > parts.len() as i128 {
        "..."
    } else {
        ""
    };
    let ty = element_type.and_then(|t| t.array_of(u64::try_from(count).ok()?));
    let type_name = match &ty {
        Some(ty) => ty.name(),
        None => format!(
            "{} [{count}]",
            parts.first().map_or("", |(_, v)| v.type_name())
        ),
    };
    let value = Value::Composite {
        type_name,
        text: format!("{{{}{more}}}", items.join(", ")),
        parts: Some(Box::new(Aggregate::Struct(parts))),
    };
    Ok((value, ty))
}

/// A slice's first and last index and its stride, the defaults filled in:
/// from 0, to an array's last element, every element.
fn slice_indexes(base: &Value, bounds: &SliceBounds) -> Result<(i128, i128, i128)> {
    let shown = base.type_name().to_string();
    let ty = typed(base).map(|t| &t.ty);
    let array_count = ty.and_then(TypeRef::element).map(|(_, count)| count);
    let is_pointer = matches!(base.plain(), Value::Pointer { .. }) || synthetic(base).is_some();
    if array_count.is_none() && !is_pointer {
        return Err(Error::Expression(format!(
            "cannot slice something of type \"{shown}\": only arrays and pointers"
        )));
    }
    let first = bounds.first.unwrap_or(0);
    let last = match (bounds.last, array_count) {
        (Some(last), _) => last,
        (None, Some(count)) if count > 0 => i128::from(count) - 1,
        _ => {
            return Err(Error::Expression(format!(
                "a slice of \"{shown}\" needs its last index (first..last)"
            )))
        }
    };
    let stride = bounds.stride.unwrap_or(1);
    if stride < 1 {
        return Err(Error::Expression(format!(
            "the stride of a slice must be at least 1, not {stride}"
        )));
    }
    if last < first {
        return Err(Error::Expression(format!(
            "empty slice: its last index, {last}, is below its first, {first}"
        )));
    }
    Ok((first, last, stride))
}

fn index_value(index: &Value) -> Result<i128> {
    match operand(index)? {
        Operand::Int { value, .. } => Ok(value),
        _ => Err(Error::Expression(
            "array subscript is not an integer".into(),
        )),
    }
}

/// `base.field` and `base->field`.
fn member(base: Value, field: &str, arrow: bool, ctx: &dyn EvalContext) -> Result<Value> {
    if let Some(error) = optimized_out_error(&base) {
        return Err(error);
    }
    let is_pointer = matches!(base.plain(), Value::Pointer { .. }) || synthetic(&base).is_some();
    let base = if arrow || is_pointer {
        // gdb lets `.` go through a pointer and `->` apply to a struct.
        if is_pointer {
            dereference(&base, ctx)?
        } else {
            base
        }
    } else {
        base
    };
    let Some(typed) = typed(&base).filter(|t| t.ty.kind() == crate::symbols::TypeKind::Struct)
    else {
        return Err(Error::Expression(format!(
            "attempt to extract a component of a value that is not a structure (type \"{}\")",
            base.type_name()
        )));
    };
    let Some(found) = typed.ty.member(field) else {
        return Err(Error::Expression(format!(
            "there is no member named {field} in \"{}\"",
            typed.ty.name()
        )));
    };
    if found.bitfield.is_some() {
        return Ok(typed
            .ty
            .decode_bitfield_member(&found, &typed.bytes, typed.known.as_deref()));
    }
    let size = found.ty.size().unwrap_or(0) as usize;
    let start = found.offset as usize;
    let address = typed.address.map(|a| a.wrapping_add(found.offset));
    match typed.bytes.get(start..start + size) {
        Some(bytes) => {
            let known = known_part(typed, start, size);
            Ok(make_typed_known(
                found.ty,
                bytes.to_vec(),
                known,
                address,
                ctx,
            ))
        }
        None => Err(Error::Expression(format!(
            "member {field} lies outside its structure"
        ))),
    }
}

/// `&value`: a pointer to an object in memory.
fn address_of(value: Value, ctx: &dyn EvalContext) -> Result<Value> {
    match typed(&value) {
        Some(Typed {
            ty,
            address: Some(address),
            ..
        }) => Ok(typed_pointer(ty.pointer_to(), *address, ctx)),
        _ => Err(Error::Expression(
            "attempt to take address of value not located in memory".into(),
        )),
    }
}

/// The program's type for a cast or `sizeof`: base types need no lookup;
/// others are found through the context or the program `hint` comes from.
fn resolve_type(target: &TypeName, hint: Option<&Value>, ctx: &dyn EvalContext) -> Option<TypeRef> {
    let mut ty = ctx
        .lookup_type(&target.base)
        .or_else(|| hint.and_then(typed).and_then(|t| t.ty.lookup(&target.base)))?;
    for _ in 0..target.pointers {
        ty = ty.pointer_to();
    }
    Some(ty)
}

/// `(TYPE) value`.
fn cast(target: &TypeName, value: Value, ctx: &dyn EvalContext) -> Result<Value> {
    // Base types convert without DWARF, with gdb's names for them.
    if let Some((size, kind)) = base_type(&target.base) {
        if target.pointers == 0 {
            return convert_to_base(&value, &target.base, size, kind);
        }
        if let Some(ty) = resolve_type(target, Some(&value), ctx) {
            return Ok(typed_pointer(ty, pointer_address(&value)?, ctx));
        }
        return Ok(Value::Pointer {
            address: pointer_address(&value)?,
            type_name: target.spelling(),
            detail: None,
        });
    }
    if target.base == "void" {
        if target.pointers == 0 {
            return Err(Error::Expression("cannot use a void value".into()));
        }
        return Ok(Value::Pointer {
            address: pointer_address(&value)?,
            type_name: target.spelling(),
            detail: None,
        });
    }
    let ty = resolve_type(target, Some(&value), ctx).ok_or_else(|| no_type(target))?;
    cast_to(ty, value, ctx)
}

fn pointer_address(value: &Value) -> Result<u64> {
    match operand(value)? {
        Operand::Int { value, .. } => Ok(wrap(value, 8, false) as u64),
        Operand::Pointer { address, .. } => Ok(address),
        Operand::Float { .. } => Err(Error::Expression(
            "invalid cast of a floating-point number to a pointer".into(),
        )),
    }
}

/// A cast to a DWARF type (typedefs, enums, pointers to structs...).
fn cast_to(ty: TypeRef, value: Value, ctx: &dyn EvalContext) -> Result<Value> {
    use crate::symbols::TypeKind;
    match ty.kind() {
        TypeKind::Pointer => Ok(typed_pointer(ty, pointer_address(&value)?, ctx)),
        TypeKind::Scalar => {
            let size = ty.size().unwrap_or(0) as usize;
            let bytes = if ty.is_float() {
                let number = operand_float(&value)?;
                match size {
                    4 => (number as f32).to_le_bytes().to_vec(),
                    8 => number.to_le_bytes().to_vec(),
                    _ => {
                        return Err(Error::Expression(format!(
                            "casts to \"{}\" are not supported",
                            ty.name()
                        )))
                    }
                }
            } else {
                let integer = match operand(&value)? {
                    Operand::Int { value, .. } => value,
                    Operand::Pointer { address, .. } => i128::from(address),
                    Operand::Float { value, .. } => value as i128,
                };
                let mut bytes = integer.to_le_bytes().to_vec();
                bytes.truncate(size.min(16));
                bytes
            };
            Ok(make_typed(ty, bytes, None, ctx))
        }
        _ => match typed(&value) {
            Some(t) if t.ty.same_as(&ty) => Ok(value),
            _ => Err(Error::Expression(format!(
                "invalid cast of \"{}\" to \"{}\"",
                value.type_name(),
                ty.name()
            ))),
        },
    }
}

fn operand_float(value: &Value) -> Result<f64> {
    Ok(match operand(value)? {
        Operand::Float { value, .. } => value,
        Operand::Int { value, .. } => value as f64,
        Operand::Pointer { address, .. } => address as f64,
    })
}

/// Numeric conversion to a C base type named as gdb names it.
fn convert_to_base(value: &Value, name: &str, size: u8, kind: BaseKind) -> Result<Value> {
    let name = canonical_base(name);
    let integer = || -> Result<i128> {
        Ok(match operand(value)? {
            Operand::Int { value, .. } => value,
            Operand::Pointer { address, .. } => i128::from(address),
            // C truncates toward zero.
            Operand::Float { value, .. } => value as i128,
        })
    };
    Ok(match kind {
        BaseKind::Float => make_float(operand_float(value)?, size, &name),
        BaseKind::Bool => Value::Bool(truth(value)?),
        BaseKind::Char => {
            let unsigned = name.starts_with("unsigned");
            Value::Char {
                value: wrap(integer()?, 1, !unsigned) as i64,
                size: 1,
                type_name: name,
            }
        }
        BaseKind::Signed | BaseKind::Unsigned => Value::Integer {
            value: wrap(integer()?, size, kind == BaseKind::Signed),
            size,
            signed: kind == BaseKind::Signed,
            type_name: name,
        },
        BaseKind::Pointer => Value::Pointer {
            address: wrap(integer()?, 8, false) as u64,
            type_name: name,
            detail: None,
        },
    })
}

/// gdb's spelling of a base type: `long` for `long int`, `unsigned int`
/// for `unsigned`.
fn canonical_base(name: &str) -> String {
    match name.trim() {
        "long int" | "signed long" | "long long" | "long long int" | "signed long int" => "long",
        "unsigned" => "unsigned int",
        "long unsigned int"
        | "unsigned long int"
        | "unsigned long long"
        | "long long unsigned int" => "unsigned long",
        "short int" | "signed short" => "short",
        "short unsigned int" | "unsigned short int" => "unsigned short",
        "signed" | "signed int" => "int",
        "_Bool" => "bool",
        other => other,
    }
    .to_string()
}

// ---------------------------------------------------------------- assignment

/// `TARGET = VALUE` (dbx `assign`, gdb `set var`): evaluates `target` as an
/// lvalue (an object in memory, a variable in a register, a bitfield, or
/// `$reg`), converts `value` to its type as C assignment does, writes it
/// through the context and returns the new value as read back.
pub fn assign(target: &Expr, value: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    assign_inner(target, value, ctx).map_err(|e| suggest(e, ctx))
}

fn assign_inner(target: &Expr, value: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    if let Expr::Register(name) = target {
        if name.parse::<usize>().is_err() {
            return assign_register(name, value, ctx);
        }
    }
    if let Expr::Member { base, field, arrow } = target {
        if let Some(done) = assign_bitfield(base, field, *arrow, value, ctx)? {
            return Ok(done);
        }
    }
    let place = eval(target, ctx)?;
    let shown = target_text(target);
    let typed = match &place {
        _ if matches!(place.plain(), Value::OptimizedOut) => {
            return Err(cannot_assign(&shown, "it is optimized out"));
        }
        _ if synthetic(&place).is_some() => {
            return Err(cannot_assign(&shown, "it is a synthetic pointer"));
        }
        Value::Unavailable(why) => {
            return Err(cannot_assign(
                &shown,
                &format!("it is not available ({why})"),
            ));
        }
        Value::Typed(typed) if typed.address.is_some() || typed.register.is_some() => typed,
        _ => return Err(cannot_assign(&shown, "not an lvalue")),
    };
    let new = converted(&typed.ty, value, ctx)?;
    let bytes = typed_bytes(&new, &typed.ty)?;
    match (typed.address, typed.register) {
        (Some(address), _) => {
            ctx.write_memory(address, &bytes)?;
            read_object(typed.ty.clone(), address, ctx).map(Value::into_plain)
        }
        (None, Some(regno)) => {
            let name = crate::regs::DWARF_NAMES
                .get(usize::from(regno))
                .ok_or_else(|| {
                    cannot_assign(&shown, &format!("it is in DWARF register {regno}"))
                })?;
            let mut raw = [0u8; 8];
            let n = bytes.len().min(8);
            raw[..n].copy_from_slice(&bytes[..n]);
            ctx.write_register(name, u64::from_le_bytes(raw))
                .map_err(|e| cannot_assign(&shown, &format!("it lives in register {name}: {e}")))?;
            Ok(make_typed(typed.ty.clone(), bytes, None, ctx).into_plain())
        }
        (None, None) => Err(cannot_assign(&shown, "not an lvalue")),
    }
}

fn cannot_assign(target: &str, why: &str) -> Error {
    Error::Expression(format!("cannot assign to {target}: {why}"))
}

/// The target as the user wrote it, near enough for messages.
fn target_text(target: &Expr) -> String {
    match target {
        Expr::Name(name) => name.clone(),
        Expr::Register(name) => format!("${name}"),
        Expr::Literal(value) => value.to_string(),
        Expr::Member { base, field, arrow } => {
            let op = if *arrow { "->" } else { "." };
            format!("{}{op}{field}", target_text(base))
        }
        Expr::Index { base, index } => format!("{}[{}]", target_text(base), target_text(index)),
        Expr::Unary {
            op: UnaryOp::Deref,
            operand,
        } => format!("*{}", target_text(operand)),
        _ => "the expression".into(),
    }
}

/// `value` evaluated and converted to `ty`: numbers across integer and
/// floating types, integers to pointers, enumerators by name.
fn converted(ty: &TypeRef, value: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    if let Expr::Name(name) = value {
        if let Some(number) = ty.enumerator(name) {
            let mut bytes = number.to_le_bytes().to_vec();
            bytes.truncate(ty.size().unwrap_or(4) as usize);
            return Ok(make_typed(ty.clone(), bytes, None, ctx));
        }
    }
    let value = decay(eval(value, ctx)?, ctx);
    cast_to(ty.clone(), value, ctx)
}

/// The bytes to store for a converted value of type `ty`.
fn typed_bytes(value: &Value, ty: &TypeRef) -> Result<Vec<u8>> {
    let size = ty.size().unwrap_or(0) as usize;
    match typed(value) {
        Some(t) if t.bytes.len() == size => Ok(t.bytes.clone()),
        _ => Err(Error::Expression(format!(
            "cannot convert \"{}\" to \"{}\"",
            value.type_name(),
            ty.name()
        ))),
    }
}

/// `s.bits = v` for a bitfield member: read, change the member's bits,
/// write back. `None` when the member is no bitfield.
fn assign_bitfield(
    base: &Expr,
    field: &str,
    arrow: bool,
    value: &Expr,
    ctx: &dyn EvalContext,
) -> Result<Option<Value>> {
    let mut object = eval(base, ctx)?;
    if arrow || matches!(object.plain(), Value::Pointer { .. }) {
        object = dereference(&object, ctx)?;
    }
    let Some(structure) = typed(&object) else {
        return Ok(None);
    };
    let Some(member) = structure.ty.member(field) else {
        return Ok(None);
    };
    let Some(bitfield) = member.bitfield else {
        return Ok(None);
    };
    let shown = format!(
        "{}{}{field}",
        target_text(base),
        if arrow { "->" } else { "." }
    );
    let Some(address) = structure.address else {
        return Err(cannot_assign(&shown, "its structure is not in memory"));
    };
    // Converted to the member's type as C assignment does (an enum's
    // enumerators by name, a `_Bool` to 0 or 1), then cut to its bits.
    let new = match operand(&converted(&member.ty, value, ctx)?)? {
        Operand::Int { value, .. } => value,
        Operand::Float { value, .. } => value as i128,
        Operand::Pointer { address, .. } => i128::from(address),
    };
    let (Some(range), Some(bytes)) = (
        bitfield.byte_range(),
        bitfield.insert(&structure.bytes, new as u128),
    ) else {
        return Err(cannot_assign(
            &shown,
            "the bitfield lies outside its structure",
        ));
    };
    ctx.write_memory(address + range.start as u64, &bytes)?;
    let reread = read_object(structure.ty.clone(), address, ctx)?;
    member_value(reread, field, ctx).map(Some)
}

fn member_value(object: Value, field: &str, ctx: &dyn EvalContext) -> Result<Value> {
    member(object, field, false, ctx).map(Value::into_plain)
}

/// `$rax = VALUE`: the selected thread's register (innermost frame).
fn assign_register(name: &str, value: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    let raw = match operand(&eval(value, ctx)?)? {
        Operand::Int { value, .. } => value as u64,
        Operand::Pointer { address, .. } => address,
        Operand::Float { value, .. } => value as i64 as u64,
    };
    ctx.write_register(name, raw)?;
    ctx.register(name)
        .map(Value::into_plain)
        .ok_or_else(|| Error::Expression(format!("no register \"${name}\"")))
}

/// Evaluates an expression that may be a call of a void function (what
/// `print` and `call` take): `None` for a void result.
pub fn evaluate_statement(expr: &Expr, ctx: &dyn EvalContext) -> Result<Option<Value>> {
    match expr {
        Expr::Call { .. } => call(expr, ctx)
            .map(|v| v.map(Value::into_plain))
            .map_err(|e| suggest(e, ctx)),
        other => evaluate(other, ctx).map(Some),
    }
}

/// `FUNC(ARGS)`: the arguments left to right, string literals kept as
/// text to be copied into the program, then the call.
fn call(expr: &Expr, ctx: &dyn EvalContext) -> Result<Option<Value>> {
    let Expr::Call { function, args } = expr else {
        return evaluate(expr, ctx).map(Some);
    };
    let args = args
        .iter()
        .map(|arg| match arg {
            Expr::String(text) => Ok(Argument::String(text.as_bytes().to_vec())),
            other => evaluate(other, ctx).map(Argument::Value),
        })
        .collect::<Result<Vec<_>>>()?;
    ctx.call(function, &args)
}

/// A value reduced to what arithmetic needs.
#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Int {
        value: i128,
        size: u8,
        signed: bool,
    },
    Float {
        value: f64,
        size: u8,
        type_name: String,
    },
    Pointer {
        address: u64,
        type_name: String,
    },
}

/// The operand after C's integer promotions (everything narrower than
/// int becomes int).
fn operand(value: &Value) -> Result<Operand> {
    let int = |value: i128| Operand::Int {
        value,
        size: 4,
        signed: true,
    };
    Ok(match value {
        Value::Typed(typed) => return operand(&typed.value),
        Value::Integer {
            value,
            size,
            signed,
            ..
        } if *size >= 4 => Operand::Int {
            value: *value,
            size: *size,
            signed: *signed,
        },
        Value::Integer { value, .. } => int(*value),
        Value::Char { value, .. } => int(i128::from(*value)),
        Value::Bool(b) => int(i128::from(*b)),
        Value::Enum { value, .. } if i32::try_from(*value).is_ok() => int(i128::from(*value)),
        Value::Enum { value, .. } => Operand::Int {
            value: i128::from(*value),
            size: 8,
            signed: true,
        },
        Value::Float {
            value,
            size,
            type_name,
        } => Operand::Float {
            value: *value,
            size: *size,
            type_name: type_name.clone(),
        },
        Value::Pointer {
            address, type_name, ..
        } => Operand::Pointer {
            address: *address,
            type_name: type_name.clone(),
        },
        Value::OptimizedOut => {
            return Err(Error::Expression("value has been optimized out".into()))
        }
        Value::Unavailable(why) => {
            return Err(Error::Expression(format!("value is not available: {why}")))
        }
        Value::Composite { type_name, .. } => {
            return Err(Error::Expression(format!(
                "arithmetic on a value of type \"{type_name}\" is not supported"
            )))
        }
    })
}

fn truth(value: &Value) -> Result<bool> {
    operand(value)?;
    value
        .is_true()
        .ok_or_else(|| Error::Expression("value has no truth value".into()))
}

/// The canonical LP64 name of an integer type.
fn integer_type_name(size: u8, signed: bool) -> &'static str {
    match (size, signed) {
        (1, true) => "signed char",
        (1, false) => "unsigned char",
        (2, true) => "short",
        (2, false) => "unsigned short",
        (4, true) => "int",
        (4, false) => "unsigned int",
        (8, true) => "long",
        (8, false) => "unsigned long",
        (_, true) => "__int128",
        (_, false) => "unsigned __int128",
    }
}

/// `value` converted to an integer of `size` bytes, as C conversion does:
/// keep the low bits, then sign-extend if the type is signed.
fn wrap(value: i128, size: u8, signed: bool) -> i128 {
    let bits = u32::from(size) * 8;
    if bits == 0 || bits >= 128 {
        return value;
    }
    let low = value & ((1i128 << bits) - 1);
    if signed && low >= 1i128 << (bits - 1) {
        low - (1i128 << bits)
    } else {
        low
    }
}

fn make_integer(value: i128, size: u8, signed: bool) -> Value {
    Value::Integer {
        value: wrap(value, size, signed),
        size,
        signed,
        type_name: integer_type_name(size, signed).to_string(),
    }
}

fn make_float(value: f64, size: u8, type_name: &str) -> Value {
    Value::Float {
        value: if size == 4 {
            value as f32 as f64
        } else {
            value
        },
        size,
        type_name: type_name.to_string(),
    }
}

fn unary(op: UnaryOp, operand_expr: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    let value = operand_of(operand_expr, ctx)?;
    match op {
        UnaryOp::Not => Ok(Value::int(i128::from(!truth(&value)?))),
        UnaryOp::Deref => dereference(&decay(value, ctx), ctx),
        UnaryOp::AddressOf => address_of(value, ctx),
        UnaryOp::Plus | UnaryOp::Negate | UnaryOp::Complement => match (op, operand(&value)?) {
            (
                UnaryOp::Plus,
                Operand::Int {
                    value,
                    size,
                    signed,
                },
            ) => Ok(make_integer(value, size, signed)),
            (
                UnaryOp::Negate,
                Operand::Int {
                    value,
                    size,
                    signed,
                },
            ) => Ok(make_integer(value.wrapping_neg(), size, signed)),
            (
                UnaryOp::Complement,
                Operand::Int {
                    value,
                    size,
                    signed,
                },
            ) => Ok(make_integer(!value, size, signed)),
            (
                UnaryOp::Plus,
                Operand::Float {
                    value,
                    size,
                    type_name,
                },
            ) => Ok(make_float(value, size, &type_name)),
            (
                UnaryOp::Negate,
                Operand::Float {
                    value,
                    size,
                    type_name,
                },
            ) => Ok(make_float(-value, size, &type_name)),
            _ => Err(Error::Expression(format!(
                "invalid operand of type \"{}\" to unary {}",
                value.type_name(),
                match op {
                    UnaryOp::Plus => "+",
                    UnaryOp::Negate => "-",
                    _ => "~",
                }
            ))),
        },
    }
}

/// A chain of binary operators, left to right, in a loop. Its first
/// operand may be a chain of tighter operators (`a * b + c`), whose first
/// may be one too: they are walked down without recursing.
fn chain(first: &Expr, rest: &[(BinaryOp, Expr)], ctx: &dyn EvalContext) -> Result<Value> {
    let mut chains = vec![rest];
    let mut innermost = first;
    while let Expr::Binary { first, rest } = innermost {
        chains.push(rest);
        innermost = first;
    }
    let mut value = operand_of(innermost, ctx)?;
    for rest in chains.iter().rev() {
        for (op, right) in rest.iter() {
            value = binary(*op, value, right, ctx)?;
        }
    }
    Ok(value)
}

/// `left OP right` with `left` already evaluated.
fn binary(op: BinaryOp, left: Value, right: &Expr, ctx: &dyn EvalContext) -> Result<Value> {
    match op {
        // && and || evaluate their right side only when needed.
        BinaryOp::And | BinaryOp::Or => {
            let left = truth(&left)?;
            if left == (op == BinaryOp::Or) {
                return Ok(Value::int(i128::from(left)));
            }
            Ok(Value::int(i128::from(truth(&operand_of(right, ctx)?)?)))
        }
        BinaryOp::Repeat => repeat(&left, &operand_of(right, ctx)?, ctx),
        _ => arithmetic(op, left, operand_of(right, ctx)?, ctx),
    }
}

/// The arithmetic, bitwise and comparison operators.
fn arithmetic(op: BinaryOp, left: Value, right: Value, ctx: &dyn EvalContext) -> Result<Value> {
    let left = decay(left, ctx);
    let right = decay(right, ctx);
    if let Some(moved) = synthetic_arithmetic(op, &left, &right)? {
        return Ok(moved);
    }
    match (operand(&left)?, operand(&right)?) {
        (Operand::Pointer { .. }, _) | (_, Operand::Pointer { .. }) => {
            pointer_arithmetic(op, &left, &right, ctx)
        }
        (a @ Operand::Float { .. }, b) | (a, b @ Operand::Float { .. }) => {
            float_arithmetic(op, a, b)
        }
        (
            Operand::Int {
                value: a,
                size: a_size,
                signed: a_signed,
            },
            Operand::Int {
                value: b,
                size: b_size,
                signed: b_signed,
            },
        ) => {
            if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
                return Ok(shift(op, a, a_size, a_signed, b));
            }
            // The usual arithmetic conversions: the wider type wins, and at
            // equal width unsigned wins.
            let size = a_size.max(b_size);
            let signed = match a_size.cmp(&b_size) {
                std::cmp::Ordering::Equal => a_signed && b_signed,
                std::cmp::Ordering::Greater => a_signed,
                std::cmp::Ordering::Less => b_signed,
            };
            integer_arithmetic(
                op,
                wrap(a, size, signed),
                wrap(b, size, signed),
                size,
                signed,
            )
        }
    }
}

fn integer_arithmetic(op: BinaryOp, a: i128, b: i128, size: u8, signed: bool) -> Result<Value> {
    use BinaryOp::*;
    let flag = |b: bool| Ok(Value::int(i128::from(b)));
    let value = match op {
        Add => a.wrapping_add(b),
        Sub => a.wrapping_sub(b),
        Mul => a.wrapping_mul(b),
        Div | Rem if b == 0 => return Err(Error::Expression("division by zero".into())),
        Div => a.wrapping_div(b),
        Rem => a.wrapping_rem(b),
        BitAnd => a & b,
        BitOr => a | b,
        BitXor => a ^ b,
        Lt => return flag(a < b),
        Le => return flag(a <= b),
        Gt => return flag(a > b),
        Ge => return flag(a >= b),
        Eq => return flag(a == b),
        Ne => return flag(a != b),
        Shl | Shr | And | Or | Repeat => unreachable!("handled by the caller"),
    };
    Ok(make_integer(value, size, signed))
}

/// Shifts have the type of the (promoted) left operand; counts that are
/// negative or not less than its width give 0, as gdb does.
fn shift(op: BinaryOp, value: i128, size: u8, signed: bool, count: i128) -> Value {
    let bits = i128::from(size) * 8;
    if !(0..bits).contains(&count) {
        return make_integer(0, size, signed);
    }
    let result = if op == BinaryOp::Shl {
        value << count
    } else {
        // Right shift of a signed value is arithmetic, of unsigned logical;
        // `value` is already sign-correct for its type.
        value >> count
    };
    make_integer(result, size, signed)
}

fn float_arithmetic(op: BinaryOp, a: Operand, b: Operand) -> Result<Value> {
    use BinaryOp::*;
    // The result has the widest floating type among the operands.
    let (mut size, mut type_name) = (0u8, "double".to_string());
    let mut number = |o: Operand| match o {
        Operand::Float {
            value,
            size: s,
            type_name: t,
        } => {
            if s > size {
                (size, type_name) = (s, t);
            }
            value
        }
        Operand::Int { value, .. } => value as f64,
        Operand::Pointer { address, .. } => address as f64,
    };
    let (x, y) = (number(a), number(b));
    let flag = |b: bool| Ok(Value::int(i128::from(b)));
    let value = match op {
        Add => x + y,
        Sub => x - y,
        Mul => x * y,
        Div => x / y,
        Lt => return flag(x < y),
        Le => return flag(x <= y),
        Gt => return flag(x > y),
        Ge => return flag(x >= y),
        Eq => return flag(x == y),
        Ne => return flag(x != y),
        Rem | Shl | Shr | BitAnd | BitOr | BitXor | And | Or | Repeat => {
            return Err(Error::Expression(
                "integer-only operation on a floating-point number".into(),
            ))
        }
    };
    Ok(make_float(value, size, &type_name))
}

/// `p + n`, `n + p`, `p - n`, `p - q`, and comparisons involving pointers.
fn pointer_arithmetic(
    op: BinaryOp,
    left: &Value,
    right: &Value,
    ctx: &dyn EvalContext,
) -> Result<Value> {
    use BinaryOp::*;
    let (a, b) = (operand(left)?, operand(right)?);
    let address = |o: &Operand| match o {
        Operand::Pointer { address, .. } => Ok(i128::from(*address)),
        Operand::Int { value, .. } => Ok(*value),
        Operand::Float { .. } => Err(Error::Expression(
            "invalid operands: pointer and floating-point number".into(),
        )),
    };
    let (x, y) = (address(&a)?, address(&b)?);
    let flag = |b: bool| Ok(Value::int(i128::from(b)));
    match (op, &a, &b) {
        (Eq, ..) => flag(x == y),
        (Ne, ..) => flag(x != y),
        (Lt, ..) => flag(x < y),
        (Le, ..) => flag(x <= y),
        (Gt, ..) => flag(x > y),
        (Ge, ..) => flag(x >= y),
        (Add | Sub, Operand::Pointer { type_name, .. }, Operand::Int { value, .. })
        | (Add, Operand::Int { value, .. }, Operand::Pointer { type_name, .. }) => {
            let pointer_type = typed(left)
                .filter(|_| matches!(a, Operand::Pointer { .. }))
                .or(typed(right).filter(|_| matches!(b, Operand::Pointer { .. })))
                .map(|t| t.ty.clone());
            let scale = match &pointer_type {
                Some(ty) => typed_pointee_size(ty)?,
                None => pointee_size(type_name)?,
            };
            let offset = value.wrapping_mul(i128::from(scale));
            let base = if matches!(a, Operand::Pointer { .. }) {
                x
            } else {
                y
            };
            let target = if op == Sub {
                base.wrapping_sub(offset)
            } else {
                base.wrapping_add(offset)
            };
            let address = wrap(target, 8, false) as u64;
            if let Some(ty) = pointer_type {
                return Ok(typed_pointer(ty, address, ctx));
            }
            Ok(Value::Pointer {
                address,
                type_name: type_name.clone(),
                detail: None,
            })
        }
        (Sub, Operand::Pointer { type_name, .. }, Operand::Pointer { .. }) => {
            let size = match typed(left) {
                Some(t) => typed_pointee_size(&t.ty)?,
                None => pointee_size(type_name)?,
            };
            let scale = i128::from(size.max(1));
            Ok(make_integer((x - y) / scale, 8, true))
        }
        _ => Err(Error::Expression(format!(
            "invalid operands of types \"{}\" and \"{}\"",
            left.type_name(),
            right.type_name()
        ))),
    }
}

/// The step of a typed pointer: its pointee's size, 1 for void and
/// functions as in GNU C.
fn typed_pointee_size(pointer: &TypeRef) -> Result<u64> {
    use crate::symbols::TypeKind;
    let pointee = pointer
        .pointee()
        .ok_or_else(|| Error::Expression(format!("\"{}\" is not a pointer", pointer.name())))?;
    match pointee.kind() {
        TypeKind::Void | TypeKind::Function => Ok(1),
        _ => pointee.size().ok_or_else(|| {
            Error::Expression(format!(
                "arithmetic on a pointer to incomplete type \"{}\"",
                pointee.name()
            ))
        }),
    }
}

/// The type a pointer type points to: `"int *"` gives `"int"`.
fn pointee(type_name: &str) -> Option<&str> {
    type_name.trim_end().strip_suffix('*').map(str::trim_end)
}

/// The size of what a pointer points to, for the base types we know.
fn pointee_size(pointer_type: &str) -> Result<u64> {
    // gdb, like GNU C, steps void and function pointers by bytes.
    if pointer_type.contains("(*)") {
        return Ok(1);
    }
    let target = pointee(pointer_type).unwrap_or("");
    if target == "void" {
        return Ok(1);
    }
    base_type(target)
        .map(|(size, _)| u64::from(size))
        .ok_or_else(|| {
            Error::Expression(format!(
                "arithmetic on a pointer to \"{target}\" is not supported yet"
            ))
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BaseKind {
    Signed,
    Unsigned,
    Char,
    Bool,
    Float,
    Pointer,
}

/// Size and kind of a C base type spelled as gdb spells it.
fn base_type(name: &str) -> Option<(u8, BaseKind)> {
    use BaseKind::*;
    let name = name
        .trim()
        .trim_start_matches("const ")
        .trim_start_matches("volatile ");
    if name.ends_with('*') {
        return Some((8, Pointer));
    }
    let name = canonical_base(name);
    Some(match name.as_str() {
        "char" | "signed char" => (1, Char),
        "unsigned char" => (1, Char),
        "_Bool" | "bool" => (1, Bool),
        "short" | "short int" | "int16_t" => (2, Signed),
        "unsigned short" | "short unsigned int" | "uint16_t" => (2, Unsigned),
        "int" | "int32_t" => (4, Signed),
        "unsigned int" | "unsigned" | "uint32_t" => (4, Unsigned),
        "long" | "long int" | "long long" | "long long int" | "int64_t" | "ssize_t" => (8, Signed),
        "unsigned long"
        | "long unsigned int"
        | "unsigned long long"
        | "long long unsigned int"
        | "uint64_t"
        | "size_t" => (8, Unsigned),
        "float" => (4, Float),
        "long double" => (16, Float),
        "double" => (8, Float),
        _ => return None,
    })
}

/// `*p` for pointers to base types: reads the pointee from memory.
fn dereference(value: &Value, ctx: &dyn EvalContext) -> Result<Value> {
    if let Some(error) = optimized_out_error(value) {
        return Err(error);
    }
    if let Some((pointer, target)) = synthetic(value) {
        return synthetic_dereference(pointer, target, 0, ctx);
    }
    if let Some(typed) = typed(value) {
        if let Some(pointee) = typed.ty.pointee() {
            use crate::symbols::TypeKind;
            let address = value.as_integer().unwrap_or(0) as u64;
            return match pointee.kind() {
                TypeKind::Void => Err(Error::Expression(
                    "attempt to take contents of a non-pointer value".into(),
                )),
                TypeKind::Function => Ok(function_value(
                    Some(pointee),
                    address,
                    ctx.symbol_at(address),
                )),
                _ => read_object(pointee, address, ctx),
            };
        }
    }
    let value = value.plain();
    let Value::Pointer {
        address, type_name, ..
    } = value
    else {
        return Err(Error::Expression(format!(
            "attempt to take contents of a non-pointer value of type \"{}\"",
            value.type_name()
        )));
    };
    let target = pointee(type_name).unwrap_or("");
    let Some((size, kind)) = base_type(target).filter(|(size, _)| *size <= 8) else {
        return Err(Error::Expression(format!(
            "dereferencing a pointer to \"{target}\" is not supported yet"
        )));
    };
    let mut bytes = [0u8; 8];
    let bytes = &mut bytes[..usize::from(size)];
    ctx.read_memory(*address, bytes)?;
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    let unsigned = u64::from_le_bytes(raw);
    let signed = wrap(i128::from(unsigned), size, true);
    let type_name = target.to_string();
    Ok(match kind {
        BaseKind::Char if target.starts_with("unsigned") => Value::Char {
            value: unsigned as i64,
            size,
            type_name,
        },
        BaseKind::Char => Value::Char {
            value: signed as i64,
            size,
            type_name,
        },
        BaseKind::Bool => Value::Bool(unsigned != 0),
        BaseKind::Signed => Value::Integer {
            value: signed,
            size,
            signed: true,
            type_name,
        },
        BaseKind::Unsigned => Value::Integer {
            value: i128::from(unsigned),
            size,
            signed: false,
            type_name,
        },
        BaseKind::Float if size == 4 => {
            make_float(f64::from(f32::from_bits(unsigned as u32)), 4, &type_name)
        }
        BaseKind::Float => make_float(f64::from_bits(unsigned), 8, &type_name),
        BaseKind::Pointer => Value::Pointer {
            address: unsigned,
            type_name,
            detail: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Variables by name, a few registers, and memory from 0x1000 on.
    struct Mock {
        variables: HashMap<&'static str, Value>,
        memory: Vec<u8>,
    }

    const MEMORY: u64 = 0x1000;

    impl EvalContext for Mock {
        /// `sum(...)` adds its integer arguments; `len(s)` measures a
        /// string literal; `nothing()` is void.
        fn call(&self, function: &str, args: &[Argument]) -> Result<Option<Value>> {
            match function {
                "sum" => {
                    let mut total = 0;
                    for arg in args {
                        let Argument::Value(v) = arg else {
                            return Err(Error::Expression("a string".into()));
                        };
                        total += v.as_integer().unwrap_or(0);
                    }
                    Ok(Some(Value::int(total)))
                }
                "len" => match args {
                    [Argument::String(text)] => Ok(Some(Value::int(text.len() as i128))),
                    _ => Err(Error::Expression("len takes a string".into())),
                },
                "nothing" => Ok(None),
                other => Err(Error::NoSuchFunction(other.into())),
            }
        }

        fn variable(&self, name: &str) -> Result<Value> {
            self.variables
                .get(name)
                .cloned()
                .ok_or_else(|| Error::NoSuchSymbol(name.to_string()))
        }

        fn register(&self, name: &str) -> Option<Value> {
            match name {
                "rip" | "pc" => Some(pointer(0x401136, "void (*)()")),
                "rsp" | "sp" => Some(pointer(0x7ffe_0000, "void *")),
                "eax" => Some(integer(7, 4, true, "int")),
                _ => None,
            }
        }

        fn visible_names(&self) -> Vec<String> {
            self.variables.keys().map(|k| k.to_string()).collect()
        }

        fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
            let start = addr.checked_sub(MEMORY).ok_or(Error::Memory(addr))? as usize;
            let bytes = self
                .memory
                .get(start..start + buf.len())
                .ok_or(Error::Memory(addr))?;
            buf.copy_from_slice(bytes);
            Ok(())
        }
    }

    fn integer(value: i128, size: u8, signed: bool, type_name: &str) -> Value {
        Value::Integer {
            value,
            size,
            signed,
            type_name: type_name.into(),
        }
    }

    fn pointer(address: u64, type_name: &str) -> Value {
        Value::Pointer {
            address,
            type_name: type_name.into(),
            detail: None,
        }
    }

    fn mock() -> Mock {
        // Memory: int[3] {10, 20, 30} at 0x1000, "hi\0" at 0x100c,
        // double 2.5 at 0x1010, a pointer to 0x1000 at 0x1018.
        let mut memory = Vec::new();
        for i in [10i32, 20, 30] {
            memory.extend(i.to_le_bytes());
        }
        memory.extend(b"hi\0\0");
        memory.extend(2.5f64.to_le_bytes());
        memory.extend(MEMORY.to_le_bytes());
        let variables = HashMap::from([
            ("x", Value::int(3)),
            ("l", integer(-5, 8, true, "long")),
            (
                "uc",
                Value::Char {
                    value: 200,
                    size: 1,
                    type_name: "unsigned char".into(),
                },
            ),
            (
                "c",
                Value::Char {
                    value: 97,
                    size: 1,
                    type_name: "char".into(),
                },
            ),
            ("s", integer(-2, 2, true, "short")),
            ("u", integer(1, 4, false, "unsigned int")),
            (
                "d",
                Value::Float {
                    value: 2.5,
                    size: 8,
                    type_name: "double".into(),
                },
            ),
            (
                "f",
                Value::Float {
                    value: 0.5,
                    size: 4,
                    type_name: "float".into(),
                },
            ),
            ("b", Value::Bool(true)),
            (
                "e",
                Value::Enum {
                    value: 2,
                    name: Some("GREEN".into()),
                    type_name: "enum color".into(),
                },
            ),
            ("p", pointer(MEMORY, "int *")),
            ("q", pointer(MEMORY + 8, "int *")),
            ("cp", pointer(MEMORY + 12, "char *")),
            ("dp", pointer(MEMORY + 16, "double *")),
            ("pp", pointer(MEMORY + 24, "int **")),
            ("vp", pointer(MEMORY, "void *")),
            ("sp", pointer(MEMORY, "struct node *")),
            ("bad", pointer(0x10, "int *")),
            ("gone", Value::OptimizedOut),
            (
                "arr",
                Value::Composite {
                    type_name: "int [3]".into(),
                    text: "{10, 20, 30}".into(),
                    parts: None,
                },
            ),
            ("ns::g", Value::int(42)),
        ]);
        Mock { variables, memory }
    }

    fn eval(text: &str) -> Result<Value> {
        evaluate(&parse(text)?, &mock())
    }

    /// Value and type name, as `print` and `whatis` would show them.
    fn show(text: &str) -> (String, String) {
        let value = eval(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        (value.to_string(), value.type_name().to_string())
    }

    fn value(text: &str) -> String {
        show(text).0
    }

    fn error(text: &str) -> String {
        match eval(text) {
            Ok(v) => panic!("{text} gave {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn precedence_and_associativity() {
        for (text, expected) in [
            ("1 + 2 * 3", "7"),
            ("(1 + 2) * 3", "9"),
            ("1 - 2 - 3", "-4"),
            ("2 * 3 % 4", "2"),
            ("1 << 2 + 1", "8"),
            ("1 < 2 == 1", "1"),
            ("1 | 2 ^ 3 & 1", "3"),
            ("0 ? 1 : 0 ? 2 : 3", "3"),
            ("1 ? 2 : 3 + 4", "2"),
            ("- -3", "3"),
            ("!0 + !5", "1"),
            ("~0", "-1"),
            ("-x * 2", "-6"),
            ("+x", "3"),
        ] {
            assert_eq!(value(text), expected, "{text}");
        }
    }

    #[test]
    fn the_tree_has_the_expected_shape() {
        let expr = parse("a->b[1].c").unwrap();
        let Expr::Member { base, field, arrow } = expr else {
            panic!("not a member")
        };
        assert_eq!((field.as_str(), arrow), ("c", false));
        let Expr::Index { base, index } = *base else {
            panic!("not an index")
        };
        assert_eq!(*index, Expr::Literal(Value::int(1)));
        assert_eq!(
            *base,
            Expr::Member {
                base: Box::new(Expr::Name("a".into())),
                field: "b".into(),
                arrow: true
            }
        );
        assert_eq!(parse("$rip").unwrap(), Expr::Register("rip".into()));
        assert_eq!(parse("ns::g").unwrap(), Expr::Name("ns::g".into()));
        assert_eq!(parse(r#""a\tb""#).unwrap(), Expr::String("a\tb".into()));
    }

    #[test]
    fn scopes_and_tuple_fields_lex_as_names() {
        let member = |base: Expr, field: &str| Expr::Member {
            base: Box::new(base),
            field: field.into(),
            arrow: false,
        };
        let name = |n: &str| Expr::Name(n.into());
        assert_eq!(parse("'q.c'::counter").unwrap(), name("q.c::counter"));
        assert_eq!(parse("q.c::counter").unwrap(), name("q.c::counter"));
        assert_eq!(parse("main::p").unwrap(), name("main::p"));
        assert_eq!(parse("'q.c'::p.x").unwrap(), member(name("q.c::p"), "x"));
        // After an operand `.1` is a tuple field, elsewhere a number.
        assert_eq!(parse("t.1").unwrap(), member(name("t"), "__1"));
        assert_eq!(
            parse("t.1.0").unwrap(),
            member(member(name("t"), "__1"), "__0")
        );
        assert_eq!(parse("(t).2").unwrap(), member(name("t"), "__2"));
        assert_eq!(parse("a[0].1").unwrap().to_owned(), {
            let index = Expr::Index {
                base: Box::new(name("a")),
                index: Box::new(Expr::Literal(Value::int(0))),
            };
            member(index, "__1")
        });
        assert!(matches!(
            parse(".5").unwrap(),
            Expr::Literal(Value::Float { .. })
        ));
        assert!(matches!(
            parse("x + .5").unwrap(),
            Expr::Binary { rest, .. } if rest[0].0 == BinaryOp::Add
        ));
        assert_eq!(value("'a'"), "97 'a'");
        // A struct member followed by `.` is not a file name.
        assert_eq!(parse("s.x").unwrap(), member(name("s"), "x"));
    }

    #[test]
    fn syntax_errors_name_the_column() {
        for (text, message) in [
            (
                "1 +",
                "syntax error at column 4: unexpected end of expression",
            ),
            (
                "(1",
                "syntax error at column 3: expected ')', found end of expression",
            ),
            (
                "1 # 2",
                "syntax error at column 3: unexpected character '#'",
            ),
            ("1 2", "syntax error at column 3: unexpected \"2\""),
            (
                "a.",
                "syntax error at column 3: expected a field name, found end of expression",
            ),
            (
                "x ? 1",
                "syntax error at column 6: expected ':', found end of expression",
            ),
            ("0x", "syntax error at column 1: invalid number \"0x\""),
            ("1 + 09", "syntax error at column 5: invalid number \"09\""),
            (
                "'ab'",
                "syntax error at column 1: invalid character constant",
            ),
            ("''", "syntax error at column 1: empty character constant"),
            ("\"abc", "syntax error at column 1: unterminated string"),
            ("", "syntax error at column 1: unexpected end of expression"),
            (
                "a[1",
                "syntax error at column 4: expected ']', found end of expression",
            ),
            ("1uu2", "syntax error at column 1: invalid number \"1uu2\""),
        ] {
            match parse(text) {
                Err(Error::Expression(m)) => assert_eq!(m, message, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn literals_are_typed_like_c() {
        let cases = [
            ("42", "42", "int"),
            ("2147483648", "2147483648", "long"),
            ("0xffffffff", "4294967295", "unsigned int"),
            ("0x100000000", "4294967296", "long"),
            (
                "18446744073709551615",
                "18446744073709551615",
                "unsigned long",
            ),
            ("1u", "1", "unsigned int"),
            ("1L", "1", "long"),
            ("1ul", "1", "unsigned long"),
            ("010", "8", "int"),
            ("0b101", "5", "int"),
            ("'a'", "97 'a'", "char"),
            ("'\\n'", "10 '\\n'", "char"),
            ("'\\377'", "-1 '\\377'", "char"),
            ("'\\x41'", "65 'A'", "char"),
            ("1.5", "1.5", "double"),
            ("1.5f", "1.5", "float"),
            (".5", "0.5", "double"),
            ("1e3", "1000", "double"),
            ("2.5e-1", "0.25", "double"),
        ];
        for (text, expected, type_name) in cases {
            assert_eq!(show(text), (expected.into(), type_name.into()), "{text}");
        }
    }

    #[test]
    fn integer_arithmetic_follows_c() {
        let cases = [
            ("-1 < 1u", "0", "int"),
            ("-7 / 2", "-3", "int"),
            ("-7 % 3", "-1", "int"),
            ("2147483647 + 1", "-2147483648", "int"),
            ("0x7fffffffffffffff + 1", "-9223372036854775808", "long"),
            ("0u - 1", "4294967295", "unsigned int"),
            ("~0u", "4294967295", "unsigned int"),
            ("1u + 1", "2", "unsigned int"),
            ("1 + 1L", "2", "long"),
            ("u + l", "-4", "long"),
            (
                "u + 0xfffffffffffffffbul",
                "18446744073709551612",
                "unsigned long",
            ),
            ("x + l", "-2", "long"),
            ("'a' + 1", "98", "int"),
            ("c + c", "194", "int"),
            ("uc + 1", "201", "int"),
            ("s * s", "4", "int"),
            ("b + 1", "2", "int"),
            ("e + 1", "3", "int"),
            ("1 << 40", "0", "int"),
            ("1L << 40", "1099511627776", "long"),
            ("1 << -1", "0", "int"),
            ("-16 >> 2", "-4", "int"),
            ("0x80000000u >> 31", "1", "unsigned int"),
            ("6 & 3 | 8 ^ 1", "11", "int"),
            ("x == 3 && l < 0", "1", "int"),
            ("$eax * 2", "14", "int"),
        ];
        for (text, expected, type_name) in cases {
            assert_eq!(show(text), (expected.into(), type_name.into()), "{text}");
        }
        assert_eq!(error("1 / 0"), "division by zero");
        assert_eq!(error("5 % (x - 3)"), "division by zero");
    }

    #[test]
    fn float_arithmetic() {
        let cases = [
            ("10 / 3.0", "3.3333333333333335", "double"),
            ("d * 2", "5", "double"),
            ("f + 1", "1.5", "float"),
            ("f + d", "3", "double"),
            ("1.0 / 0", "inf", "double"),
            ("-d", "-2.5", "double"),
            ("d > 2", "1", "int"),
            ("!d", "0", "int"),
            ("1.5f * 3", "4.5", "float"),
        ];
        for (text, expected, type_name) in cases {
            assert_eq!(show(text), (expected.into(), type_name.into()), "{text}");
        }
        assert!(error("1.5 % 2").contains("integer-only operation"));
        assert!(error("d << 1").contains("integer-only operation"));
        assert!(error("~d").contains("invalid operand of type \"double\" to unary ~"));
    }

    #[test]
    fn logic_short_circuits() {
        assert_eq!(value("0 && nosuch"), "0");
        assert_eq!(value("1 || nosuch"), "1");
        assert_eq!(value("x > 2 ? 10 : nosuch"), "10");
        assert_eq!(value("2 && 3"), "1");
        assert_eq!(value("0 || 0.0"), "0");
        assert_eq!(
            error("1 && nosuch"),
            "no symbol \"nosuch\" in current context"
        );
        assert_eq!(
            error("nosuch + 1"),
            "no symbol \"nosuch\" in current context"
        );
    }

    #[test]
    fn registers_and_names() {
        assert_eq!(value("$rip"), "0x401136");
        assert_eq!(value("$pc + 1"), "0x401137");
        assert_eq!(value("$sp == $rsp"), "1");
        assert_eq!(error("$nosuch"), "no register \"$nosuch\"");
        assert_eq!(value("ns::g"), "42");
        assert_eq!(error("gone + 1"), "value has been optimized out");
        assert_eq!(value("e"), "GREEN");
    }

    #[test]
    fn pointers() {
        assert_eq!(show("p + 1"), ("0x1004".into(), "int *".into()));
        assert_eq!(show("2 + p"), ("0x1008".into(), "int *".into()));
        assert_eq!(show("q - 1"), ("0x1004".into(), "int *".into()));
        assert_eq!(show("q - p"), ("2".into(), "long".into()));
        assert_eq!(value("vp + 3"), "0x1003");
        assert_eq!(value("p < q"), "1");
        assert_eq!(value("p == 0"), "0");
        assert_eq!(value("!p"), "0");
        assert!(error("sp + 1").contains("pointer to \"struct node\" is not supported yet"));
        assert!(error("p * 2").contains("invalid operands of types \"int *\" and \"int\""));
    }

    #[test]
    fn dereferencing_reads_memory() {
        assert_eq!(show("*p"), ("10".into(), "int".into()));
        assert_eq!(value("p[2]"), "30");
        assert_eq!(value("*(p + 1) + p[0]"), "30");
        assert_eq!(value("q[-1]"), "20");
        assert_eq!(show("*cp"), ("104 'h'".into(), "char".into()));
        assert_eq!(value("cp[1]"), "105 'i'");
        assert_eq!(show("*dp"), ("2.5".into(), "double".into()));
        assert_eq!(show("*pp"), ("0x1000".into(), "int *".into()));
        assert_eq!(value("**pp"), "10");
        assert_eq!(error("*bad"), "cannot access memory at 0x10");
        assert!(error("*x").contains("non-pointer value of type \"int\""));
        assert!(error("*sp").contains("\"struct node\" is not supported yet"));
    }

    #[test]
    fn function_calls() {
        assert_eq!(
            parse("f(1, \"a\")").unwrap(),
            Expr::Call {
                function: "f".into(),
                args: vec![Expr::Literal(Value::int(1)), Expr::String("a".into())],
            }
        );
        assert_eq!(
            parse("g()").unwrap(),
            Expr::Call {
                function: "g".into(),
                args: vec![]
            }
        );
        assert_eq!(value("sum(1, x, 2 * 3) + 1"), "11");
        assert_eq!(value("sum(sum(1, 2), len(\"four\"))"), "7");
        assert_eq!(value("sum()"), "0");
        let statement = |text| evaluate_statement(&parse(text).unwrap(), &mock());
        assert_eq!(statement("nothing()").unwrap(), None);
        assert_eq!(statement("x").unwrap(), Some(Value::int(3)));
        assert!(error("nothing() + 1").contains("returns void"));
        assert!(error("nosuch(1)").contains("no function named \"nosuch\""));
        for (text, message) in [
            (
                "f(1,",
                "syntax error at column 5: unexpected end of expression",
            ),
            (
                "f(1 2)",
                "syntax error at column 5: expected ')', found \"2\"",
            ),
            (
                "(*f)(1)",
                "syntax error at column 5: only a function named directly can be called",
            ),
            ("1, 2", "syntax error at column 2: unexpected ','"),
        ] {
            match parse(text) {
                Err(Error::Expression(m)) => assert_eq!(m, message, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn operations_on_untyped_values_say_why_not() {
        assert!(error("&x").contains("not located in memory"));
        assert!(error("sp->next").contains("\"struct node\" is not supported yet"));
        assert!(error("arr[1]").contains("cannot subscript"));
        assert!(error("arr + 1").contains("\"int [3]\""));
        assert!(error("x.y").contains("not a structure"));
        assert_eq!(show("\"hi\""), ("\"hi\"".into(), "char [3]".into()));
    }

    #[test]
    fn unknown_names_suggest_the_nearest() {
        assert_eq!(
            error("gnoe + 1"),
            "no symbol \"gnoe\" in current context; did you mean \"gone\"?"
        );
        assert_eq!(
            error("arrr[0]"),
            "no symbol \"arrr\" in current context; did you mean \"arr\"?"
        );
        assert_eq!(
            error("elephant"),
            "no symbol \"elephant\" in current context"
        );
        let names = ["count".to_string(), "counter".to_string()];
        assert_eq!(nearest_name("countre", &names), Some("counter"));
        assert_eq!(nearest_name("zzz", &names), None);
    }

    #[test]
    fn casts_and_sizeof_parse() {
        let cast = |base: &str, pointers, operand| Expr::Cast {
            target: TypeName {
                base: base.into(),
                pointers,
            },
            operand: Box::new(operand),
        };
        let name = |n: &str| Expr::Name(n.into());
        assert_eq!(parse("(long)x").unwrap(), cast("long", 0, name("x")));
        assert_eq!(
            parse("(unsigned char) c").unwrap(),
            cast("unsigned char", 0, name("c"))
        );
        assert_eq!(
            parse("(struct point *)p").unwrap(),
            cast("struct point", 1, name("p"))
        );
        assert_eq!(
            parse("(const char **)p").unwrap(),
            cast("char", 2, name("p"))
        );
        assert_eq!(parse("(mytype)v").unwrap(), cast("mytype", 0, name("v")));
        assert_eq!(parse("(mytype *)v").unwrap(), cast("mytype", 1, name("v")));
        assert_eq!(
            parse("*(int *)0").unwrap(),
            Expr::Unary {
                op: UnaryOp::Deref,
                operand: Box::new(cast("int", 1, Expr::Literal(Value::int(0)))),
            }
        );
        // A parenthesised name before an operator is no cast.
        assert!(matches!(parse("(x) - 1").unwrap(), Expr::Binary { .. }));
        assert!(matches!(parse("(x) * y").unwrap(), Expr::Binary { .. }));
        assert_eq!(
            parse("sizeof(int)").unwrap(),
            Expr::SizeofType(TypeName {
                base: "int".into(),
                pointers: 0
            })
        );
        assert_eq!(
            parse("sizeof x + 1").unwrap(),
            Expr::Binary {
                first: Box::new(Expr::SizeofExpr(Box::new(name("x")))),
                rest: vec![(BinaryOp::Add, Expr::Literal(Value::int(1)))],
            }
        );
        match parse("(struct)x") {
            Err(Error::Expression(m)) => {
                assert_eq!(
                    m,
                    "syntax error at column 8: expected a name after 'struct', found ')'"
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn casts_to_base_types() {
        for (text, expected, type_name) in [
            ("(long)x", "3", "long"),
            ("(unsigned char)300", "44 ','", "unsigned char"),
            ("(char)c", "97 'a'", "char"),
            ("(double)x / 2", "1.5", "double"),
            ("(int)d", "2", "int"),
            ("(int)-d", "-2", "int"),
            ("(unsigned)-1", "4294967295", "unsigned int"),
            ("(short)70000", "4464", "short"),
            ("(_Bool)5", "true", "bool"),
            ("(float)d", "2.5", "float"),
            (
                "(unsigned long int)l",
                "18446744073709551611",
                "unsigned long",
            ),
            ("*(int *)4096", "10", "int"),
            ("((int *)4096)[1]", "20", "int"),
            ("(char *)0", "0x0", "char *"),
            ("(void *)p", "0x1000", "void *"),
            ("sizeof(int)", "4", "unsigned long"),
            ("sizeof(char *)", "8", "unsigned long"),
            ("sizeof(long double)", "16", "unsigned long"),
            ("sizeof x", "4", "unsigned long"),
            ("sizeof(d)", "8", "unsigned long"),
            ("sizeof \"abc\"", "4", "unsigned long"),
        ] {
            assert_eq!(show(text), (expected.into(), type_name.into()), "{text}");
        }
        assert_eq!(error("*(int *)0"), "cannot access memory at 0x0");
        assert_eq!(
            error("(struct nosuch *)p"),
            "no type named \"struct nosuch *\""
        );
        assert_eq!(error("sizeof(nosuch)"), "no type named \"nosuch\"");
        assert!(error("(int *)d").contains("floating-point"));
    }

    /// Constant expressions give what gdb prints for them.
    #[test]
    fn constants_agree_with_gdb() {
        let expressions = [
            "1 + 2 * 3",
            "-7 / 2",
            "-7 % 3",
            "2147483647 + 1",
            "-1 < 1u",
            "0u - 1",
            "~0u",
            "'a' + 1",
            "'\\377'",
            "10 / 3.0",
            "1.5f * 3",
            "1 << 40",
            "-16 >> 2",
            "0x7fffffffffffffff + 1",
            "1 ? 2 : 3",
            "!5",
            "0x80000000u >> 31",
            "1.0 / 0",
            "3 > 2 && 2 > 1",
            "100000 * 100000",
            "-5u",
            "7 % -3",
            "2.5e-1",
            "~5",
            "6 ^ 3",
        ];
        let mut command = std::process::Command::new("gdb");
        command.args(["-nx", "-batch", "-ex", "set language c"]);
        for expr in expressions {
            command.args(["-ex", &format!("print {expr}")]);
        }
        // A missing gdb fails the test: `.ci/run` installs it.
        let output = command.output().expect("this test needs gdb");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let answers: Vec<&str> = stdout.lines().filter(|l| l.starts_with('$')).collect();
        assert_eq!(answers.len(), expressions.len(), "gdb said: {stdout}");
        for (i, (expr, answer)) in expressions.iter().zip(answers).enumerate() {
            let ours = format!("${} = {}", i + 1, value(expr));
            assert_eq!(ours, answer, "{expr}");
        }
    }
    /// Runs `f` on a thread with the main thread's stack (8 MiB): what
    /// the limits are meant to fit in, where a test thread has 2 MiB.
    fn on_main_sized_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(f)
            .expect("thread")
            .join()
            .expect("no panic")
    }

    #[test]
    fn chains_of_one_precedence_are_flat() {
        let literal = |n| Expr::Literal(Value::int(n));
        assert_eq!(
            parse("1 - 2 + 3").unwrap(),
            Expr::Binary {
                first: Box::new(literal(1)),
                rest: vec![(BinaryOp::Sub, literal(2)), (BinaryOp::Add, literal(3))],
            }
        );
        // A lower precedence after a chain takes the chain as its first
        // operand; a higher one nests on the right.
        assert_eq!(
            parse("1 * 2 + 3 * 4").unwrap(),
            Expr::Binary {
                first: Box::new(Expr::Binary {
                    first: Box::new(literal(1)),
                    rest: vec![(BinaryOp::Mul, literal(2))],
                }),
                rest: vec![(
                    BinaryOp::Add,
                    Expr::Binary {
                        first: Box::new(literal(3)),
                        rest: vec![(BinaryOp::Mul, literal(4))],
                    }
                )],
            }
        );
        for (text, expected) in [
            ("10 - 2 - 3", "5"),
            ("2 * 3 + 4 * 5 - 6 / 2", "23"),
            ("1 + 2 < 4 == 1", "1"),
            ("0 && nosuch && nosuch", "0"),
            ("0 || 0 || 3", "1"),
            ("1 << 2 << 3", "32"),
        ] {
            assert_eq!(value(text), expected, "{text}");
        }
    }

    /// Long chains neither recurse per term when parsed, evaluated or
    /// dropped: on a test thread's 2 MiB stack, in a debug build.
    #[test]
    fn long_chains_do_not_recurse() {
        let terms = 100_000;
        let sum = vec!["1"; terms].join("+");
        assert_eq!(value(&sum), terms.to_string());
        let mixed = vec!["(2*x-5)"; terms].join(" + ");
        assert_eq!(value(&mixed), terms.to_string());
        let ors = vec!["0"; terms].join(" || ");
        assert_eq!(value(&ors), "0");
        let tree = parse(&vec!["x"; terms].join(" - ")).unwrap();
        let copy = tree.clone();
        assert_eq!(tree, copy);
        drop(tree);
    }

    #[test]
    fn nesting_is_bounded() {
        let parens = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
        let negations = |n: usize| format!("{}1", "-(".repeat(n)) + &")".repeat(n);
        let casts = |n: usize| format!("{}x", "(long)".repeat(n));
        let members = |n: usize| format!("s{}", ".f".repeat(n));
        let indexes = |n: usize| format!("{}0{}", "p[".repeat(n), "]".repeat(n));
        let conditionals = |n: usize| format!("{}1{}", "1 ? ".repeat(n), " : 0".repeat(n));
        let (at_limit, beyond) = on_main_sized_stack(move || {
            let at_limit = (
                value(&parens(MAX_NESTING)),
                value(&negations(MAX_NESTING / 2)),
                value(&casts(MAX_NESTING)),
                value(&conditionals(MAX_NESTING)),
            );
            let beyond: Vec<(String, Result<Expr>)> = [
                parens(MAX_NESTING + 1),
                parens(100_000),
                negations(MAX_NESTING),
                casts(100_000),
                members(100_000),
                indexes(100_000),
                conditionals(100_000),
                format!("{}1", "-".repeat(100_000)),
                format!("f({}1{})", "f(".repeat(100_000), ")".repeat(100_000)),
            ]
            .into_iter()
            .map(|text| (text[..20].to_string(), parse(&text)))
            .collect();
            (at_limit, beyond)
        });
        assert_eq!(at_limit, ("1".into(), "1".into(), "3".into(), "1".into()));
        for (start, parsed) in beyond {
            match parsed {
                Err(Error::Expression(message)) => assert!(
                    message.starts_with("expression nested too deeply at column ")
                        && message.contains("the limit is 256 levels"),
                    "{start}...: {message}"
                ),
                other => panic!("{start}...: {other:?}"),
            }
        }
    }

    #[test]
    fn slices_and_at_parse() {
        let name = |n: &str| Box::new(Expr::Name(n.into()));
        let literal = |n| Some(Box::new(Expr::Literal(Value::int(n))));
        let slice = |first, last, stride| Expr::Slice {
            base: name("a"),
            first,
            last,
            stride,
        };
        assert_eq!(
            parse("a[2..4]").unwrap(),
            slice(literal(2), literal(4), None)
        );
        assert_eq!(parse("a[..4]").unwrap(), slice(None, literal(4), None));
        assert_eq!(parse("a[2..]").unwrap(), slice(literal(2), None, None));
        assert_eq!(parse("a[..]").unwrap(), slice(None, None, None));
        assert_eq!(
            parse("a[2..8:2]").unwrap(),
            slice(literal(2), literal(8), literal(2))
        );
        assert_eq!(parse("a[..:3]").unwrap(), slice(None, None, literal(3)));
        assert!(matches!(
            parse("a[x ? 1 : 2..5]").unwrap(),
            Expr::Slice { first: Some(f), .. } if matches!(*f, Expr::Conditional { .. })
        ));
        assert!(matches!(
            parse("a[0..1][1..2]").unwrap(),
            Expr::Slice { base, .. } if matches!(*base, Expr::Slice { .. })
        ));
        // `@` binds tighter than shifts and looser than sums, as in gdb.
        assert_eq!(
            parse("*p@n+1").unwrap(),
            Expr::Binary {
                first: Box::new(Expr::Unary {
                    op: UnaryOp::Deref,
                    operand: name("p"),
                }),
                rest: vec![(
                    BinaryOp::Repeat,
                    Expr::Binary {
                        first: name("n"),
                        rest: vec![(BinaryOp::Add, *literal(1).unwrap())],
                    }
                )],
            }
        );
        for (text, message) in [
            (
                "a[1..2",
                "syntax error at column 7: expected ']', found end of expression",
            ),
            ("a[1..2:]", "syntax error at column 8: unexpected ']'"),
            (
                "a[1:2]",
                "syntax error at column 4: expected ']', found ':'",
            ),
            (
                "a@",
                "syntax error at column 3: unexpected end of expression",
            ),
        ] {
            match parse(text) {
                Err(Error::Expression(m)) => assert_eq!(m, message, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn slices_show_their_indexes() {
        assert_eq!(
            show("p[0..2]"),
            ("{[0] = 10, [1] = 20, [2] = 30}".into(), "int [3]".into())
        );
        assert_eq!(value("p[..1]"), "{[0] = 10, [1] = 20}");
        assert_eq!(value("p[0..2:2]"), "{[0] = 10, [2] = 30}");
        assert_eq!(value("q[-1..0]"), "{[-1] = 20, [0] = 30}");
        // Unreadable elements are shown in place.
        assert_eq!(
            value("p[6..8]"),
            "{[6] = 4096, [7] = 0, [8] = <error: cannot access memory at 0x1020>}"
        );
        let sliced = eval("p[0..1]").unwrap();
        assert_eq!(sliced.format_as('x', &|_| None), "{[0] = 0xa, [1] = 0x14}");
        for (text, message) in [
            (
                "p[1..]",
                "a slice of \"int *\" needs its last index (first..last)",
            ),
            (
                "p[3..1]",
                "empty slice: its last index, 1, is below its first, 3",
            ),
            (
                "p[0..2:0]",
                "the stride of a slice must be at least 1, not 0",
            ),
            (
                "p[0..2:-1]",
                "the stride of a slice must be at least 1, not -1",
            ),
            (
                "x[0..1]",
                "cannot slice something of type \"int\": only arrays and pointers",
            ),
            ("p[0..d]", "array subscript is not an integer"),
        ] {
            assert_eq!(error(text), message, "{text}");
        }
    }

    #[test]
    fn at_needs_a_count_and_memory() {
        for (text, message) in [
            ("x@0", "invalid count 0 after @: it must be at least 1"),
            ("x@-3", "invalid count -3 after @: it must be at least 1"),
            ("x@1.5", "the count after @ must be an integer"),
            ("x@2", "only values in memory can be extended with @"),
            ("1@2", "only values in memory can be extended with @"),
        ] {
            assert_eq!(error(text), message, "{text}");
        }
    }

    #[test]
    fn assignments_refuse_what_is_no_lvalue() {
        let ctx = mock();
        let run = |target: &str, value: &str| {
            let target = parse(target).unwrap();
            let value = parse(value).unwrap();
            assign(&target, &value, &ctx).unwrap_err().to_string()
        };
        assert!(run("gone", "1").contains("cannot assign to gone: it is optimized out"));
        assert!(run("3", "4").contains("cannot assign to 3: not an lvalue"));
        assert!(run("x + 1", "4").contains("not an lvalue"));
        // The default context cannot change registers.
        assert!(run("$rax", "1").contains("cannot set $rax here"));
        assert!(run("nosuch", "1").contains("no symbol"));
    }
}
