//! The typed form of a command line.

use crate::signal::Signal;
use std::fmt;

/// One parsed command line. Expressions are kept as text: the debugger
/// parses them against the stopped program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// An empty line, blanks only, or a `#` comment.
    Nothing,

    // ---- process ----
    /// `run [ARGS] [< IN] [> OUT]`. `args` is `None` when no arguments were
    /// typed: dbx then reuses the previous arguments (and redirections).
    Run {
        args: Option<Vec<String>>,
        redirects: Redirects,
    },
    /// `rerun [ARGS]`: unlike `run`, no arguments means none at all.
    Rerun {
        args: Vec<String>,
        redirects: Redirects,
    },
    Kill,
    Quit,
    Attach {
        pid: u32,
    },
    Detach,

    // ---- breakpoints ----
    /// `stop`, `stopi`, `break`, `tbreak`.
    Stop(BreakpointSpec),
    /// A bare `stop`: in a `when` body, stop the program instead of
    /// resuming after the body.
    Halt,
    /// `when LOCATION { COMMANDS }`: run the commands each time it is hit.
    When {
        spec: BreakpointSpec,
        /// The body as typed, between the braces, for `status`.
        body_text: String,
        body: Vec<Command>,
    },
    /// `status`, `info breakpoints`.
    Status,
    Delete(Selection),
    /// `clear [LOCATION]`: delete the breakpoints at a location (the
    /// current line when `None`).
    Clear(Option<Location>),
    /// gdb `ignore N COUNT`: breakpoint `id` ignores its next `count` hits.
    IgnoreCount {
        id: u32,
        count: u32,
    },
    /// `condition N [EXPR]`; `None` removes the condition.
    Condition {
        id: u32,
        condition: Option<String>,
    },
    Enable(Selection),
    Disable(Selection),

    // ---- execution ----
    /// `cont [N] [sig SIG]`. `count` is gdb's: stop only at the N-th hit
    /// of the current breakpoint.
    Continue {
        count: Option<u32>,
        signal: Delivery,
    },
    Step {
        count: u32,
    },
    Next {
        count: u32,
    },
    /// `step up`, `finish`: run until the current function returns.
    StepUp,
    StepInstruction {
        count: u32,
    },
    NextInstruction {
        count: u32,
    },

    // ---- stack, threads, code ----
    /// `where [N] [t@T]`: the innermost N frames (all when `None`) of
    /// thread T (the current thread when `None`).
    Where {
        depth: Option<u32>,
        thread: Option<u32>,
    },
    /// `up [N]`: `None` when no count was typed (gdb then refuses at the
    /// outermost frame, where `up N` stays quietly).
    Up {
        count: Option<u32>,
    },
    /// `down [N]`, likewise at the innermost frame.
    Down {
        count: Option<u32>,
    },
    /// `frame [N]`: select frame N, or show the current one.
    Frame {
        number: Option<u32>,
    },
    Threads,
    /// `thread t@N` (dbx) or `thread N` (gdb): select thread N.
    Thread {
        id: u32,
    },
    /// `regs`, `info registers [NAME...]`: all registers when `names` is
    /// empty; names are given without `$`.
    Registers {
        names: Vec<String>,
    },
    List(ListTarget),
    /// `dis [ADDR [COUNT]]`, `disassemble [LOC]`, `x/Ni ADDR`. `start` is
    /// `None` for the current pc. `gdb_style` means `disassemble` was typed
    /// without a count: gdb shows the whole function then.
    Disassemble {
        start: Option<Location>,
        count: Option<u32>,
        gdb_style: bool,
    },
    /// `loadobjects`, `info sharedlibrary`.
    LoadObjects,

    // ---- data ----
    Print(PrintSpec),
    /// `display [EXPR]`: with no expression, show the current displays.
    Display {
        expr: Option<String>,
        format: Option<char>,
    },
    Undisplay(Selection),
    Whatis(String),
    Ptype(String),
    /// `examine ADDR [/NFU]` (dbx), gdb `x/NFU ADDR`: memory in a format
    /// (`x/Ni` is [`Command::Disassemble`]).
    Examine(ExamineSpec),
    /// `dump [FUNC]`, gdb `info locals`: the locals of the selected frame,
    /// or of the innermost frame of FUNC.
    Dump {
        function: Option<String>,
    },
    /// gdb `info args`: the parameters of the selected frame.
    Arguments,
    /// dbx `showleaks`: a leak check of the stopped process, from the
    /// heap-tracing experiment and a scan of its memory.
    ShowLeaks(HeapView),
    /// dbx `showmemuse`: the blocks in use, by allocation stack.
    ShowMemUse(HeapView),
    /// dbx `showblock [-a] ADDRESS`: the block in use that holds ADDRESS.
    ShowBlock {
        address: String,
        json: bool,
    },
    /// `assign LVALUE = EXPR`, gdb `set var LVALUE = EXPR`.
    Assign {
        target: String,
        value: String,
        /// Spelled `set ...` as in gdb, which prints nothing.
        gdb_style: bool,
    },
    /// `call FUNC(ARGS)`: call a function of the program in the current
    /// thread; a non-void result is printed. The text is the expression.
    Call(String),
    /// gdb `complete TEXT`: the completions Tab would offer for TEXT as a
    /// command line, one full line each.
    Complete(String),

    // ---- signals ----
    /// `catch`, `ignore`, `handle`, `info signals`.
    Signals(SignalCommand),

    // ---- other ----
    /// `help [TOPIC]`; the topic is a known command name or alias.
    Help(Option<String>),
    /// `source FILE`: run the commands in FILE.
    Source(String),
    /// `collector SUBCOMMAND ...`.
    Collector(crate::collector::CollectorCommand),
    /// `analyze [...]`, kept as raw text until the analyzer exists.
    Analyze(Option<String>),
    /// `maintenance crash KIND`: makes rdbx fail on purpose, to check
    /// that a process it debugs survives rdbx's own crash.
    Crash(CrashKind),
    /// `dbxenv [NAME [VALUE]]` (gdb-like: `set call-timeout SECONDS`):
    /// show or change a debugger setting. `name` is one of
    /// [`DBXENV_SETTINGS`](crate::DBXENV_SETTINGS).
    Dbxenv {
        name: Option<String>,
        value: Option<String>,
    },
}

