//! From a command line to a `Command`.

use crate::command::*;
use crate::error::ParseError;
use crate::help::{find_help, resolve_word, suggest, usage_of};
use crate::signal::Signal;
use crate::words::{find_assignment, find_braces, split_top_level, Scanner, Word};

type Result<T> = std::result::Result<T, ParseError>;

/// Format letters of `print/FMT` and `print -FMT`.
const FORMATS: &str = "xduotacfsz";

/// Format letters of `examine` / `x`.
const EXAMINE_FORMATS: &str = "xduotcfsia";

/// Most `when` commands nested in each other's bodies. Parsing them
/// recurses, and so do executing and dropping them.
pub const MAX_WHEN_NESTING: usize = 16;

/// Parses one command line.
pub fn parse(line: &str) -> Result<Command> {
    parse_nested(line, 0)
}

/// [`parse`] of a line inside `nesting` `when` bodies.
fn parse_nested(line: &str, nesting: usize) -> Result<Command> {
    if let Some(text) = complete_argument(line) {
        return Ok(Command::Complete(text.to_string()));
    }
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(Command::Nothing);
    }
    let word_end = line
        .find(|c: char| c.is_whitespace() || c == '/')
        .unwrap_or(line.len());
    let (word, rest) = line.split_at(word_end);
    if word == "info" || word == "i" || word == "inf" {
        return parse_info(rest.trim(), nesting);
    }
    let Some(entry) = resolve_word(word) else {
        return Err(ParseError::UnknownCommand {
            word: word.to_string(),
            suggestion: suggest(word),
        });
    };
    let args = Args {
        name: entry.name,
        typed: word,
        text: rest,
        nesting,
    };
    if rest.starts_with('/') && !matches!(entry.name, "print" | "display" | "dis" | "examine") {
        return Err(args.invalid("unexpected \"/\" after the command name"));
    }
    args.dispatch()
}

/// The arguments of one command, and the command they belong to.
struct Args<'a> {
    /// The canonical name, from the command table.
    name: &'static str,
    /// The spelling that was typed.
    typed: &'a str,
    /// Everything after the command word (may start with `/FMT`).
    text: &'a str,
    /// How many `when` bodies the command is in.
    nesting: usize,
}

impl<'a> Args<'a> {
    fn invalid(&self, problem: impl Into<String>) -> ParseError {
        invalid(self.name, problem)
    }

    fn dispatch(&self) -> Result<Command> {
        match self.name {
            "run" => self.run(),
            "rerun" => self.rerun(),
            "kill" => self.none(Command::Kill),
            "quit" => self.none(Command::Quit),
            "attach" => Ok(Command::Attach {
                pid: self.one_number("process id")?,
            }),
            "detach" => self.none(Command::Detach),
            // A bare `stop` (in a `when` body) stops the program there.
            "stop" if self.text.trim().is_empty() => Ok(Command::Halt),
            "stop" => self.stop(StopKind::Dbx).map(Command::Stop),
            "stopi" => self.stop(StopKind::Instruction).map(Command::Stop),
            "break" => self.stop(StopKind::Gdb).map(Command::Stop),
            "tbreak" => self.stop(StopKind::Gdb).map(|spec| {
                Command::Stop(BreakpointSpec {
                    temporary: true,
                    ..spec
                })
            }),
            "when" => self.when(),
            "status" => self.none(Command::Status),
            "delete" => self.selection(false).map(Command::Delete),
            "clear" => self.clear(),
            "ignore" => self.ignore(),
            "condition" => self.condition(),
            "enable" => self.selection(true).map(Command::Enable),
            "disable" => self.selection(true).map(Command::Disable),
            "cont" => self.cont(),
            "step" => self.step(),
            "step up" => self.none(Command::StepUp),
            "next" => Ok(Command::Next {
                count: self.count()?,
            }),
            "stepi" => Ok(Command::StepInstruction {
                count: self.count()?,
            }),
            "nexti" => Ok(Command::NextInstruction {
                count: self.count()?,
            }),
            "where" => self.where_(),
            "up" => Ok(Command::Up {
                count: self.optional_number("frame count", 0)?,
            }),
            "down" => Ok(Command::Down {
                count: self.optional_number("frame count", 0)?,
            }),
            "frame" => Ok(Command::Frame {
                number: self.optional_number("frame number", 0)?,
            }),
            "threads" => self.none(Command::Threads),
            "thread" => match self.optional_word()? {
                Some(word) => Ok(Command::Thread {
                    id: thread_id(self.name, &word)?,
                }),
                None => Err(self.invalid("missing thread id (t@N or N)")),
            },
            "regs" => self.registers(),
            "list" => self.list().map(Command::List),
            "dis" => self.disassemble(),
            "loadobjects" => self.none(Command::LoadObjects),
            "print" => self.print().map(Command::Print),
            "display" => self.display(),
            "undisplay" => self.selection(false).map(Command::Undisplay),
            "whatis" => Ok(Command::Whatis(self.expression()?)),
            "ptype" => Ok(Command::Ptype(self.expression()?)),
            "examine" => self.examine(),
            "dump" => Ok(Command::Dump {
                function: self.optional_word()?,
            }),
            "info args" => self.none(Command::Arguments),
            "showleaks" => self.heap_view().map(Command::ShowLeaks),
            "showmemuse" => self.heap_view().map(Command::ShowMemUse),
            "showblock" => self.show_block(),
            "assign" => self.assign(),
            "call" => Ok(Command::Call(self.expression()?)),
            // Taken by `complete_argument` before this, blanks kept.
            "complete" => Ok(Command::Complete(self.text.trim_start().to_string())),
            "dbxenv" => self.dbxenv(self.text),
            "catch" => self.catch(),
            "handle" => self.handle(),
            "help" => self.help(),
            "source" => self.source(),
            "collector" => {
                let words: Vec<String> = self.words()?.into_iter().map(|w| w.text).collect();
                crate::collector::parse(&words).map(Command::Collector)
            }
            "analyze" => Ok(Command::Analyze(non_empty(self.text))),
            "maintenance" => self.maintenance(),
            other => Err(self.invalid(format!("\"{other}\" is not implemented"))),
        }
    }

