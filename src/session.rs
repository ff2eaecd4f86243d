//! A debugging session: executes parsed commands against the engine and
//! prints what happened, in dbx's formats.

mod analyze;
mod collector;
mod data;
mod heap;

use crate::collector::Termination;
use crate::format::{self, Sources};
use anyhow::{anyhow, bail, Context as _, Result};
use commands::{
    BreakpointSpec, Command, Delivery, ListTarget, Location, Redirects, Selection, SignalCommand,
    SignalFilter,
};
use debugger::breakpoints::{Action, LocationSpec};
use debugger::engine::{Debugger, Notice, Stop, StopReason};
use debugger::expr::{self, EvalContext};
use debugger::inferior::{LaunchSpec, StopCause};
use debugger::signals::{signal_description, signal_name, Disposition};
use debugger::stepping::StepKind;
use debugger::value::Value;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Words offered by Tab completion.
#[derive(Default)]
pub struct CompletionWords {
    pub commands: Vec<String>,
    pub functions: Vec<String>,
    pub files: Vec<String>,
}

impl crate::complete::Source for Session {
    fn commands(&self) -> Vec<String> {
        self.completion_words().commands.clone()
    }

    fn functions(&self) -> Vec<String> {
        self.completion_words().functions.clone()
    }

    fn files(&self) -> Vec<String> {
        self.completion_words().files.clone()
    }

    fn variables(&self) -> Vec<String> {
        let mut names = if self.process_is_stopped() {
            SessionEval {
                dbg: &self.dbg,
                history: &self.history,
            }
            .visible_names()
        } else {
            // Before the program runs, its globals are all there is.
            self.dbg
                .objects()
                .main()
                .map(|main| main.file.data_names())
                .unwrap_or_default()
        };
        // Only what an expression can name: not `completed.0`, a static
        // the compiler renamed.
        names.retain(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        });
        names
    }

    fn members(&self, expression: &str) -> Vec<String> {
        if !self.process_is_stopped() {
            return Vec::new();
        }
        self.member_names(expression)
    }
}

/// A `when` body: the text for `status` and the commands to run.
struct WhenBody {
    text: String,
    commands: Vec<Command>,
}

/// How deep `source` may nest (a script that sources itself would
/// otherwise recurse until rdbx's stack overflows).
const MAX_SCRIPT_DEPTH: u32 = 32;

pub struct Session {
    dbg: Debugger,
    /// Scripts being run now, one inside the other (`source`, `-x`).
    script_depth: u32,
    sources: Sources,
    when_bodies: Vec<WhenBody>,
    quit: bool,
    /// gdb's value history: `$1`, `$2`...
    history: Vec<Value>,
    /// Expressions shown at every stop, and the last number given.
    displays: Vec<data::Display>,
    next_display: u32,
    examine_state: data::ExamineState,
    /// Where `list` with no argument continues.
    list_cursor: Option<(PathBuf, String, u32)>,
    args: Vec<String>,
    redirects: Redirects,
    completion: std::cell::OnceCell<Rc<CompletionWords>>,
    collector_settings: crate::collector::Settings,
    /// The experiment of the current or last process.
    experiment: Option<collector::Experiment>,
    /// Experiments of the live process closed by `collector disable`
    /// before `collector enable` started another; finished at its end.
    earlier_experiments: Vec<collector::Experiment>,
    /// The analysis of the last experiment `analyze` opened; its settings
    /// (metrics, selections) last as long as it is the experiment shown.
    analysis: Option<(PathBuf, analyzer::Analysis)>,
    /// `dbxenv stack_past_main`: `where` and `up` go below `main`.
    stack_past_main: bool,
    /// The leaks `showleaks` has listed, for the next one to list only
    /// those new since.
    leaks_shown: heap::LeaksShown,
    /// What an empty line at the prompt runs again.
    repeatable: Option<Command>,
    last_failed: bool,
}

impl Session {
    pub fn new() -> Result<Session> {
        let mut dbg = Debugger::new()?;
        // Threads, forks and execs are told as they happen, not at the stop.
        dbg.set_notice_sink(Box::new(print_notice));
        Ok(Session {
            dbg,
            script_depth: 0,
            sources: Sources::default(),
            when_bodies: Vec::new(),
            quit: false,
            history: Vec::new(),
            displays: Vec::new(),
            next_display: 0,
            examine_state: Default::default(),
            list_cursor: None,
            args: Vec::new(),
            redirects: Redirects::default(),
            completion: Default::default(),
            collector_settings: Default::default(),
            experiment: None,
            earlier_experiments: Vec::new(),
            analysis: None,
            stack_past_main: false,
            leaks_shown: Default::default(),
            repeatable: None,
            last_failed: false,
        })
    }

    pub fn load_program(&mut self, program: &str, args: &[String]) -> Result<()> {
        let path = find_program(program)?;
        self.dbg.load(&path)?;
        self.args = args.to_vec();
        self.completion = Default::default();
        Ok(())
    }

    /// A program is loaded (from the command line, or by `attach`).
    pub fn has_program(&self) -> bool {
        self.dbg.program().is_some()
    }

    pub fn quit_requested(&self) -> bool {
        self.quit
    }

    /// The user thought better of `quit`.
    pub fn cancel_quit(&mut self) {
        self.quit = false;
    }

    /// The process rdbx started and would kill on quit, if one is alive.
    pub fn started_process(&self) -> Option<i32> {
        self.dbg
            .process()
            .ok()
            .filter(|p| p.started_here())
            .map(|p| p.pid())
    }

    /// Leaves nothing behind: a process we started is killed, one we
    /// attached to is detached and goes on running.
    pub fn shutdown(&mut self) {
        if self.attached() {
            if let Err(e) = self.detach() {
                eprintln!("rdbx: {e:#}");
            }
            return;
        }
        self.kill_process();
    }

    /// `rdbx -p PID [PROGRAM]` and `attach PID`: attaches, says so and
    /// shows where the process stopped, as a stop would.
    pub fn attach(&mut self, pid: i32, program: Option<&str>) -> Result<()> {
        if self.dbg.is_running() {
            bail!("a process is already being debugged (kill or detach first)");
        }
        let program = program.map(find_program).transpose()?;
        self.dbg.attach(pid, program.as_deref())?;
        self.completion = Default::default();
        let threads = self.dbg.process()?.thread_count();
        let shown = self
            .dbg
            .program()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let plural = if threads == 1 { "" } else { "s" };
        println!("Attached to process {pid} (program {shown}), {threads} thread{plural}");
        self.print_notices();
        let stop = Stop {
            tid: self.dbg.current_thread(),
            reason: StopReason::Interrupted,
        };
        self.report_stop(&stop);
        Ok(())
    }

    /// Lets the process go on untraced (breakpoints stay defined).
    fn detach(&mut self) -> Result<()> {
        let pid = self.dbg.process()?.pid();
        self.collection_detached();
        self.dbg.detach()?;
        println!("Detached from process {pid}");
        Ok(())
    }

    /// The process being debugged was attached to, not started by us.
    fn attached(&self) -> bool {
        self.dbg.process().ok().is_some_and(|p| !p.started_here())
    }

    /// Command, function and file names, read once per program.
    fn completion_words(&self) -> Rc<CompletionWords> {
        if let Some(words) = self.completion.get() {
            return words.clone();
        }
        let mut words = CompletionWords {
            commands: commands::command_names()
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..Default::default()
        };
        if let Some(main) = self.dbg.objects().main() {
            words.functions = main.file.function_names();
            words.files = main
                .file
                .source_files()
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
        }
        let words = Rc::new(words);
        let _ = self.completion.set(words.clone());
        words
    }

