//! Where commands come from: a line editor on a terminal (history, Tab
//! completion), or plain lines from a pipe or file.

use crate::session::Session;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};

const PROMPT: &str = "(rdbx) ";

/// rdbx is waiting for a command: a Ctrl-C now has nothing to interrupt.
static IDLE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    if !IDLE.load(Ordering::SeqCst) {
        debugger::pump::request_interrupt();
    }
}

/// Ctrl-C must interrupt the program, not kill the debugger: it wakes the
/// engine's event pump, which stops every thread. No SA_RESTART: the
/// pump's `waitpid` must fail with EINTR.
pub fn install_interrupt_handler() {
    // SAFETY: the handler only loads an atomic and calls
    // `request_interrupt`, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as *const () as usize;
        libc::sigemptyset(&mut action.sa_mask);
        action.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// Runs `read` (waiting for the next command) with Ctrl-C meaning nothing
/// to the engine; one that came before is forgotten once the command is in.
fn idle<T>(read: impl FnOnce() -> T) -> T {
    IDLE.store(true, Ordering::SeqCst);
    debugger::pump::clear_interrupt();
    let line = read();
    IDLE.store(false, Ordering::SeqCst);
    line
}

pub fn read_commands(session: &mut Session) {
    if std::io::stdin().is_terminal() {
        interactive(session);
    } else {
        // One line at a time, not holding stdin's lock: the analysis REPL
        // reads its own lines from the same input.
        let stdin = std::io::stdin();
        loop {
            let mut line = String::new();
            match idle(|| stdin.lock().read_line(&mut line)) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            session.execute_typed_line(line.trim_end_matches(['\n', '\r']));
            if session.quit_requested() {
                break;
            }
        }
    }
}

fn history_path() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".rdbx_history"))
}

fn interactive(session: &mut Session) {
    let session = RefCell::new(session);
    let mut editor = match Editor::<Completion, rustyline::history::DefaultHistory>::new() {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("rdbx: cannot start the line editor: {e}");
            return;
        }
    };
    editor.set_helper(Some(Completion { session: &session }));
    let history = history_path();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    loop {
        match idle(|| editor.readline(PROMPT)) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                let mut session = session.borrow_mut();
                session.execute_typed_line(&line);
                if session.quit_requested() {
                    if confirmed(&mut editor, &session) {
                        break;
                    }
                    session.cancel_quit();
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(_) => break,
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
}

/// On a terminal, `quit` with a program rdbx started still alive asks
/// first, as dbx and gdb do: quitting kills it.
fn confirmed(
    editor: &mut Editor<Completion, rustyline::history::DefaultHistory>,
    session: &Session,
) -> bool {
    let Some(pid) = session.started_process() else {
        return true;
    };
    let question = format!(
        "The program is running (process {pid}); quitting kills it. Quit anyway? (y or n) "
    );
    loop {
        match idle(|| editor.readline(&question)) {
            Ok(answer) => match answer.trim() {
                "y" | "Y" | "yes" => return true,
                "n" | "N" | "no" => return false,
                _ => println!("Please answer y or n."),
            },
            // Ctrl-C says no; end of input says yes (nobody is there to ask).
            Err(ReadlineError::Interrupted) => return false,
            Err(_) => return true,
        }
    }
}

/// Tab completion (see `crate::complete`), from the session's program
/// and its selected frame. The session is only read between commands.
struct Completion<'a> {
    session: &'a RefCell<&'a mut Session>,
}

impl Completer for Completion<'_> {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let Ok(session) = self.session.try_borrow() else {
            return Ok((pos, Vec::new()));
        };
        let (start, words) = crate::complete::complete(line, pos, &**session);
        let pairs = words
            .into_iter()
            .map(|word| Pair {
                display: word.clone(),
                replacement: word,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Hinter for Completion<'_> {
    type Hint = String;
}
impl Highlighter for Completion<'_> {}
impl Validator for Completion<'_> {}
impl Helper for Completion<'_> {}