    /// `maintenance crash panic|stack-overflow|thread-stack-overflow`.
    fn maintenance(&self) -> Result<Command> {
        let words = self.words()?;
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let kind = match texts.as_slice() {
            ["crash", "panic"] => CrashKind::Panic,
            ["crash", "stack-overflow"] => CrashKind::StackOverflow,
            ["crash", "thread-stack-overflow"] => CrashKind::ThreadStackOverflow,
            _ => {
                return Err(self.invalid(
                    "expected \"crash panic\", \"crash stack-overflow\" or \"crash thread-stack-overflow\"",
                ))
            }
        };
        Ok(Command::Crash(kind))
    }

    fn words(&self) -> Result<Vec<Word>> {
        Scanner::new(self.text)
            .all_words()
            .map_err(|problem| self.invalid(problem))
    }

    /// For commands that take no arguments.
    fn none(&self, command: Command) -> Result<Command> {
        match self.words()?.first() {
            None => Ok(command),
            Some(word) => Err(self.invalid(format!("unexpected argument \"{}\"", word.text))),
        }
    }

    /// At most one word.
    fn optional_word(&self) -> Result<Option<String>> {
        let mut words = self.words()?.into_iter();
        let first = words.next().map(|w| w.text);
        match words.next() {
            None => Ok(first),
            Some(extra) => Err(self.invalid(format!("unexpected argument \"{}\"", extra.text))),
        }
    }

    fn optional_number(&self, what: &str, min: u32) -> Result<Option<u32>> {
        self.optional_word()?
            .map(|word| number(self.name, &word, what, min))
            .transpose()
    }

    fn one_number(&self, what: &str) -> Result<u32> {
        self.optional_number(what, 1)?
            .ok_or_else(|| self.invalid(format!("missing {what}")))
    }

    /// A repeat count for step and friends, 1 by default.
    fn count(&self) -> Result<u32> {
        Ok(self.optional_number("count", 1)?.unwrap_or(1))
    }

    fn expression(&self) -> Result<String> {
        non_empty(self.text).ok_or_else(|| self.invalid("missing expression"))
    }

    /// `showleaks` / `showmemuse` `[-a] [-n FRAMES] [-json]`.
    fn heap_view(&self) -> Result<HeapView> {
        let mut view = HeapView {
            frames: HEAP_VIEW_FRAMES,
            all: false,
            json: false,
        };
        let words = self.words()?;
        let mut words = words.iter();
        while let Some(word) = words.next() {
            match word.text.as_str() {
                "-a" => view.all = true,
                "-json" | "--json" => view.json = true,
                "-n" => {
                    let count = words
                        .next()
                        .ok_or_else(|| self.invalid("-n needs a number of frames"))?;
                    view.frames = number(self.name, &count.text, "frame count", 1)? as usize;
                }
                other => return Err(self.invalid(format!("unexpected argument \"{other}\""))),
            }
        }
        Ok(view)
    }