    /// The member names of the structure `text` evaluates to or points to,
    /// from the decoded value. A pointer that cannot be followed (NULL) is
    /// cast onto the stack, which is readable: only its type's member
    /// names are used, never those bytes.
    fn member_names(&self, text: &str) -> Vec<String> {
        let Ok(value) = self.evaluate_typed_with_history(text) else {
            return Vec::new();
        };
        let value = match value.plain() {
            Value::Pointer { type_name, .. } => {
                let target = self
                    .evaluate_typed_with_history(&format!("*({text})"))
                    .or_else(|_| self.evaluate_typed_with_history(&format!("*({type_name})$sp")));
                match target {
                    Ok(target) => target,
                    Err(_) => return Vec::new(),
                }
            }
            _ => value,
        };
        match value.plain() {
            Value::Composite {
                parts: Some(parts), ..
            } => match parts.as_ref() {
                debugger::value::Aggregate::Struct(members) => members
                    .iter()
                    .map(|(name, _)| name.clone())
                    .filter(|name| !name.is_empty() && !name.starts_with('<'))
                    .collect(),
                debugger::value::Aggregate::Array { .. } => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// Runs the commands of a file; it failed if one of them did.
    pub fn run_script(&mut self, path: &Path) {
        if self.script_depth >= MAX_SCRIPT_DEPTH {
            eprintln!(
                "rdbx: {}: scripts nested too deeply (the limit is {MAX_SCRIPT_DEPTH}); not run",
                path.display()
            );
            self.last_failed = true;
            return;
        }
        self.script_depth += 1;
        self.run_script_lines(path);
        self.script_depth -= 1;
    }

    fn run_script_lines(&mut self, path: &Path) {
        let mut failed = false;
        match std::fs::read_to_string(path) {
            Ok(text) => {
                for line in text.lines() {
                    self.execute_line(line);
                    failed |= self.last_failed;
                    if self.quit {
                        break;
                    }
                }
            }
            Err(e) => {
                eprintln!("rdbx: {}: {e}", path.display());
                failed = true;
            }
        }
        self.last_failed = failed;
    }

    /// Parses and runs one line; errors are printed as one line.
    pub fn execute_line(&mut self, line: &str) {
        let command = match commands::parse(line) {
            Ok(command) => command,
            Err(e) => {
                eprintln!("rdbx: {e}");
                self.last_failed = true;
                return;
            }
        };
        if command != Command::Nothing {
            self.repeatable = repeated_form(&command);
        }
        self.run_command(command);
    }

    /// A line typed at the prompt, or read from a pipe in its place: as in
    /// gdb, an empty line repeats the last `next`, `step`, `cont`, `stepi`
    /// or `nexti`, and continues the last `x` after the memory it showed.
    pub fn execute_typed_line(&mut self, line: &str) {
        if !line.trim().is_empty() {
            return self.execute_line(line);
        }
        if let Some(command) = self.repeatable.clone() {
            self.run_command(command);
        }
    }

    fn run_command(&mut self, command: Command) {
        // Set before: `source` leaves its script's verdict here.
        self.last_failed = false;
        if let Err(e) = self.execute(command) {
            eprintln!("rdbx: {e:#}");
            self.last_failed = true;
        }
        self.print_notices();
    }

    /// The last command (a script counts as one) failed, as `--batch`'s
    /// exit status tells.
    pub fn last_command_failed(&self) -> bool {
        self.last_failed
    }

    fn execute(&mut self, command: Command) -> Result<()> {
        match command {
            Command::Nothing => Ok(()),
            Command::Run { args, redirects } => {
                if let Some(args) = args {
                    self.args = args;
                    self.redirects = redirects;
                }
                self.start_and_run()
            }
            Command::Rerun { args, redirects } => {
                self.args = args;
                self.redirects = redirects;
                self.start_and_run()
            }
            Command::Kill => {
                let pid = self.dbg.process()?.pid();
                let attached = self.attached();
                self.kill_process();
                match attached {
                    // As gdb: `kill` never kills what we did not start.
                    true => println!("Detached from process {pid} (rdbx kills only processes it started)"),
                    false => println!("process {pid} killed"),
                }
                Ok(())
            }
            Command::Quit => {
                self.quit = true;
                Ok(())
            }
            Command::Attach { pid } => {
                let pid = i32::try_from(pid).map_err(|_| anyhow!("no process {pid}"))?;
                self.attach(pid, None)
            }
            Command::Detach => self.detach(),
            Command::Stop(spec) => self.add_breakpoint(spec, Action::Stop),
            Command::Halt => bail!(
                "\"stop\" needs a location (stop in FUNC, stop at LINE); a bare \"stop\" belongs in a when body"
            ),
            Command::When {
                spec,
                body_text,
                body,
            } => {
                self.when_bodies.push(WhenBody {
                    text: body_text,
                    commands: body,
                });
                let index = self.when_bodies.len() - 1;
                self.add_breakpoint(spec, Action::When(index))
            }
            Command::Status => {
                self.status();
                Ok(())
            }
            Command::Delete(selection) => self.delete(selection),
            Command::Clear(location) => self.clear(location),
            Command::IgnoreCount { id, count } => {
                self.dbg.ignore_breakpoint_hits(id, u64::from(count))?;
                println!("will ignore next {count} crossings of breakpoint ({id})");
                Ok(())
            }
            Command::Condition { id, condition } => {
                if let Some(text) = &condition {
                    expr::parse(text)?;
                }
                self.dbg.set_breakpoint_condition(id, condition)?;
                Ok(())
            }
            Command::Enable(selection) => self.set_enabled(selection, true),
            Command::Disable(selection) => self.set_enabled(selection, false),
            Command::Continue { count, signal } => self.cont(count, signal),
            Command::Step { count } => self.repeat(count, |s| s.step(StepKind::Into)),
            Command::Next { count } => self.repeat(count, |s| s.step(StepKind::Over)),
            Command::StepUp => self.step_up(),
            Command::StepInstruction { count } => self.repeat(count, |s| s.step_instruction(false)),
            Command::NextInstruction { count } => self.repeat(count, |s| s.step_instruction(true)),
            Command::Where { depth, thread } => {
                self.where_(depth.map(|d| d as usize), thread)
            }
            Command::Up { count } => self.up(count),
            Command::Down { count } => self.down(count),
            Command::Frame { number } => self.frame(number),
            Command::Threads => self.threads(),
            Command::Thread { id } => self.select_thread(id),
            Command::Registers { names } => self.registers(&names),
            Command::List(target) => self.list(target),
            Command::Disassemble {
                start,
                count,
                gdb_style,
            } => self.disassemble(start, count, gdb_style),
            Command::LoadObjects => {
                self.load_objects();
                Ok(())
            }
            Command::Print(spec) => self.print(spec),
            Command::Call(text) => self.call(&text),
            Command::Complete(text) => {
                for line in crate::complete::completed_lines(&text, self) {
                    println!("{line}");
                }
                Ok(())
            }
            Command::Dbxenv { name, value } => self.dbxenv(name.as_deref(), value.as_deref()),
            Command::Whatis(text) => self.whatis(&text),
            Command::Ptype(text) => self.ptype(&text),
            Command::Display { expr, format } => self.display(expr, format),
            Command::Undisplay(selection) => self.undisplay(selection),
            Command::Examine(spec) => self.examine(spec),
            Command::Dump { function } => self.dump(function.as_deref()),
            Command::Arguments => self.arguments(),
            Command::ShowLeaks(view) => self.show_leaks(view),
            Command::ShowMemUse(view) => self.show_mem_use(view),
            Command::ShowBlock { address, json } => self.show_block(&address, json),
            Command::Assign {
                target,
                value,
                gdb_style,
            } => self.assign(&target, &value, gdb_style),
            Command::Signals(command) => self.signals(command),
            Command::Help(topic) => {
                match topic {
                    None => print!("{}", commands::help_summary()),
                    Some(topic) => match commands::help_for(&topic) {
                        Some(text) => println!("{text}"),
                        None => bail!("no help for \"{topic}\""),
                    },
                }
                Ok(())
            }
            Command::Source(file) => {
                // Its errors were told; `last_failed` says whether one was.
                self.run_script(Path::new(&file));
                Ok(())
            }
            Command::Collector(command) => self.collector(command),
            Command::Analyze(line) => self.analyze(line.as_deref()),
            Command::Crash(kind) => crash(kind),
        }
    }

    fn print_notices(&mut self) {
        for notice in self.dbg.take_notices() {
            print_notice(&notice);
        }
    }

    // ----- running -----------------------------------------------------

    fn start_and_run(&mut self) -> Result<()> {
        let program = self
            .dbg
            .program()
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow!("no program to run; give one on the command line"))?;
        // The experiment of a process killed by rerun ends here.
        self.kill_process();
        let env = self.prepare_collection(&program)?;
        let spec = LaunchSpec {
            program: program.clone(),
            args: self.args.clone(),
            stdin: self.redirects.stdin.as_ref().map(PathBuf::from),
            stdout: self.redirects.stdout.as_ref().map(PathBuf::from),
            append_stdout: self.redirects.append,
            env,
        };
        let pid = match self.dbg.start(spec) {
            Ok(pid) => pid,
            Err(e) => {
                self.collection_ended(Termination::Exit(127));
                return Err(e.into());
            }
        };
        self.collection_started();
        let mut shown = program.display().to_string();
        for arg in &self.args {
            shown.push(' ');
            shown.push_str(arg);
        }
        println!("Running: {shown}");
        println!("(process id {pid})");
        self.print_notices();
        self.resume(|dbg, conditions| dbg.cont(conditions))
    }

    fn cont(&mut self, count: Option<u32>, signal: Delivery) -> Result<()> {
        self.dbg.process()?;
        match signal {
            Delivery::Pending => {}
            Delivery::Cancel => self.dbg.set_resume_signal(0)?,
            Delivery::Signal(sig) => self.dbg.set_resume_signal(sig.number())?,
        }
        if let Some(n) = count.filter(|&n| n > 1) {
            // gdb: ignore the breakpoint we are at N-1 more times.
            if let Some(bp) = self.breakpoints_at_pc().into_iter().next() {
                self.dbg.ignore_breakpoint_hits(bp, u64::from(n) - 1)?;
            }
        }
        self.resume(|dbg, conditions| dbg.cont(conditions))
    }

    fn breakpoints_at_pc(&self) -> Vec<u32> {
        let Ok(pc) = self
            .dbg
            .process()
            .and_then(|p| p.pc(self.dbg.current_thread()))
        else {
            return Vec::new();
        };
        self.dbg
            .breakpoints()
            .users()
            .filter(|b| b.addresses().contains(&pc))
            .map(|b| b.id())
            .collect()
    }

    fn step(&mut self, kind: StepKind) -> Result<Stop> {
        let name = match kind {
            StepKind::Into => "step",
            StepKind::Over => "next",
        };
        self.resume_for(Some(name), |dbg, conditions| {
            dbg.step_line(kind, conditions)
        })
    }

    fn step_instruction(&mut self, over: bool) -> Result<Stop> {
        let name = if over { "nexti" } else { "stepi" };
        self.resume_for(Some(name), |dbg, conditions| {
            dbg.step_instruction(over, conditions)
        })
    }

    fn step_up(&mut self) -> Result<()> {
        let frame = self.dbg.selected_frame_number();
        // As gdb: main is the outermost frame unless stack_past_main is on.
        let visible = self.visible_frames(self.dbg.current_thread(), frame + 2)?;
        if visible.len() == frame + 1 && !self.stack_past_main {
            bail!("\"step up\" not meaningful in the outermost frame");
        }
        self.resume_for(Some("step up"), |dbg, conditions| {
            dbg.finish_frame(frame, conditions).map(|(stop, _)| stop)
        })
        .map(drop)
    }

    /// `step N` and friends: N steps, fewer when one is cut short (by a
    /// breakpoint, a signal, the program's end), as gdb does.
    fn repeat(
        &mut self,
        count: u32,
        mut once: impl FnMut(&mut Self) -> Result<Stop>,
    ) -> Result<()> {
        for _ in 0..count.max(1) {
            let stop = once(self)?;
            // A step in code without lines runs out of its function: done too.
            let done = matches!(stop.reason, StopReason::Step | StopReason::Finished { .. });
            if !done || !self.dbg.is_running() {
                break;
            }
        }
        Ok(())
    }

    fn resume(
        &mut self,
        how: impl FnMut(&mut Debugger, debugger::engine::ConditionEvaluator) -> debugger::Result<Stop>,
    ) -> Result<()> {
        self.resume_for(None, how).map(drop)
    }

    /// Runs the program with `how` (the stepping command `stepping`, or
    /// `None` to run freely), runs `when` bodies at their breakpoints
    /// (resuming unless they say `stop`), and reports the stop it returns.
    fn resume_for(
        &mut self,
        stepping: Option<&str>,
        mut how: impl FnMut(
            &mut Debugger,
            debugger::engine::ConditionEvaluator,
        ) -> debugger::Result<Stop>,
    ) -> Result<Stop> {
        self.dbg.process()?;
        let stepping_thread = self.dbg.current_thread();
        let mut stop = how(&mut self.dbg, &evaluate_condition)?;
        loop {
            if self.dbg.take_entry_reached() {
                self.start_collector_at_entry();
            }
            if stop.reason == StopReason::EntryPoint || self.dbg.process_has_ended() {
                // Our own stop, or the process ended during an injected call.
                stop = self.dbg.cont(&evaluate_condition)?;
                continue;
            }
            self.print_notices();
            for (id, why) in self.dbg.take_condition_failures() {
                eprintln!("rdbx: the condition of breakpoint ({id}) could not be evaluated: {why}");
            }
            if let StopReason::Breakpoint { ids } = &stop.reason {
                if self.run_when_bodies(ids) {
                    // Only `when` events, none of which asked to stop: go on.
                    stop = self.dbg.cont(&evaluate_condition)?;
                    continue;
                }
            }
            match stop.reason {
                StopReason::Exited { code } => self.collection_ended(Termination::Exit(code)),
                StopReason::Killed { signal } => self.collection_ended(Termination::Signal(signal)),
                _ => self.collector_at_stop(),
            }
            if self.dbg.process_has_ended() {
                stop = self.dbg.cont(&evaluate_condition)?;
                continue;
            }
            if let (Some(command), StopReason::Breakpoint { ids }) = (stepping, &stop.reason) {
                // gdb says "Breakpoint N, ..." here: the step did not end
                // where it would have, and a finish returned no value.
                // A breakpoint another thread hit says which (gdb: "Thread
                // 3 hit Breakpoint 1"); the stop is in that thread now.
                let thread = match stop.tid != stepping_thread {
                    true => self.thread_label(stop.tid),
                    false => String::new(),
                };
                println!(
                    "\"{command}\" interrupted by {}{thread}",
                    format::breakpoint_ids(ids)
                );
            }
            self.report_stop(&stop);
            return Ok(stop);
        }
    }

    /// Runs the bodies of the `when` breakpoints among `ids`. True when
    /// the program should simply continue.
    fn run_when_bodies(&mut self, ids: &[u32]) -> bool {
        let mut keep_going = true;
        for id in ids {
            let action = self.dbg.breakpoint(*id).map(|b| b.action().clone());
            match action {
                Some(Action::When(index)) => {
                    let body = self.when_bodies[index].commands.clone();
                    for command in body {
                        if is_stop_request(&command) {
                            keep_going = false;
                            continue;
                        }
                        if resumes_program(&command) {
                            eprintln!("rdbx: commands that resume the program are not allowed in a when body");
                            continue;
                        }
                        if let Err(e) = self.execute(command) {
                            eprintln!("rdbx: {e:#}");
                        }
                    }
                }
                _ => keep_going = false,
            }
        }
        keep_going
    }

    fn report_stop(&mut self, stop: &Stop) {
        match &stop.reason {
            StopReason::Exited { code } => {
                println!("execution completed, exit code is {code}");
                return;
            }
            StopReason::Killed { signal } => {
                println!(
                    "program terminated by signal {}",
                    format::signal_text(*signal)
                );
                return;
            }
            StopReason::Finished {
                function,
                value: Some(value),
            } => println!("{function} returns {value}"),
            _ => {}
        }
        let (place, source) = self.describe_current_stop();
        match &stop.reason {
            StopReason::Signal { signal } => {
                println!("signal {} {place}", format::signal_text(*signal))
            }
            StopReason::JobControl { signal } => println!(
                "stopped by {} (job control) {place}; cont resumes it",
                signal_name(*signal)
            ),
            _ => println!("stopped {place}"),
        }
        if let Some(line) = source {
            println!("{line}");
        }
        self.show_displays();
    }

    /// `in main at line 5 in file "t.c"` and the source line, for the
    /// innermost frame of the current thread.
    fn describe_current_stop(&mut self) -> (String, Option<String>) {
        let frame = self
            .dbg
            .backtrace(self.dbg.current_thread(), 1)
            .ok()
            .and_then(|frames| frames.into_iter().next());
        let Some(frame) = frame else {
            return ("at an unknown location".into(), None);
        };
        describe_frame(&mut self.sources, &frame)
    }

    // ----- breakpoints -------------------------------------------------

    fn location_spec(&self, location: Location) -> Result<LocationSpec> {
        Ok(match location {
            Location::Function(name) => LocationSpec::Function(name),
            Location::FunctionInFile { function, .. } => LocationSpec::Function(function),
            Location::Line { file, line } => LocationSpec::Line {
                // A bare line is in the current file; remember which.
                file: file.or_else(|| self.dbg.default_source_file()),
                line,
            },
            Location::Address(text) => LocationSpec::Address(self.evaluate_address(&text)?),
        })
    }

    fn evaluate_address(&self, text: &str) -> Result<u64> {
        let value = self.evaluate(text)?;
        value
            .as_integer()
            .map(|v| v as u64)
            .ok_or_else(|| anyhow!("\"{text}\" is not an address"))
    }

    fn add_breakpoint(&mut self, spec: BreakpointSpec, action: Action) -> Result<()> {
        if let Some(condition) = &spec.condition {
            expr::parse(condition)?;
        }
        let location = self.location_spec(spec.location)?;
        let id = self.dbg.add_breakpoint(
            location.clone(),
            spec.condition,
            spec.count.map(u64::from),
            spec.temporary,
            action,
        )?;
        let bp = self.dbg.breakpoint(id).expect("just added");
        if let (LocationSpec::Line { file, line }, Some(moved)) = (&location, bp.resolved_line()) {
            let file = file.clone().unwrap_or_default();
            println!("line {line} in \"{file}\" has no code; using line {moved}");
        }
        println!("{}", format::breakpoint_description(bp, &self.when_texts()));
        if bp.is_pending() {
            let what = match &location {
                LocationSpec::Function(name) => format!("no function \"{name}\""),
                LocationSpec::Line { file, line } => format!(
                    "no code for \"{}\":{line}",
                    file.clone().unwrap_or_default()
                ),
                LocationSpec::Address(a) => format!("no code at 0x{a:x}"),
            };
            eprintln!(
                "rdbx: warning: {what} in the loaded objects; breakpoint ({id}) is pending until a library defines it"
            );
        }
        Ok(())
    }

    fn when_texts(&self) -> Vec<String> {
        self.when_bodies.iter().map(|b| b.text.clone()).collect()
    }

    fn status(&self) {
        let texts = self.when_texts();
        for bp in self.dbg.breakpoints().users() {
            let mut line = format::breakpoint_description(bp, &texts);
            line += &format!("  [hits: {}]", bp.hits());
            if bp.is_pending() {
                line += "  [pending]";
            }
            if !bp.enabled() {
                line += "  [disabled]";
            }
            println!("{line}");
            if bp.addresses().len() > 1 {
                self.print_locations(bp);
            }
        }
    }

    /// One line per location of a breakpoint with several (a function's
    /// inlined copies), numbered as gdb's `info breakpoints` does.
    fn print_locations(&self, bp: &debugger::breakpoints::Breakpoint) {
        for (n, &address) in bp.addresses().iter().enumerate() {
            let found = self.dbg.objects().symbolize(address);
            let mut line = format!("    ({}.{}) 0x{address:016x}", bp.id(), n + 1);
            if let Some(function) = &found.function {
                line += &format!(" in {function}");
            }
            if let Some(location) = &found.location {
                line += &format!(
                    " at line {} in file \"{}\"",
                    location.line,
                    location.file.display()
                );
            }
            println!("{line}");
        }
    }

    fn selected_ids(&self, selection: &Selection) -> Result<Vec<u32>> {
        match selection {
            Selection::All => Ok(self.dbg.breakpoints().users().map(|b| b.id()).collect()),
            Selection::Ids(ids) => {
                for id in ids {
                    if self.dbg.breakpoint(*id).is_none() {
                        bail!("no breakpoint ({id})");
                    }
                }
                Ok(ids.clone())
            }
        }
    }

    fn delete(&mut self, selection: Selection) -> Result<()> {
        for id in self.selected_ids(&selection)? {
            self.dbg.delete_breakpoint(id)?;
        }
        Ok(())
    }

    fn set_enabled(&mut self, selection: Selection, enabled: bool) -> Result<()> {
        for id in self.selected_ids(&selection)? {
            self.dbg.set_breakpoint_enabled(id, enabled)?;
        }
        Ok(())
    }

    fn clear(&mut self, location: Option<Location>) -> Result<()> {
        let addresses: Vec<u64> = match location {
            Some(location) => {
                let spec = self.location_spec(location)?;
                self.dbg.resolve(&spec)?.0
            }
            None => {
                let frame = self.dbg.selected_frame()?;
                let span = self
                    .dbg
                    .objects()
                    .object_at(frame.pc)
                    .and_then(|o| {
                        o.file
                            .line_range_at(o.file_address(frame.pc))
                            .map(|r| (o.runtime_address(r.start), o.runtime_address(r.end)))
                    })
                    .unwrap_or((frame.pc, frame.pc + 1));
                (span.0..span.1).collect()
            }
        };
        let ids: Vec<u32> = self
            .dbg
            .breakpoints()
            .users()
            .filter(|b| b.addresses().iter().any(|a| addresses.contains(a)))
            .map(|b| b.id())
            .collect();
        if ids.is_empty() {
            bail!("no breakpoint there");
        }
        for id in ids {
            self.dbg.delete_breakpoint(id)?;
            println!("deleted breakpoint ({id})");
        }
        Ok(())
    }

    // ----- stack and threads -------------------------------------------

    /// The call stack of `tid` as `where` shows it: at most `limit`
    /// frames, ending at `main` unless `stack_past_main` is on (gdb's
    /// `backtrace past-main`: what runs before main is libc's business).
    fn visible_frames(
        &self,
        tid: debugger::ptrace::Tid,
        limit: usize,
    ) -> Result<Vec<debugger::stack::StackFrame>> {
        let mut frames = self.dbg.backtrace(tid, limit)?;
        if !self.stack_past_main {
            if let Some(main) = frames
                .iter()
                .position(|f| f.function.as_deref() == Some("main"))
            {
                frames.truncate(main + 1);
            }
        }
        Ok(frames)
    }

    /// `where [N] [t@T]`.
    fn where_(&mut self, depth: Option<usize>, thread: Option<u32>) -> Result<()> {
        let tid = match thread {
            Some(number) => self.thread_tid(number)?,
            None => self.dbg.current_thread(),
        };
        let selected = (tid == self.dbg.current_thread()).then(|| self.dbg.selected_frame_number());
        let frames = self.visible_frames(tid, depth.unwrap_or(usize::MAX))?;
        for (index, frame) in frames.iter().enumerate() {
            let marker = if Some(index) == selected { "=>" } else { "  " };
            let args = self.dbg.frame_arguments(frame);
            println!(
                "{marker}[{}] {}",
                index + 1,
                format::frame_line(frame, &args)
            );
        }
        Ok(())
    }

    /// `up [N]`: past the outermost frame goes to it, as gdb does; a bare
    /// `up` there is refused with gdb's reason.
    fn up(&mut self, count: Option<u32>) -> Result<()> {
        let selected = self.dbg.selected_frame_number();
        let wanted = selected.saturating_add(count.unwrap_or(1) as usize);
        let frames = self.visible_frames(self.dbg.current_thread(), wanted.saturating_add(1))?;
        let outermost = frames.len().saturating_sub(1);
        if count.is_none() && selected >= outermost {
            bail!("outermost frame selected; you cannot go up");
        }
        self.show_selected_frame(&frames, wanted.min(outermost))
    }

    /// `down [N]`: likewise towards the innermost frame.
    fn down(&mut self, count: Option<u32>) -> Result<()> {
        let selected = self.dbg.selected_frame_number();
        if count.is_none() && selected == 0 {
            bail!("innermost frame selected; you cannot go down");
        }
        let wanted = selected.saturating_sub(count.unwrap_or(1) as usize);
        let frames = self.visible_frames(self.dbg.current_thread(), wanted + 1)?;
        self.show_selected_frame(&frames, wanted)
    }

    /// `frame [N]`: frame N as `where` numbers them (from 1); like gdb, a
    /// frame that does not exist is an error, not the nearest one.
    fn frame(&mut self, number: Option<u32>) -> Result<()> {
        let index = match number {
            None => self.dbg.selected_frame_number(),
            Some(0) => bail!("no frame 0: frames are numbered from 1, as where shows them"),
            Some(n) => n as usize - 1,
        };
        let frames = self.visible_frames(self.dbg.current_thread(), index + 1)?;
        if index >= frames.len() {
            bail!(
                "no frame {}: the outermost frame is {}",
                index + 1,
                frames.len()
            );
        }
        self.show_selected_frame(&frames, index)
    }

    /// Selects `frames[index]` and shows it as `where` would, with its line.
    fn show_selected_frame(
        &mut self,
        frames: &[debugger::stack::StackFrame],
        index: usize,
    ) -> Result<()> {
        let frame = frames
            .get(index)
            .ok_or_else(|| anyhow!("no stack frames"))?;
        self.dbg.select_frame(index);
        let args = self.dbg.frame_arguments(frame);
        println!("=>[{}] {}", index + 1, format::frame_line(frame, &args));
        if let Some(location) = &frame.location {
            if let Some(text) = self.sources.line(&location.full_path, location.line) {
                println!("{}", format::source_line(location.line, &text));
            }
        }
        Ok(())
    }

    /// ` in t@N (lwp TID)` for thread `tid`, as `threads` names it.
    fn thread_label(&self, tid: debugger::ptrace::Tid) -> String {
        self.dbg
            .process()
            .ok()
            .and_then(|p| p.thread(tid))
            .map(|t| format!(" in t@{} (lwp {tid})", t.number()))
            .unwrap_or_else(|| format!(" in lwp {tid}"))
    }

    /// The thread `threads` lists as t@`number`.
    fn thread_tid(&self, number: u32) -> Result<debugger::ptrace::Tid> {
        self.dbg
            .process()?
            .thread_by_number(number)
            .map(|t| t.tid())
            .ok_or_else(|| anyhow!("no thread t@{number} (threads lists them)"))
    }

    fn threads(&mut self) -> Result<()> {
        let process = self.dbg.process()?;
        let threads: Vec<_> = process.threads().cloned().collect();
        for thread in threads {
            let marker = if thread.tid() == self.dbg.current_thread() {
                "=> "
            } else {
                "   "
            };
            let state = match thread.cause() {
                StopCause::Breakpoint => "breakpoint".to_string(),
                StopCause::Signal(sig) => format!("signal {}", signal_name(sig)),
                StopCause::JobControl(sig) => format!("stopped by {}", signal_name(sig)),
                StopCause::Step => "step".to_string(),
                StopCause::Stopped => "stopped".to_string(),
            };
            let frame = self
                .dbg
                .backtrace(thread.tid(), 1)
                .ok()
                .and_then(|f| f.into_iter().next());
            let place = match &frame {
                Some(frame) => {
                    let name = frame.function.clone().unwrap_or_else(|| "??".into());
                    match &frame.location {
                        Some(l) => format!(
                            "in {name}() at line {} in \"{}\"",
                            l.line,
                            format::file_name(l)
                        ),
                        None => format!("in {name}() at 0x{:x}", frame.pc),
                    }
                }
                None => String::new(),
            };
            println!(
                "{marker}t@{} (lwp {}) {state} {place}",
                thread.number(),
                thread.tid()
            );
        }
        Ok(())
    }

    fn select_thread(&mut self, number: u32) -> Result<()> {
        let tid = self.thread_tid(number)?;
        self.dbg.select_thread(tid)?;
        let (place, source) = self.describe_current_stop();
        println!("t@{number} (lwp {tid}) {place}");
        if let Some(line) = source {
            println!("{line}");
        }
        Ok(())
    }

    fn registers(&self, names: &[String]) -> Result<()> {
        let regs = self.dbg.process()?.regs(self.dbg.current_thread())?;
        let frame_regs = if self.dbg.selected_frame_number() > 0 {
            Some(self.dbg.selected_frame()?.regs)
        } else {
            None
        };
        let value_of = |name: &str| -> Option<Option<u64>> {
            debugger::regs::frame_get(&regs, frame_regs.as_ref().map(|r| &r.regs), name)
        };
        let names: Vec<String> = if names.is_empty() {
            debugger::regs::GENERAL_REGISTERS
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            names.to_vec()
        };
        for name in names {
            match value_of(&name) {
                Some(Some(value)) => println!("{}", format::register_line(&name, value)),
                Some(None) => println!("{name:<15}<not saved>"),
                None => bail!("no register named \"{name}\""),
            }
        }
        Ok(())
    }

    // ----- source and code ---------------------------------------------

    fn list(&mut self, target: ListTarget) -> Result<()> {
        let (path, name, center) = match target {
            ListTarget::Next => match self.list_cursor.clone() {
                Some((path, name, next)) => (path, name, next + 5),
                None => self.default_list_position()?,
            },
            ListTarget::Previous => match self.list_cursor.clone() {
                Some((path, name, next)) => (path, name, next.saturating_sub(15).max(6)),
                None => self.default_list_position()?,
            },
            ListTarget::Around(location) => self.list_position(location)?,
            ListTarget::Range { file, first, last } => {
                let (path, name, _) = match file {
                    Some(file) => self.list_position(Location::Line {
                        file: Some(file),
                        line: first,
                    })?,
                    None => self.default_list_position()?,
                };
                return self.list_lines(path, name, first, last);
            }
        };
        let first = center.saturating_sub(5).max(1);
        self.list_lines(path, name, first, first + 9)
    }

    fn list_lines(&mut self, path: PathBuf, name: String, first: u32, last: u32) -> Result<()> {
        let lines = self
            .sources
            .lines(&path)
            .ok_or_else(|| anyhow!("cannot read source file \"{}\"", path.display()))?
            .clone();
        if first as usize > lines.len() {
            bail!(
                "line {first} is past the end of \"{name}\" ({} lines)",
                lines.len()
            );
        }
        let last = (last as usize).min(lines.len());
        for number in first as usize..=last {
            println!("{}", format::source_line(number as u32, &lines[number - 1]));
        }
        self.list_cursor = Some((path, name, last as u32 + 1 + 4));
        Ok(())
    }

    fn default_list_position(&mut self) -> Result<(PathBuf, String, u32)> {
        if self.dbg.is_running() {
            if let Ok(frame) = self.dbg.selected_frame() {
                if let Some(l) = frame.location {
                    return Ok((l.full_path.clone(), format::file_name(&l), l.line));
                }
            }
        }
        self.list_position(Location::Function("main".into()))
    }

    fn list_position(&mut self, location: Location) -> Result<(PathBuf, String, u32)> {
        match location {
            Location::Function(name) | Location::FunctionInFile { function: name, .. } => {
                for object in &self.dbg.objects().list {
                    if let Some(f) = object.file.find_functions(&name).into_iter().next() {
                        let location = object
                            .file
                            .location_at(f.low_pc)
                            .or(f.location)
                            .ok_or_else(|| {
                                anyhow!("function \"{name}\" has no line information")
                            })?;
                        return Ok((
                            location.full_path.clone(),
                            format::file_name(&location),
                            location.line,
                        ));
                    }
                }
                bail!("no function named \"{name}\"")
            }
            Location::Line { file, line } => {
                let spec = LocationSpec::Line {
                    file: file.clone(),
                    line,
                };
                let file_text = match file {
                    Some(f) => f,
                    None => self
                        .dbg
                        .default_source_file()
                        .ok_or_else(|| anyhow!("no default source file"))?,
                };
                let _ = spec;
                for object in &self.dbg.objects().list {
                    if let Ok(found) = object.file.lines_for(&file_text, 1) {
                        let source = found
                            .addresses
                            .first()
                            .and_then(|&a| object.file.location_at(a));
                        let full = source
                            .map(|l| l.full_path)
                            .unwrap_or_else(|| found.file.clone());
                        return Ok((full, found.file.display().to_string(), line));
                    }
                }
                bail!("no source file named \"{file_text}\"")
            }
            Location::Address(text) => {
                let address = self.evaluate_address(&text)?;
                let location = self
                    .dbg
                    .objects()
                    .symbolize(address)
                    .location
                    .ok_or_else(|| anyhow!("no line information for 0x{address:x}"))?;
                Ok((
                    location.full_path.clone(),
                    format::file_name(&location),
                    location.line,
                ))
            }
        }
    }

    fn disassemble(
        &mut self,
        start: Option<Location>,
        count: Option<u32>,
        gdb_style: bool,
    ) -> Result<()> {
        let pc = self
            .dbg
            .process()
            .ok()
            .and_then(|_| self.dbg.selected_frame().ok())
            .map(|f| f.pc);
        let (address, end) = match start {
            None => {
                let pc = pc.ok_or_else(|| {
                    anyhow!("no process; say which function or address to disassemble")
                })?;
                if gdb_style {
                    self.function_bounds(pc)
                        .map(|(s, e)| (s, Some(e)))
                        .unwrap_or((pc, None))
                } else {
                    (pc, None)
                }
            }
            Some(Location::Function(name))
            | Some(Location::FunctionInFile { function: name, .. }) => {
                let (low, high) = self.function_range(&name)?;
                (low, if count.is_none() { Some(high) } else { None })
            }
            Some(Location::Address(text)) => (self.evaluate_address(&text)?, None),
            Some(location @ Location::Line { .. }) => {
                let spec = self.location_spec(location)?;
                let addresses = self.dbg.resolve(&spec)?.0;
                (
                    *addresses.first().ok_or_else(|| anyhow!("no code there"))?,
                    None,
                )
            }
        };
        let count = count.unwrap_or(if end.is_some() { u32::MAX } else { 10 }) as usize;
        let mut bytes = vec![
            0u8;
            end.map(|e| (e - address) as usize)
                .unwrap_or(count * 15)
                .min(1 << 20)
        ];
        let n = if self.dbg.is_running() {
            let process = self.dbg.process()?;
            self.dbg
                .breakpoints()
                .read_code(process.memory(), address, &mut bytes)
        } else {
            self.read_file_code(address, &mut bytes)
        };
        if n == 0 {
            bail!("cannot access memory at 0x{address:x}");
        }
        let instructions = self.dbg.disassembler().decode(&bytes[..n], address, count);
        if instructions.is_empty() {
            bail!("cannot disassemble at 0x{address:x}");
        }
        for insn in instructions {
            let marker = if Some(insn.address) == pc {
                "=> "
            } else {
                "   "
            };
            let label = self.symbol_label(insn.address);
            let mut operands = insn.operands.clone();
            if let Some(target) = insn.branch_target {
                let target_label = self.symbol_label(target);
                if !target_label.is_empty() {
                    operands = format!("{operands} {target_label}");
                }
            }
            println!(
                "{marker}0x{:016x} {label}:\t{:<6} {operands}",
                insn.address, insn.mnemonic
            );
        }
        Ok(())
    }

    /// `<main+4>` for an address, empty if no symbol covers it.
    fn symbol_label(&self, address: u64) -> String {
        let symbolized = self.dbg.objects().symbolize(address);
        match symbolized.function {
            Some(name) if symbolized.offset == 0 => format!("<{name}>"),
            Some(name) => format!("<{name}+{}>", symbolized.offset),
            None => String::new(),
        }
    }

    fn function_bounds(&self, pc: u64) -> Option<(u64, u64)> {
        let object = self.dbg.objects().object_at(pc)?;
        let f = object.file.function_at(object.file_address(pc))?;
        Some((
            object.runtime_address(f.low_pc),
            object.runtime_address(f.high_pc),
        ))
    }

    fn function_range(&self, name: &str) -> Result<(u64, u64)> {
        for object in &self.dbg.objects().list {
            if let Some(f) = object.file.find_functions(name).into_iter().next() {
                return Ok((
                    object.runtime_address(f.low_pc),
                    object.runtime_address(f.high_pc),
                ));
            }
            if let Some(s) = object
                .file
                .lookup_symbol(name)
                .into_iter()
                .find(|s| s.is_function)
            {
                let start = object.runtime_address(s.address);
                return Ok((start, start + s.size.max(1)));
            }
        }
        bail!("no function named \"{name}\"")
    }

    /// Code bytes from the executable file, before the program runs.
    fn read_file_code(&self, address: u64, buf: &mut [u8]) -> usize {
        let Some(main) = self.dbg.objects().main() else {
            return 0;
        };
        let data = main.file.elf_bytes();
        for segment in main.file.segments().iter().filter(|s| s.executable) {
            if address >= segment.vaddr && address < segment.vaddr + segment.filesz {
                let offset = (segment.offset + address - segment.vaddr) as usize;
                let available = (segment.vaddr + segment.filesz - address) as usize;
                let n = buf
                    .len()
                    .min(available)
                    .min(data.len().saturating_sub(offset));
                buf[..n].copy_from_slice(&data[offset..offset + n]);
                return n;
            }
        }
        0
    }

    fn load_objects(&self) {
        for object in &self.dbg.objects().list {
            let debug = if object.file.has_debug_info() {
                ""
            } else {
                "  (no debug info)"
            };
            println!("0x{:016x}  {}{debug}", object.start, object.path.display());
        }
    }

    // ----- data --------------------------------------------------------

    fn evaluate(&self, text: &str) -> Result<Value> {
        let expr = expr::parse(text)?;
        let context = SessionEval {
            dbg: &self.dbg,
            history: &self.history,
        };
        Ok(expr::evaluate(&expr, &context)?)
    }

    /// `call FUNC(ARGS)`: like print, but a void result shows nothing.
    fn call(&mut self, text: &str) -> Result<()> {
        let expr = expr::parse(text)?;
        if !matches!(expr, expr::Expr::Call { .. }) {
            bail!("call: expected FUNC(ARGS), as in call f(1, \"text\")");
        }
        if let Evaluated::Value(value) = self.evaluate_with_calls(&expr)? {
            println!("{} = {value}", text.trim());
        }
        Ok(())
    }

    /// Evaluates a `print` or `call` expression, whose function calls run
    /// in the current thread. If the program ended during a call, the
    /// error is shown and then the end is reported as the stop it is.
    fn evaluate_with_calls(&mut self, expr: &expr::Expr) -> Result<Evaluated> {
        Ok(match self.evaluate_typed_with_calls(expr)? {
            Evaluated::Value(value) => Evaluated::Value(value.into_plain()),
            other => other,
        })
    }

    /// `dbxenv [NAME [VALUE]]`.
    fn dbxenv(&mut self, name: Option<&str>, value: Option<&str>) -> Result<()> {
        match (name, value) {
            (None, _) => {
                self.show_setting("call_timeout");
                self.show_setting("stack_past_main");
            }
            (Some(name), None) => self.show_setting(name),
            (Some("call_timeout"), Some(text)) => {
                let seconds = text
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
                    .ok_or_else(|| {
                        anyhow!("call_timeout: \"{text}\" is not a number of seconds")
                    })?;
                self.dbg
                    .set_call_timeout(std::time::Duration::from_secs_f64(seconds));
            }
            (Some("stack_past_main"), Some(text)) => {
                self.stack_past_main = match text {
                    "on" => true,
                    "off" => false,
                    _ => bail!("stack_past_main: \"{text}\" is not on or off"),
                };
                self.dbg.set_stack_past_main(self.stack_past_main);
                let selected = self.dbg.selected_frame_number();
                let hidden = self.dbg.is_running()
                    && self
                        .visible_frames(self.dbg.current_thread(), selected + 1)
                        .is_ok_and(|frames| frames.len() <= selected);
                if hidden {
                    self.dbg.select_frame(0);
                }
            }
            (Some(other), _) => bail!("dbxenv: unknown setting \"{other}\""),
        }
        Ok(())
    }

    fn show_setting(&self, name: &str) {
        match name {
            "call_timeout" => {
                println!("call_timeout  {}", self.dbg.call_timeout().as_secs_f64())
            }
            "stack_past_main" => {
                let state = if self.stack_past_main { "on" } else { "off" };
                println!("stack_past_main  {state}");
            }
            _ => {}
        }
    }

    fn signals(&mut self, command: SignalCommand) -> Result<()> {
        match command {
            SignalCommand::Show(filter) => {
                let list: Vec<i32> = match filter {
                    SignalFilter::Caught => self.dbg.signals().caught(),
                    SignalFilter::Ignored => self.dbg.signals().ignored(),
                    SignalFilter::All => (1..65).collect(),
                    SignalFilter::Only(signals) => signals.iter().map(|s| s.number()).collect(),
                };
                for signal in list {
                    let d = self.dbg.signals().get(signal);
                    println!(
                        "{:<12}{:<6}{:<6}{}",
                        signal_name(signal),
                        if d.stop { "stop" } else { "" },
                        if d.pass { "pass" } else { "" },
                        signal_description(signal)
                    );
                }
                Ok(())
            }
            SignalCommand::Set {
                signals,
                disposition,
            } => {
                for signal in signals {
                    let current = self.dbg.signals().get(signal.number());
                    let stop = disposition.stop.unwrap_or(current.stop);
                    let pass = disposition.pass.unwrap_or(current.pass);
                    self.dbg
                        .set_signal_disposition(signal.number(), Disposition { stop, pass });
                }
                Ok(())
            }
        }
    }
}

/// `in main at line 5 in file "t.c"` and the formatted source line.
/// Tells one notice: as it happens while the program runs, or at the stop.
fn print_notice(notice: &Notice) {
    match notice {
        Notice::NewThread { number, tid } => {
            println!("[New thread t@{number} (lwp {tid})]")
        }
        Notice::ThreadExited { number, tid } => {
            println!("[Thread t@{number} (lwp {tid}) exited]")
        }
        Notice::ForkDetached { child } => {
            println!("[Detaching after fork from child process {child}]")
        }
        Notice::Exec { pid, path } => println!(
            "[process {pid} is executing new program: {}]",
            path.display()
        ),
        Notice::BreakpointResolved { id, addresses } => {
            let addresses: Vec<String> = addresses.iter().map(|a| format!("0x{a:x}")).collect();
            println!("breakpoint ({id}) resolved at {}", addresses.join(", "));
        }
        Notice::Warning(text) => eprintln!("rdbx: warning: {text}"),
    }
}

/// `maintenance crash`: fail on purpose (see its help).
fn crash(kind: commands::CrashKind) -> Result<()> {
    fn recurse(depth: u64) -> u64 {
        let frame = [depth; 64];
        std::hint::black_box(&frame);
        // Never false; the compiler cannot know it.
        if std::hint::black_box(depth) == u64::MAX {
            return 0;
        }
        recurse(depth + 1) + frame[1]
    }
    match kind {
        commands::CrashKind::Panic => panic!("maintenance crash: a panic on purpose"),
        commands::CrashKind::StackOverflow => {
            recurse(0);
        }
        commands::CrashKind::ThreadStackOverflow => {
            let _ = std::thread::spawn(|| recurse(0)).join();
        }
    }
    Ok(())
}

fn describe_frame(
    sources: &mut Sources,
    frame: &debugger::stack::StackFrame,
) -> (String, Option<String>) {
    let function = frame.function.clone();
    match (&function, &frame.location) {
        (Some(name), Some(location)) => {
            let place = format!(
                "in {name} at line {} in file \"{}\"",
                location.line,
                format::file_name(location)
            );
            let source = sources
                .line(&location.full_path, location.line)
                .map(|text| format::source_line(location.line, &text));
            (place, source)
        }
        (Some(name), None) => (format!("in {name} at 0x{:x}", frame.pc), None),
        (None, _) => (format!("at 0x{:x}", frame.pc), None),
    }
}

/// What an empty line after `command` runs: the same stepping command,
/// or an `x` that goes on after the memory the last one showed.
fn repeated_form(command: &Command) -> Option<Command> {
    match command {
        Command::Next { .. }
        | Command::Step { .. }
        | Command::Continue { .. }
        | Command::StepInstruction { .. }
        | Command::NextInstruction { .. } => Some(command.clone()),
        Command::Examine(spec) => Some(Command::Examine(commands::ExamineSpec {
            address: None,
            count: spec.count,
            format: None,
            size: None,
        })),
        _ => None,
    }
}

/// dbx's bare `stop` inside a `when` body.
fn is_stop_request(command: &Command) -> bool {
    matches!(command, Command::Halt)
}

fn resumes_program(command: &Command) -> bool {
    matches!(
        command,
        Command::Run { .. }
            | Command::Rerun { .. }
            | Command::Continue { .. }
            | Command::Step { .. }
            | Command::Next { .. }
            | Command::StepUp
            | Command::StepInstruction { .. }
            | Command::NextInstruction { .. }
            | Command::Kill
    )
}

/// Breakpoint conditions are evaluated in the stopped thread's innermost frame.
fn evaluate_condition(dbg: &Debugger, text: &str) -> debugger::Result<bool> {
    let expr = expr::parse(text)?;
    let value = expr::evaluate(&expr, &SessionEval { dbg, history: &[] })?;
    value
        .is_true()
        .ok_or_else(|| debugger::Error::Expression(format!("\"{text}\" is not a truth value")))
}

/// Expressions see the selected frame's variables, registers and memory,
/// and the value history as `$1`, `$2`... (`$`, `$$` are rewritten to
/// those before parsing).
struct SessionEval<'a> {
    dbg: &'a Debugger,
    history: &'a [Value],
}

impl EvalContext for SessionEval<'_> {
    fn variable(&self, name: &str) -> debugger::Result<Value> {
        match self.dbg.read_variable(name) {
            // Inside a C++ method, members are names too (`this->name`).
            Err(debugger::Error::NoSuchSymbol(_)) if name != "this" && !name.contains("::") => {
                let member = expr::parse(&format!("this->{name}"))?;
                expr::evaluate_typed(&member, self)
                    .map_err(|_| debugger::Error::NoSuchSymbol(name.to_string()))
            }
            other => other,
        }
    }

