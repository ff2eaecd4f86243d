//! rdbx: a Linux x86-64 debugger with dbx's command language.

mod analyze;
mod collect;
mod collector;
mod collector_lib;
mod complete;
mod format;
mod input;
mod session;

use anyhow::Result;
use clap::Parser;
use std::path::PathBuf;

/// Command-line options, as gdb and dbx users expect them. `rdbx collect
/// [OPTIONS] PROGRAM [ARGS]` runs a program with the collector instead
/// (see `rdbx collect --help`).
#[derive(Parser, Debug)]
#[command(
    name = "rdbx",
    version,
    about = "A Linux x86-64 debugger in the tradition of dbx",
    after_help = "rdbx collect [OPTIONS] PROGRAM [ARGS]: run PROGRAM with the performance collector, no debugger (rdbx collect --help)\nrdbx analyze [OPTIONS] EXPERIMENT...: analyze experiments (rdbx analyze --help)"
)]
struct Options {
    /// Run COMMAND at start (repeatable).
    #[arg(short = 'c', long = "eval", value_name = "COMMAND")]
    commands: Vec<String>,
    /// Run the commands in FILE at start.
    #[arg(short = 'x', value_name = "FILE")]
    script: Vec<PathBuf>,
    /// Exit after the start-up commands, killing a program rdbx started.
    #[arg(long)]
    batch: bool,
    /// Attach to the running process PID (PROGRAM, if given, is its executable).
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pid: Option<String>,
    /// The program to debug, and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    program: Vec<String>,
}

fn main() {
    keep_freed_memory();
    let mut args = std::env::args();
    match args.nth(1).as_deref() {
        Some("collect") => std::process::exit(collect::main(args.collect())),
        Some("analyze") => std::process::exit(analyze::main(args.collect())),
        _ => {}
    }
    let options = Options::parse();
    if let Some(option) = misplaced_option(&options.program) {
        eprintln!(
            "rdbx: warning: \"{option}\" after the program is the program's argument; rdbx's options go before it"
        );
    }
    std::process::exit(match run(options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rdbx: {e:#}");
            1
        }
    });
}

/// Makes glibc's malloc keep the memory rdbx frees, for its next
/// allocations: large blocks come from the heap, not from mappings of
/// their own, and the heap is not trimmed. An analysis of a large
/// experiment frees hundreds of megabytes of tables as it goes (the heap
/// replay's, the call tree's) and asks for as much again; each page of a
/// fresh mapping costs a page fault and its clearing, most of a heap
/// analysis's system time (about 200,000 faults in a heap `calltree` of ten
/// million events, 30,000 fewer this way). glibc's own rule, which raises
/// its thresholds as blocks are freed, made the count depend on the order
/// things were freed in. Settings of this process only: the programs rdbx
/// starts get the defaults.
fn keep_freed_memory() {
    // SAFETY: mallopt only sets the allocator's parameters, before any
    // thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX);
    }
}

/// The first of the program's arguments that is one of rdbx's own
/// options (`rdbx prog --batch -c where` gives both to the program, which
/// is rarely what was meant).
fn misplaced_option(program: &[String]) -> Option<&str> {
    use clap::CommandFactory;
    let command = Options::command();
    let ours = |word: &str| {
        let name = word.split('=').next().unwrap_or(word);
        command.get_arguments().any(|arg| {
            let long = arg.get_long().map(|l| format!("--{l}"));
            let short = arg.get_short().map(|s| format!("-{s}"));
            long.as_deref() == Some(name) || short.as_deref() == Some(name)
        }) || ["--help", "-h", "--version", "-V"].contains(&name)
    };
    program
        .get(1..)?
        .iter()
        .map(String::as_str)
        .find(|w| ours(w))
}

fn run(options: Options) -> Result<i32> {
    install_crash_guard();
    let mut session = session::Session::new()?;
    input::install_interrupt_handler();
    let start_failed = match start(&mut session, &options) {
        Ok(()) => false,
        Err(e) => {
            eprintln!("rdbx: {e:#}");
            true
        }
    };
    // As gdb -batch: the exit status says whether the last command (a
    // script counts as one, the program's loading as the first) failed.
    let mut last_failed = start_failed;
    for script in &options.script {
        session.run_script(script);
        last_failed = session.last_command_failed();
    }
    for command in &options.commands {
        session.execute_line(command);
        last_failed = session.last_command_failed();
        if session.quit_requested() {
            break;
        }
    }
    if !options.batch && !session.quit_requested() {
        input::read_commands(&mut session);
    }
    // Without --batch, a program that could not be loaded or attached to
    // (and nothing debugged instead) is a failure too.
    let failed = match options.batch {
        true => last_failed,
        false => start_failed && !session.has_program(),
    };
    session.shutdown();
    Ok(i32::from(failed))
}

/// The program or process named on the command line.
fn start(session: &mut session::Session, options: &Options) -> Result<()> {
    if let Some(pid) = &options.pid {
        return attach_at_start(session, pid, &options.program);
    }
    match options.program.split_first() {
        Some((program, args)) => session.load_program(program, args),
        None => Ok(()),
    }
}

/// Whatever kills rdbx from now on (a panic, a fatal signal, SIGTERM,
/// SIGHUP) first lets the debugged process go, untraced and intact.
fn install_crash_guard() {
    debugger::rescue::install();
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        let pid = debugger::rescue::traced_process();
        debugger::rescue::rescue();
        if pid > 0 && debugger::rescue::released() {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "rdbx: internal error; process {pid} was let go and runs on untraced"
            );
        }
        // The session's state no longer matches the process: end here.
        std::process::exit(101);
    }));
}

/// `rdbx -p PID [PROGRAM]`.
fn attach_at_start(session: &mut session::Session, pid: &str, program: &[String]) -> Result<()> {
    let pid: i32 = pid
        .trim()
        .parse()
        .ok()
        .filter(|&pid: &i32| pid > 0)
        .ok_or_else(|| anyhow::anyhow!("invalid process id \"{pid}\""))?;
    if program.len() > 1 {
        anyhow::bail!("-p takes at most one PROGRAM, no arguments");
    }
    session.attach(pid, program.first().map(String::as_str))
}