    /// `showblock [-a] [-json] ADDRESS` (an expression).
    fn show_block(&self) -> Result<Command> {
        let mut rest = self.text.trim_start();
        let mut json = false;
        loop {
            if let Some(after) = rest.strip_prefix("-a ") {
                rest = after.trim_start();
            } else if let Some(after) = rest.strip_prefix("-json ") {
                json = true;
                rest = after.trim_start();
            } else {
                break;
            }
        }
        let address = non_empty(rest).ok_or_else(|| self.invalid("missing address"))?;
        Ok(Command::ShowBlock { address, json })
    }

    /// `where [N] [t@T]`, in either order.
    fn where_(&self) -> Result<Command> {
        let (mut depth, mut thread) = (None, None);
        for word in self.words()? {
            let text = word.text.as_str();
            if text.starts_with("t@") {
                if thread.replace(thread_id(self.name, text)?).is_some() {
                    return Err(self.invalid("two thread ids"));
                }
            } else if depth
                .replace(number(self.name, text, "frame count", 1)?)
                .is_some()
            {
                return Err(self.invalid(format!("unexpected argument \"{text}\"")));
            }
        }
        Ok(Command::Where { depth, thread })
    }

    fn run(&self) -> Result<Command> {
        let (args, redirects) = self.program_arguments()?;
        let args = (!args.is_empty()).then_some(args);
        Ok(Command::Run { args, redirects })
    }

    fn rerun(&self) -> Result<Command> {
        let (args, redirects) = self.program_arguments()?;
        Ok(Command::Rerun { args, redirects })
    }

    fn program_arguments(&self) -> Result<(Vec<String>, Redirects)> {
        let words = Scanner::with_redirections(self.text)
            .all_words()
            .map_err(|problem| self.invalid(problem))?;
        let mut args = Vec::new();
        let mut redirects = Redirects::default();
        let mut words = words.into_iter();
        while let Some(word) = words.next() {
            if !word.operator {
                args.push(word.text);
                continue;
            }
            let file = match words.next() {
                Some(file) if !file.operator => file.text,
                _ => return Err(self.invalid(format!("missing file name after {}", word.text))),
            };
            let slot = if word.text == "<" {
                &mut redirects.stdin
            } else {
                redirects.append = word.text == ">>";
                &mut redirects.stdout
            };
            if slot.replace(file).is_some() {
                return Err(self.invalid(format!("{} given twice", word.text)));
            }
        }
        Ok((args, redirects))
    }

    fn stop(&self, kind: StopKind) -> Result<BreakpointSpec> {
        let mut scanner = Scanner::new(self.text);
        let location = self.stop_location(kind, &mut scanner)?;
        self.stop_options(BreakpointSpec::at(location), scanner)
    }

    /// The location part of `stop`, `stopi`, `break` and `when`.
    fn stop_location(&self, kind: StopKind, scanner: &mut Scanner) -> Result<Location> {
        if kind == StopKind::Gdb {
            let first = scanner
                .next_name()
                .map_err(|problem| self.invalid(problem))?
                .ok_or_else(|| self.invalid("missing location"))?;
            return gdb_location(self.name, &first.text);
        }
        let first = self
            .next_word(scanner)?
            .ok_or_else(|| self.invalid("missing location"))?;
        let keyword = first.text.as_str();
        if keyword != "in" && keyword != "at" {
            return Err(self.invalid(format!("expected \"in\" or \"at\", got \"{keyword}\"")));
        }
        let what = match (keyword, kind) {
            ("in", _) => "function name",
            (_, StopKind::Instruction) => "address",
            _ => "line number",
        };
        let target = match keyword {
            "in" => scanner
                .next_name()
                .map_err(|problem| self.invalid(problem))?,
            _ => self.next_word(scanner)?,
        }
        .ok_or_else(|| self.invalid(format!("missing {what}")))?
        .text;
        match (keyword, kind) {
            ("in", _) => function_name(self.name, &target),
            (_, StopKind::Instruction) => Ok(Location::Address(target)),
            _ => dbx_line(self.name, &target),
        }
    }

    /// `-if EXPR`, `-count N`, `-temp` (and gdb's `if EXPR`) in any order;
    /// the condition runs to the end of the line, except that trailing
    /// `-temp` and `-count N` words are still taken as options.
    fn stop_options(
        &self,
        mut spec: BreakpointSpec,
        mut scanner: Scanner,
    ) -> Result<BreakpointSpec> {
        while let Some(word) = self.next_word(&mut scanner)? {
            match word.text.as_str() {
                "-if" | "if" => {
                    let condition = self.trailing_options(scanner.rest(), &mut spec)?;
                    if condition.is_empty() {
                        return Err(self.invalid(format!("missing expression after {}", word.text)));
                    }
                    spec.condition = Some(condition);
                    break;
                }
                "-count" => {
                    let count = self
                        .next_word(&mut scanner)?
                        .ok_or_else(|| self.invalid("missing number after -count"))?;
                    spec.count = Some(number(self.name, &count.text, "count", 1)?);
                }
                "-temp" => spec.temporary = true,
                other => return Err(self.invalid(format!("unexpected \"{other}\""))),
            }
        }
        Ok(spec)
    }