    fn register(&self, name: &str) -> Option<Value> {
        if let Ok(n) = name.parse::<usize>() {
            return n.checked_sub(1).and_then(|i| self.history.get(i)).cloned();
        }
        let frame = self.dbg.selected_frame().ok()?;
        let regs = self
            .dbg
            .process()
            .ok()?
            .regs(self.dbg.current_thread())
            .ok()?;
        // An outer frame's registers are those unwinding recovered for it.
        let unwound = (self.dbg.selected_frame_number() > 0).then_some(&frame.regs.regs);
        let Some(value) = debugger::regs::frame_get(&regs, unwound, name)? else {
            return Some(Value::Unavailable("not saved".into()));
        };
        let pointer = matches!(name, "rip" | "pc" | "rsp" | "sp" | "rbp" | "fp");
        Some(if pointer {
            Value::Pointer {
                address: value,
                type_name: if name == "rip" || name == "pc" {
                    "void (*)()"
                } else {
                    "void *"
                }
                .into(),
                detail: None,
            }
        } else {
            Value::Integer {
                value: i128::from(value as i64),
                size: 8,
                signed: true,
                type_name: "long".into(),
            }
        })
    }

    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> debugger::Result<()> {
        self.dbg.read_memory(addr, buf)
    }

    fn lookup_type(&self, name: &str) -> Option<debugger::symbols::TypeRef> {
        // The executable first, then the libraries, as gdb searches.
        let main = self.dbg.objects().main();
        main.into_iter()
            .chain(self.dbg.objects().list.iter())
            .find_map(|o| o.file.lookup_type(name))
    }

