//! The analysis REPL (`(rdbx analyze) `) and `rdbx analyze [OPTIONS]
//! EXPERIMENT...`. The analyzer crate does the work; this reads lines and
//! prints what it returns.

use analyzer::{Analysis, Outcome};
use clap::Parser;
use commands::OutputFormat;
use rustyline::error::ReadlineError;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

pub const PROMPT: &str = "(rdbx analyze) ";

#[derive(Parser, Debug)]
#[command(
    name = "rdbx analyze",
    about = "Analyze experiments with er_print's commands (functions, csingle, lines, source, ...)"
)]
struct Options {
    /// Run COMMAND (repeatable); without -c or -x the REPL starts.
    #[arg(short = 'c', value_name = "COMMAND")]
    commands: Vec<String>,
    /// Run the commands in SCRIPT (one per line).
    #[arg(short = 'x', value_name = "SCRIPT")]
    scripts: Vec<PathBuf>,
    /// Machine-readable output (as `format json`).
    #[arg(long)]
    json: bool,
    /// The experiments (founders; their descendants are included).
    #[arg(required = true, value_name = "EXPERIMENT")]
    experiments: Vec<PathBuf>,
}

/// `rdbx analyze` with the arguments after `analyze`; the exit status:
/// 0, 1 when a command failed, 2 when the experiments cannot be read.
pub fn main(args: Vec<String>) -> i32 {
    let options =
        match Options::try_parse_from(std::iter::once("rdbx analyze".to_string()).chain(args)) {
            Ok(o) => o,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() { 2 } else { 0 };
            }
        };
    let mut analysis = match Analysis::open(&options.experiments) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rdbx analyze: {e}");
            return 2;
        }
    };
    if options.json {
        analysis.set_format(OutputFormat::Json);
    }
    print_warnings(&analysis);
    let mut failed = false;
    let mut quit = false;
    for script in &options.scripts {
        match std::fs::read_to_string(script) {
            Ok(text) => {
                for line in text.lines() {
                    match run_line(&mut analysis, line) {
                        Some(ok) => failed |= !ok,
                        None => {
                            quit = true;
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                eprintln!("rdbx analyze: {}: {e}", script.display());
                failed = true;
            }
        }
    }
    for command in &options.commands {
        if quit {
            break;
        }
        match run_line(&mut analysis, command) {
            Some(ok) => failed |= !ok,
            None => quit = true,
        }
    }
    if options.commands.is_empty() && options.scripts.is_empty() {
        repl(&mut analysis);
    }
    i32::from(failed)
}

/// Prints the loader's warnings once, on stderr: what is shown is what
/// could be read.
pub fn print_warnings(analysis: &Analysis) {
    for warning in analysis.warnings() {
        eprintln!("rdbx: warning: {warning}");
    }
}

/// Runs one line; Some(true) ok, Some(false) failed, None = quit.
pub fn run_line(analysis: &mut Analysis, line: &str) -> Option<bool> {
    match analysis.run_line(line) {
        Ok(Outcome::Output(text)) => {
            print!("{text}");
            Some(true)
        }
        Ok(Outcome::Quit) => None,
        Err(message) => {
            for (i, line) in message.lines().enumerate() {
                match i {
                    0 => eprintln!("rdbx: {line}"),
                    _ => eprintln!("{line}"),
                }
            }
            Some(false)
        }
    }
}

/// The analysis REPL: until `quit` or end of input.
pub fn repl(analysis: &mut Analysis) {
    if std::io::stdin().is_terminal() {
        interactive(analysis);
        return;
    }
    // Line by line without holding stdin's lock: the debugger's own loop
    // reads the lines after `quit`.
    let stdin = std::io::stdin();
    loop {
        let mut line = String::new();
        match stdin.lock().read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if run_line(analysis, line.trim_end_matches(['\n', '\r'])).is_none() {
                    break;
                }
            }
        }
    }
}

fn interactive(analysis: &mut Analysis) {
    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("rdbx: cannot start the line editor: {e}");
            return;
        }
    };
    loop {
        match editor.readline(PROMPT) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                if run_line(analysis, &line).is_none() {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
}