    /// Takes `-temp` and `-count N` off the end of a condition.
    fn trailing_options(&self, condition: &str, spec: &mut BreakpointSpec) -> Result<String> {
        let mut words: Vec<&str> = condition.split_whitespace().collect();
        loop {
            match words.as_slice() {
                [.., "-temp"] => {
                    spec.temporary = true;
                    words.pop();
                }
                [.., "-count", n] if n.bytes().all(|b| b.is_ascii_digit()) => {
                    spec.count = Some(number(self.name, n, "count", 1)?);
                    words.truncate(words.len() - 2);
                }
                _ => break,
            }
        }
        // Cut the original text after the last kept word, so that spacing
        // inside the expression (string literals) is kept as typed.
        let end = words.last().map_or(0, |last| {
            last.as_ptr() as usize - condition.as_ptr() as usize + last.len()
        });
        Ok(condition[..end].trim().to_string())
    }

    fn next_word(&self, scanner: &mut Scanner) -> Result<Option<Word>> {
        scanner.next_word().map_err(|problem| self.invalid(problem))
    }

    fn when(&self) -> Result<Command> {
        let braces = find_braces(self.text).map_err(|problem| self.invalid(problem))?;
        let Some((open, close)) = braces else {
            return Err(self.invalid("missing { COMMANDS }"));
        };
        let close = close.ok_or_else(|| self.invalid("missing closing }"))?;
        if let Some(extra) = non_empty(&self.text[close + 1..]) {
            return Err(self.invalid(format!("unexpected \"{extra}\" after }}")));
        }
        let header = Args {
            text: &self.text[..open],
            ..*self
        };
        let spec = header.stop(StopKind::Dbx)?;
        let body_text = self.text[open + 1..close].trim().to_string();
        if self.nesting >= MAX_WHEN_NESTING {
            return Err(self.invalid(format!("when bodies nest at most {MAX_WHEN_NESTING} deep")));
        }
        let mut body = Vec::new();
        for part in split_top_level(&body_text, ';').map_err(|problem| self.invalid(problem))? {
            // An error in a nested body is said once, not once per level.
            let parsed = parse_nested(part, self.nesting + 1).map_err(|e| match e {
                ParseError::WhenBody(_) => e,
                other => ParseError::WhenBody(Box::new(other)),
            });
            match parsed? {
                Command::Nothing => {}
                command => body.push(command),
            }
        }
        Ok(Command::When {
            spec,
            body_text,
            body,
        })
    }

    /// `all`, or breakpoint numbers separated by blanks or commas. Nothing
    /// at all means all only where `empty_is_all`.
    fn selection(&self, empty_is_all: bool) -> Result<Selection> {
        let words = self.words()?;
        let texts: Vec<&str> = words
            .iter()
            .flat_map(|w| w.text.split(','))
            .filter(|t| !t.is_empty())
            .collect();
        match texts.as_slice() {
            [] if empty_is_all => Ok(Selection::All),
            [] => Err(self.invalid("missing number (or \"all\")")),
            ["all"] => Ok(Selection::All),
            _ => texts
                .iter()
                .map(|t| number(self.name, t, "number", 1))
                .collect::<Result<Vec<_>>>()
                .map(Selection::Ids),
        }
    }

    fn clear(&self) -> Result<Command> {
        let location = self.optional_word()?;
        let location = location
            .map(|loc| gdb_location(self.name, &loc))
            .transpose()?;
        Ok(Command::Clear(location))
    }

    /// dbx `ignore SIG...` or gdb `ignore N COUNT`: two numbers mean the
    /// latter, as no one ignores two signals by number in one go that way.
    fn ignore(&self) -> Result<Command> {
        let words = self.words()?;
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        if let [id, count] = texts.as_slice() {
            if let (Ok(id), Ok(count)) = (id.parse::<u32>(), count.parse::<u32>()) {
                return Ok(Command::IgnoreCount { id, count });
            }
        }
        if texts.is_empty() {
            return Ok(Command::Signals(SignalCommand::Show(SignalFilter::Ignored)));
        }
        let disposition = Disposition {
            stop: Some(false),
            print: Some(false),
            pass: Some(true),
        };
        Ok(Command::Signals(SignalCommand::Set {
            signals: self.signals(&texts)?,
            disposition,
        }))
    }