    fn visible_names(&self) -> Vec<String> {
        let Ok(frame) = self.dbg.selected_frame() else {
            return Vec::new();
        };
        let Some(object) = self.dbg.objects().object_at(frame.lookup_pc) else {
            return Vec::new();
        };
        let address = object.file_address(frame.lookup_pc);
        let mut names: Vec<String> = object
            .file
            .frame_locals_at(address, frame.inline_depth)
            .into_iter()
            .chain(object.file.parameters_at(address, frame.inline_depth))
            .map(|v| v.name().to_string())
            .collect();
        // Globals and statics of the executable (libraries' would drown
        // the program's own names in libc's).
        if let Some(main) = self.dbg.objects().main() {
            names.extend(main.file.data_names());
        }
        names.sort();
        names.dedup();
        names
    }

    fn symbol_at(&self, address: u64) -> Option<String> {
        let symbolized = self.dbg.objects().symbolize(address);
        match symbolized.function {
            Some(name) if symbolized.offset == 0 => Some(name),
            Some(name) => Some(format!("{name}+{}", symbolized.offset)),
            None => None,
        }
    }
}

/// What a `print` or `call` expression gave.
enum Evaluated {
    Value(Value),
    /// A void function was called.
    Void,
    /// The program ended during a call; that has been reported.
    Reported,
}