/// How `maintenance crash` makes rdbx fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashKind {
    /// A Rust panic in the thread that runs commands.
    Panic,
    /// Infinite recursion in the thread that runs commands.
    StackOverflow,
    /// Infinite recursion in a thread of its own.
    ThreadStackOverflow,
}

/// The settings `dbxenv` knows.
pub const DBXENV_SETTINGS: &[&str] = &["call_timeout", "stack_past_main"];

/// A place to stop or look at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// A function, possibly qualified (`ns::f`, `Type::method`).
    Function(String),
    /// A function of a given source file (gdb `FILE:FUNC`).
    FunctionInFile { file: String, function: String },
    /// A source line, in the current file when `file` is `None`.
    Line { file: Option<String>, line: u32 },
    /// An instruction address, as expression text (usually `0x...`).
    Address(String),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Function(name) => f.write_str(name),
            Location::FunctionInFile { file, function } => write!(f, "{file}:{function}"),
            Location::Line {
                file: Some(file),
                line,
            } => write!(f, "{file}:{line}"),
            Location::Line { file: None, line } => write!(f, "{line}"),
            Location::Address(address) => write!(f, "*{address}"),
        }
    }
}

/// Where and when to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakpointSpec {
    pub location: Location,
    /// Stop only when this expression is true (`-if`, gdb `if`).
    pub condition: Option<String>,
    /// dbx `-count N`: stop at the N-th hit only (and then every N-th).
    pub count: Option<u32>,
    /// Delete after the first stop (`-temp`, `tbreak`).
    pub temporary: bool,
}

impl BreakpointSpec {
    pub fn at(location: Location) -> Self {
        BreakpointSpec {
            location,
            condition: None,
            count: None,
            temporary: false,
        }
    }
}

/// Input and output redirection of the debuggee.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redirects {
    pub stdin: Option<String>,
    pub stdout: Option<String>,
    /// `>>` rather than `>`.
    pub append: bool,
}

impl Redirects {
    pub fn is_empty(&self) -> bool {
        self.stdin.is_none() && self.stdout.is_none()
    }
}

/// Which breakpoints (or displays) a command applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    Ids(Vec<u32>),
}

/// What signal `cont` gives the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The signal the process stopped with, if its disposition passes it.
    Pending,
    /// `cont sig 0`: discard the pending signal.
    Cancel,
    /// `cont sig SIG`.
    Signal(Signal),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListTarget {
    /// `list`: the lines after the last ones listed.
    Next,
    /// `list -`: the lines before the last ones listed.
    Previous,
    /// `list LOC`: lines around a function or line.
    Around(Location),
    /// `list [FILE:]FIRST,LAST`.
    Range {
        file: Option<String>,
        first: u32,
        last: u32,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintSpec {
    pub expr: String,
    /// gdb `/x` or dbx `-x`: one of `xduotacfsz`.
    pub format: Option<char>,
    /// Typed as `p` or with `/FMT`: answer gdb-style (`$1 = 5`) rather
    /// than dbx-style (`x = 5`).
    pub gdb_style: bool,
}

/// What `examine` / `x` shows. `None` fields repeat the previous
/// command's (gdb: format x and size w at first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExamineSpec {
    /// Expression text; `None` continues after the last unit examined.
    pub address: Option<String>,
    pub count: u32,
    /// One of `xduotcfsia`.
    pub format: Option<char>,
    /// One of `bhwg`: 1, 2, 4, 8 bytes.
    pub size: Option<char>,
}

/// The signal commands, unified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalCommand {
    /// List signal dispositions.
    Show(SignalFilter),
    /// Change the disposition of some signals; `None` fields stay as they are.
    Set {
        signals: Vec<Signal>,
        disposition: Disposition,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignalFilter {
    /// `catch` with no arguments.
    Caught,
    /// `ignore` with no arguments.
    Ignored,
    /// `handle`, `info signals`.
    All,
    /// `handle SIG...` without actions.
    Only(Vec<Signal>),
}

/// gdb's three flags for a signal. dbx `catch` is stop+print, `ignore` is
/// nostop+noprint+pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Disposition {
    pub stop: Option<bool>,
    pub print: Option<bool>,
    pub pass: Option<bool>,
}

/// How `showleaks` and `showmemuse` show their stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapView {
    /// Frames of each allocation stack shown (`-n N`).
    pub frames: usize,
    /// Every leak so far, not only those new since the last showleaks
    /// (`showleaks -a`); every group (`showmemuse -a`).
    pub all: bool,
    pub json: bool,
}

/// Frames of an allocation stack shown by default, as dbx.
pub const HEAP_VIEW_FRAMES: usize = 8;