    fn catch(&self) -> Result<Command> {
        let words = self.words()?;
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        if texts.is_empty() {
            return Ok(Command::Signals(SignalCommand::Show(SignalFilter::Caught)));
        }
        let disposition = Disposition {
            stop: Some(true),
            print: Some(true),
            pass: None,
        };
        Ok(Command::Signals(SignalCommand::Set {
            signals: self.signals(&texts)?,
            disposition,
        }))
    }

    fn handle(&self) -> Result<Command> {
        let words = self.words()?;
        let mut signals = Vec::new();
        let mut disposition = Disposition::default();
        for word in &words {
            let d = &mut disposition;
            match word.text.to_ascii_lowercase().as_str() {
                "stop" => (d.stop, d.print) = (Some(true), Some(true)),
                "nostop" => d.stop = Some(false),
                "print" => d.print = Some(true),
                "noprint" => (d.stop, d.print) = (Some(false), Some(false)),
                "pass" | "noignore" => d.pass = Some(true),
                "nopass" | "ignore" => d.pass = Some(false),
                "all" => signals.extend(Signal::all_handleable()),
                _ => signals.extend(self.signals(&[word.text.as_str()])?),
            }
        }
        let command = if signals.is_empty() && disposition == Disposition::default() {
            SignalCommand::Show(SignalFilter::All)
        } else if signals.is_empty() {
            return Err(self.invalid("missing signal name"));
        } else if disposition == Disposition::default() {
            SignalCommand::Show(SignalFilter::Only(signals))
        } else {
            SignalCommand::Set {
                signals,
                disposition,
            }
        };
        Ok(Command::Signals(command))
    }

    fn signals(&self, texts: &[&str]) -> Result<Vec<Signal>> {
        texts
            .iter()
            .map(|text| {
                Signal::parse(text)
                    .ok_or_else(|| self.invalid(format!("unknown signal \"{text}\"")))
            })
            .collect()
    }

    fn condition(&self) -> Result<Command> {
        let mut scanner = Scanner::new(self.text);
        let id = self
            .next_word(&mut scanner)?
            .ok_or_else(|| self.invalid("missing breakpoint number"))?;
        Ok(Command::Condition {
            id: number(self.name, &id.text, "breakpoint number", 1)?,
            condition: non_empty(scanner.rest()),
        })
    }

    fn cont(&self) -> Result<Command> {
        let mut count = None;
        let mut signal = Delivery::Pending;
        let words = self.words()?;
        let mut words = words.iter().map(|w| w.text.as_str());
        while let Some(word) = words.next() {
            if word == "sig" || word == "-sig" {
                let name = words
                    .next()
                    .ok_or_else(|| self.invalid("missing signal after sig"))?;
                signal = match name {
                    "0" => Delivery::Cancel,
                    _ => Delivery::Signal(self.signals(&[name])?[0]),
                };
            } else if count.is_none() {
                count = Some(number(self.name, word, "count", 1)?);
            } else {
                return Err(self.invalid(format!("unexpected argument \"{word}\"")));
            }
        }
        Ok(Command::Continue { count, signal })
    }

    fn step(&self) -> Result<Command> {
        let words = self.words()?;
        match words.first().map(|w| w.text.as_str()) {
            Some("up") => Args {
                name: "step up",
                text: &self.text[words[0].end..],
                ..*self
            }
            .none(Command::StepUp),
            _ => Ok(Command::Step {
                count: self.count()?,
            }),
        }
    }

    fn registers(&self) -> Result<Command> {
        let names = self
            .words()?
            .into_iter()
            .map(|w| w.text.trim_start_matches('$').to_string())
            .collect();
        Ok(Command::Registers { names })
    }

    fn list(&self) -> Result<ListTarget> {
        let Some(word) = self.optional_word()? else {
            return Ok(ListTarget::Next);
        };
        if word == "-" {
            return Ok(ListTarget::Previous);
        }
        let Some((start, last)) = word.split_once(',') else {
            return gdb_location(self.name, &word).map(ListTarget::Around);
        };
        let Location::Line { file, line: first } = dbx_line(self.name, start)? else {
            unreachable!("dbx_line gives lines only")
        };
        let last = number(self.name, last, "line number", 1)?;
        if last < first {
            return Err(self.invalid(format!("line range {first},{last} runs backwards")));
        }
        Ok(ListTarget::Range { file, first, last })
    }