/// The expressions of `print` and `call`: what `SessionEval` sees, and
/// function calls that run in the current thread.
struct CallingEval<'a> {
    dbg: std::cell::RefCell<&'a mut Debugger>,
    history: &'a [Value],
}

impl EvalContext for CallingEval<'_> {
    fn variable(&self, name: &str) -> debugger::Result<Value> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .variable(name)
    }

    fn register(&self, name: &str) -> Option<Value> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .register(name)
    }

    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> debugger::Result<()> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .read_memory(addr, buf)
    }

    fn lookup_type(&self, name: &str) -> Option<debugger::symbols::TypeRef> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .lookup_type(name)
    }

    fn visible_names(&self) -> Vec<String> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .visible_names()
    }

    fn symbol_at(&self, address: u64) -> Option<String> {
        let dbg = self.dbg.borrow();
        SessionEval {
            dbg: &dbg,
            history: self.history,
        }
        .symbol_at(address)
    }

    fn call(
        &self,
        function: &str,
        args: &[debugger::call::Argument],
    ) -> debugger::Result<Option<Value>> {
        let mut dbg = self.dbg.borrow_mut();
        let tid = dbg.current_thread();
        dbg.call(tid, function, args)
    }
}

/// The program as given, or found on PATH like a shell would (the
/// debugger's `load` and `rdbx collect` both use it).
pub(crate) fn find_program(name: &str) -> Result<PathBuf> {
    let path = PathBuf::from(name);
    if name.contains('/') || path.exists() {
        if !path.exists() {
            bail!("{name}: No such file or directory");
        }
        return Ok(path);
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .with_context(|| format!("{name}: No such file or directory"))
}
