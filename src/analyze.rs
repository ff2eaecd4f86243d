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
    /// Machine-readable output: with -c or -x, one JSON array holding each
    /// command's document; in the REPL, as `format json`.
    #[arg(long)]
    json: bool,
    /// Write the experiments as tables for a query engine instead of
    /// analysing them: `--export parquet DIR` (docs/fleet.md). Appends to
    /// DIR's tables; what is there is never rewritten.
    #[arg(
        long,
        num_args = 2,
        value_names = ["FORMAT", "DIR"],
        conflicts_with_all = ["commands", "scripts", "json", "compare"]
    )]
    export: Option<Vec<String>>,
    /// Compare the arguments side by side (each is a group: an experiment
    /// with its descendants, or a .erg file; the first is the baseline):
    /// `compare MODE` before the commands, MODE on (the default), delta or ratio.
    #[arg(
        long,
        value_name = "MODE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "on"
    )]
    compare: Option<commands::CompareMode>,
    /// The experiments (founders; their descendants are included) and
    /// experiment group files (NAME.erg).
    #[arg(required = true, value_name = "EXPERIMENT|GROUP.erg")]
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
    if let Some(export) = &options.export {
        return export_tables(export, &options.experiments);
    }
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
    if let Some(mode) = options.compare {
        let command = commands::AnalysisCommand::Compare(Some(mode));
        if let Err(message) = analysis.execute(&command) {
            eprintln!("rdbx analyze: --compare: {message}");
            return 2;
        }
    }
    if options.commands.is_empty() && options.scripts.is_empty() {
        repl(&mut analysis);
        return 0;
    }
    let lines = match command_lines(&options) {
        Ok(lines) => lines,
        Err(message) => {
            eprintln!("rdbx analyze: {message}");
            return 1;
        }
    };
    let failed = match options.json {
        true => run_json_batch(&mut analysis, &lines),
        false => run_batch(&mut analysis, &lines),
    };
    i32::from(failed)
}

/// `--export FORMAT DIR`: writes `experiments` into DIR's tables, saying
/// each one as it is written; the exit status (2 when one cannot be).
fn export_tables(export: &[String], experiments: &[PathBuf]) -> i32 {
    let [format, dir] = export else {
        return 2;
    };
    if format != "parquet" {
        eprintln!("rdbx analyze: cannot export as {format}: the format is parquet");
        return 2;
    }
    let dir = PathBuf::from(dir);
    let written = export::export_parquet(&dir, experiments, |progress| match progress {
        export::Progress::Warning(warning) => eprintln!("rdbx: warning: {warning}"),
        export::Progress::Exported(e) => println!(
            "exported {} as experiment={}: {} events, {} stacks, {} bytes",
            e.path.display(),
            e.id,
            e.events,
            e.stacks,
            e.bytes
        ),
    });
    match written {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("rdbx analyze: {e}");
            2
        }
    }
}

/// The lines of the -x scripts, then the -c commands, in that order.
fn command_lines(options: &Options) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for script in &options.scripts {
        let text =
            std::fs::read_to_string(script).map_err(|e| format!("{}: {e}", script.display()))?;
        lines.extend(text.lines().map(str::to_string));
    }
    lines.extend(options.commands.iter().cloned());
    Ok(lines)
}

/// Runs `lines` until one is `quit`, printing as they go; true when a
/// command failed.
fn run_batch(analysis: &mut Analysis, lines: &[String]) -> bool {
    let mut failed = false;
    for line in lines {
        match run_line(analysis, line) {
            Some(ok) => failed |= !ok,
            None => break,
        }
    }
    failed
}

/// `--json`: runs `lines` and prints one JSON array holding each command's
/// document in order, so that the whole output is one document for
/// `json.load` and `jq`. A command that fails is an element
/// `{"command": LINE, "error": MESSAGE}` (and a line on stderr).
fn run_json_batch(analysis: &mut Analysis, lines: &[String]) -> bool {
    let mut failed = false;
    let mut documents = Vec::new();
    for line in lines {
        match analysis.run_line(line) {
            Ok(Outcome::Quit) => break,
            Ok(Outcome::Json(document)) => documents.push(document),
            // Empty lines and comments show nothing.
            Ok(Outcome::Output(text)) if text.is_empty() => {}
            Ok(Outcome::Output(text)) => {
                documents.push(serde_json::json!({ "message": text.trim_end() }))
            }
            Err(message) => {
                print_error(&message);
                documents.push(serde_json::json!({ "command": line, "error": message }));
                failed = true;
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&documents).unwrap_or_default();
    text.push('\n');
    print!("{text}");
    failed
}

/// Prints the loader's warnings once, on stderr: what is shown is what
/// could be read.
pub fn print_warnings(analysis: &Analysis) {
    for warning in analysis.warnings() {
        eprintln!("rdbx: warning: {warning}");
    }
}

/// Runs one line; Some(true) ok, Some(false) failed, None = quit. Text is
/// written to stdout as the listing makes it (a call tree of millions of
/// rows is never held whole).
pub fn run_line(analysis: &mut Analysis, line: &str) -> Option<bool> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let outcome = analysis.run_line_to(line, &mut out);
    let flushed = std::io::Write::flush(&mut out);
    drop(out);
    if let Err(e) = flushed {
        print_error(&format!("cannot write the output: {e}"));
        return Some(false);
    }
    match outcome {
        Ok(Outcome::Output(text)) => {
            print!("{text}");
            Some(true)
        }
        Ok(Outcome::Json(document)) => {
            let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
            text.push('\n');
            print!("{text}");
            Some(true)
        }
        Ok(Outcome::Quit) => None,
        Err(message) => {
            print_error(&message);
            Some(false)
        }
    }
}

/// An error of a command: its first line after `rdbx: ` (a choice list or
/// a parse error's usage may follow).
fn print_error(message: &str) {
    for (i, line) in message.lines().enumerate() {
        match i {
            0 => eprintln!("rdbx: {line}"),
            _ => eprintln!("{line}"),
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