    fn disassemble(&self) -> Result<Command> {
        let words = self.words()?;
        let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
        let (start, count) = match texts.as_slice() {
            [] => (None, None),
            [start] => (Some(code_location(self.name, start)?), None),
            [start, count] => (
                Some(code_location(self.name, start)?),
                Some(number(self.name, count, "instruction count", 1)?),
            ),
            [_, _, extra, ..] => {
                return Err(self.invalid(format!("unexpected argument \"{extra}\"")))
            }
        };
        let gdb_style = self.typed != "dis" && count.is_none();
        Ok(Command::Disassemble {
            start,
            count,
            gdb_style,
        })
    }

    /// gdb `x[/NFU] [ADDR]` and dbx `examine [ADDR] [/NFU]` (also
    /// `examine ADDR / N F`). `x/Ni` disassembles.
    fn examine(&self) -> Result<Command> {
        let text = self.text.trim();
        let (units, address) = if self.typed == "x" {
            match text.strip_prefix('/') {
                Some(spec) => {
                    let end = spec.find(char::is_whitespace).unwrap_or(spec.len());
                    (Some(&spec[..end]), &spec[end..])
                }
                None => (None, text),
            }
        } else {
            split_examine_units(text)
        };
        let (count, format, size) = match units {
            Some(units) => self.examine_units(units)?,
            None => (None, None, None),
        };
        let address = non_empty(address);
        if format == Some('i') {
            let address = address.unwrap_or_else(|| "$pc".to_string());
            return Ok(Command::Disassemble {
                start: Some(code_location(self.name, &address)?),
                count: Some(count.unwrap_or(1)),
                gdb_style: false,
            });
        }
        Ok(Command::Examine(ExamineSpec {
            address,
            count: count.unwrap_or(1),
            format,
            size,
        }))
    }

    /// `NFU`: a count, then format and size letters in any order.
    fn examine_units(&self, text: &str) -> Result<(Option<u32>, Option<char>, Option<char>)> {
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let digits_end = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let count = match &text[..digits_end] {
            "" => None,
            digits => Some(number(self.name, digits, "count", 1)?),
        };
        let (mut format, mut size) = (None, None);
        for letter in text[digits_end..].chars() {
            let slot = if "bhwg".contains(letter) {
                &mut size
            } else if EXAMINE_FORMATS.contains(letter) {
                &mut format
            } else {
                return Err(self.invalid(format!(
                    "unknown letter \"{letter}\" in \"/{text}\" (formats {EXAMINE_FORMATS}, sizes bhwg)"
                )));
            };
            if slot.replace(letter).is_some() {
                return Err(self.invalid(format!("two formats or two sizes in \"/{text}\"")));
            }
        }
        Ok((count, format, size))
    }

    fn print(&self) -> Result<PrintSpec> {
        let (format, expr) = self.format_and_expression()?;
        let expr = expr.ok_or_else(|| self.invalid("missing expression"))?;
        Ok(PrintSpec {
            expr,
            format,
            gdb_style: self.typed == "p" || self.text.starts_with('/'),
        })
    }

    fn display(&self) -> Result<Command> {
        let (format, expr) = self.format_and_expression()?;
        if format.is_some() && expr.is_none() {
            return Err(self.invalid("missing expression"));
        }
        Ok(Command::Display { expr, format })
    }

    /// `/FMT EXPR` (gdb) or `-FMT EXPR` (dbx); `--` ends dbx options, and a
    /// lone `-x` is the expression "minus x".
    fn format_and_expression(&self) -> Result<(Option<char>, Option<String>)> {
        let text = self.text.trim_start();
        if let Some(spec) = text.strip_prefix('/') {
            let end = spec.find(char::is_whitespace).unwrap_or(spec.len());
            let format = self.format_letter(&spec[..end])?;
            return Ok((Some(format), non_empty(&spec[end..])));
        }
        if let Some(rest) = text.strip_prefix("--") {
            if rest.starts_with(char::is_whitespace) {
                return Ok((None, non_empty(rest)));
            }
        }
        if let Some(option) = text.strip_prefix('-') {
            let end = option.find(char::is_whitespace).unwrap_or(option.len());
            let expr = non_empty(&option[end..]);
            if end == 1 && FORMATS.contains(&option[..1]) && expr.is_some() {
                return Ok((Some(self.format_letter(&option[..1])?), expr));
            }
        }
        Ok((None, non_empty(text)))
    }

    fn format_letter(&self, text: &str) -> Result<char> {
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if FORMATS.contains(c) => Ok(c),
            _ => Err(self.invalid(format!(
                "unknown format \"{text}\" (one of {})",
                FORMATS
                    .chars()
                    .map(String::from)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    /// `dbxenv [NAME [VALUE]]`; names may be spelled with `-` for `_`.
    fn dbxenv(&self, text: &str) -> Result<Command> {
        let words = Scanner::new(text)
            .all_words()
            .map_err(|problem| self.invalid(problem))?;
        let mut words = words.into_iter().map(|w| w.text);
        let name = words.next().map(|n| n.replace('-', "_"));
        if let Some(name) = &name {
            if !DBXENV_SETTINGS.contains(&name.as_str()) {
                return Err(self.invalid(format!(
                    "unknown setting \"{name}\" (one of {})",
                    DBXENV_SETTINGS.join(" ")
                )));
            }
        }
        let value = words.next();
        if let Some(extra) = words.next() {
            return Err(self.invalid(format!("unexpected argument \"{extra}\"")));
        }
        Ok(Command::Dbxenv { name, value })
    }

    fn assign(&self) -> Result<Command> {
        let mut text = self.text.trim();
        if self.typed == "set" {
            // gdb-like spellings of the settings: `set call-timeout 5`.
            let first = text.split_whitespace().next().unwrap_or("");
            if DBXENV_SETTINGS.contains(&first.replace('-', "_").as_str()) {
                return self.dbxenv(text);
            }
            // gdb `set backtrace past-main on|off`.
            if let Some(value) = text
                .strip_prefix("backtrace")
                .map(str::trim_start)
                .and_then(|rest| rest.strip_prefix("past-main"))
            {
                return self.dbxenv(&format!("stack_past_main {value}"));
            }
            // gdb `set var X = Y`, `set variable X = Y`, `set X = Y`.
            for keyword in ["variable", "var"] {
                if let Some(rest) = text.strip_prefix(keyword) {
                    if rest.starts_with(char::is_whitespace) {
                        text = rest.trim_start();
                        break;
                    }
                }
            }
        }
        let at = find_assignment(text).map_err(|problem| self.invalid(problem))?;
        let Some(at) = at else {
            return Err(self.invalid("missing \"= EXPR\""));
        };
        let (target, value) = (text[..at].trim(), text[at + 1..].trim());
        if target.is_empty() || value.is_empty() {
            return Err(self.invalid("missing expression on one side of ="));
        }
        Ok(Command::Assign {
            target: target.to_string(),
            value: value.to_string(),
            gdb_style: self.typed == "set",
        })
    }

    fn help(&self) -> Result<Command> {
        let Some(topic) = non_empty(self.text) else {
            return Ok(Command::Help(None));
        };
        if find_help(&topic).is_some() || topic == "info" || topic == "i" {
            return Ok(Command::Help(Some(topic)));
        }
        let hint = match suggest(&topic) {
            Some(name) => format!("; did you mean \"{name}\"?"),
            None => String::new(),
        };
        Err(self.invalid(format!("no command named \"{topic}\"{hint}")))
    }

    fn source(&self) -> Result<Command> {
        self.optional_word()?
            .map(Command::Source)
            .ok_or_else(|| self.invalid("missing file name"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StopKind {
    /// `stop in F`, `stop at LINE`.
    Dbx,
    /// `stopi at ADDR`.
    Instruction,
    /// `break LOC`.
    Gdb,
}

/// `info SUBCOMMAND`, with gdb's unique-prefix abbreviations.
fn parse_info(rest: &str, nesting: usize) -> Result<Command> {
    const SUBCOMMANDS: [(&str, usize, &str); 8] = [
        ("breakpoints", 1, "status"),
        ("registers", 1, "regs"),
        ("threads", 2, "threads"),
        ("sharedlibrary", 2, "loadobjects"),
        ("signals", 3, "handle"),
        ("handle", 3, "handle"),
        ("locals", 2, "dump"),
        ("args", 2, "info args"),
    ];
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (sub, args) = rest.split_at(end);
    let found = SUBCOMMANDS
        .iter()
        .find(|(full, min, _)| sub.len() >= *min && full.starts_with(sub));
    let Some((_, _, name)) = found else {
        let problem = if sub.is_empty() {
            "missing subcommand".to_string()
        } else {
            format!("unknown subcommand \"{sub}\"")
        };
        return Err(ParseError::Invalid {
            command: "info".to_string(),
            problem,
            usage: "info breakpoints | info threads | info registers [REG...] | \
                    info sharedlibrary | info signals [SIGNAL...] | info locals | info args"
                .to_string(),
        });
    };
    Args {
        name,
        typed: "info",
        text: args,
        nesting,
    }
    .dispatch()
}

/// dbx `ADDR / NFU`: the units after the last `/` when they look like
/// units (`p / 2` is taken as 2 units of p: parenthesize a division).
fn split_examine_units(text: &str) -> (Option<&str>, &str) {
    let Some(slash) = text.rfind('/') else {
        return (None, text);
    };
    let units = text[slash + 1..].trim();
    let looks_like_units = !units.is_empty()
        && units
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_whitespace() || c.is_ascii_lowercase())
        && units
            .chars()
            .filter(|c| c.is_ascii_lowercase())
            .all(|c| "bhwg".contains(c) || EXAMINE_FORMATS.contains(c));
    if looks_like_units {
        (Some(units), &text[..slash])
    } else {
        (None, text)
    }
}

/// The text after gdb's `complete` command word, kept as typed to its
/// end: a trailing blank asks for the completions of an empty word.
fn complete_argument(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let rest = line.strip_prefix("complete")?;
    if rest.is_empty() {
        return Some(rest);
    }
    rest.strip_prefix(|c: char| c.is_whitespace())
}

/// A thread id as dbx prints it (`t@2`) or as gdb takes it (`2`).
fn thread_id(command: &str, text: &str) -> Result<u32> {
    let digits = text.strip_prefix("t@").unwrap_or(text);
    match digits.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(invalid(
            command,
            format!("invalid thread id \"{text}\" (expected t@N or N, as threads lists them)"),
        )),
    }
}

fn invalid(name: &str, problem: impl Into<String>) -> ParseError {
    ParseError::Invalid {
        command: name.to_string(),
        problem: problem.into(),
        usage: usage_of(name).to_string(),
    }
}

fn non_empty(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// A decimal number of at least `min`.
fn number(command: &str, text: &str, what: &str, min: u32) -> Result<u32> {
    match text.parse::<u32>() {
        Ok(n) if n >= min => Ok(n),
        Ok(_) if min == 1 => Err(invalid(
            command,
            format!("{what} must be positive, got {text}"),
        )),
        _ => Err(invalid(
            command,
            format!("invalid {what} \"{text}\" (expected a non-negative integer)"),
        )),
    }
}

/// dbx `stop at`: `LINE` or `FILE:LINE`.
fn dbx_line(command: &str, text: &str) -> Result<Location> {
    let (file, line) = match text.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => (Some(file.to_string()), line),
        Some(_) => return Err(invalid(command, format!("missing file name in \"{text}\""))),
        None => (None, text),
    };
    let line = match line.parse::<u32>() {
        Ok(line) if line > 0 => line,
        _ => return Err(invalid(command, format!("invalid line number \"{line}\""))),
    };
    Ok(Location::Line { file, line })
}

/// A function name as `stop in` takes it: anything but a number.
fn function_name(command: &str, text: &str) -> Result<Location> {
    if text.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(invalid(
            command,
            format!("\"{text}\" is not a function name"),
        ));
    }
    Ok(Location::Function(text.to_string()))
}

/// gdb's linespecs: `*ADDR`, `LINE`, `FILE:LINE`, `FILE:FUNC`, `FUNC`.
/// Qualified names (`ns::f`) contain `::`, which never separates a file.
fn gdb_location(command: &str, text: &str) -> Result<Location> {
    if let Some(address) = text.strip_prefix('*') {
        return match non_empty(address) {
            Some(address) => Ok(Location::Address(address)),
            None => Err(invalid(command, "missing address after *")),
        };
    }
    if text.starts_with("0x") || text.starts_with("0X") {
        return Ok(Location::Address(text.to_string()));
    }
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return dbx_line(command, text);
    }
    match single_colon(text) {
        Some(at) if text[at + 1..].bytes().all(|b| b.is_ascii_digit()) => dbx_line(command, text),
        Some(at) => {
            let (file, function) = (&text[..at], &text[at + 1..]);
            if file.is_empty() || function.is_empty() {
                return Err(invalid(command, format!("invalid location \"{text}\"")));
            }
            Ok(Location::FunctionInFile {
                file: file.to_string(),
                function: function.to_string(),
            })
        }
        None => function_name(command, text),
    }
}

/// The first `:` that is not half of a `::`.
fn single_colon(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b':' && bytes.get(i + 1) != Some(&b':') && (i == 0 || bytes[i - 1] != b':')
    })
}

/// Where disassembly starts: numbers and `$registers` are addresses
/// (`dis 4198400`), otherwise a gdb location.
fn code_location(command: &str, text: &str) -> Result<Location> {
    if text.starts_with(|c: char| c.is_ascii_digit() || c == '$') {
        return Ok(Location::Address(text.to_string()));
    }
    gdb_location(command, text)
}
