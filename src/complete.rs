//! Tab completion: which words complete the word under the cursor. The
//! words come from a [`Source`] (the session, or a fixed list in tests);
//! this module only decides which kind of word is wanted where.

/// Where completion draws its words from.
pub trait Source {
    /// Command names and aliases (their first words).
    fn commands(&self) -> Vec<String>;
    /// Function names of the program.
    fn functions(&self) -> Vec<String>;
    /// Source file names of the program.
    fn files(&self) -> Vec<String>;
    /// Locals and parameters of the selected frame, and globals.
    fn variables(&self) -> Vec<String>;
    /// The member names of the structure `expression` is, or points to.
    fn members(&self, expression: &str) -> Vec<String>;
}

/// Commands whose argument is an expression: variables complete there.
const EXPRESSION_COMMANDS: &[&str] = &["print", "display", "whatis", "ptype"];

/// No more candidates than this (gdb's `max-completions` is 200).
const MAX_CANDIDATES: usize = 500;

/// The completions of `line` with the cursor at byte `pos`: where the word
/// being completed starts, and the words that may replace it, sorted.
pub fn complete(line: &str, pos: usize, source: &dyn Source) -> (usize, Vec<String>) {
    let before = &line[..pos.min(line.len())];
    let leading = before.len() - before.trim_start().len();
    let command_end = before[leading..]
        .find(|c: char| c.is_whitespace() || c == '/')
        .map(|i| leading + i);
    let Some(command_end) = command_end else {
        return (leading, matching(source.commands(), &before[leading..]));
    };
    let command = &before[leading..command_end];
    if is_expression_command(command) {
        return complete_expression(before, command_end, source);
    }
    let start = before
        .rfind(|c: char| c.is_whitespace() || c == '"')
        .map_or(0, |i| i + 1);
    let mut words = source.functions();
    words.extend(source.files());
    (start, matching(words, &before[start..]))
}

fn is_expression_command(word: &str) -> bool {
    commands::find_help(word).is_some_and(|help| EXPRESSION_COMMANDS.contains(&help.name))
}

/// In an expression: after `.` or `->` the members of what stands before
/// it, otherwise variables and functions.
fn complete_expression(before: &str, floor: usize, source: &dyn Source) -> (usize, Vec<String>) {
    let start = before[floor..]
        .rfind(|c: char| !is_identifier_char(c))
        .map_or(floor, |i| floor + i + 1);
    let word = &before[start..];
    let ahead = &before[floor..start];
    let operator = if ahead.ends_with("->") {
        Some(2)
    } else if ahead.ends_with('.') {
        Some(1)
    } else {
        None
    };
    let words = match operator {
        Some(length) => {
            let base_end = start - length;
            let base_start = postfix_start(before, floor, base_end);
            let base = before[base_start..base_end].trim();
            if base.is_empty() {
                Vec::new()
            } else {
                source.members(base)
            }
        }
        None => {
            let mut words = source.variables();
            words.extend(source.functions());
            words
        }
    };
    (start, matching(words, word))
}

/// Where the postfix expression (`a`, `s.in[2]`, `f(x)->p`) ending at
/// `end` starts: back over names, `.`, `->` and balanced brackets, never
/// before `floor`.
fn postfix_start(text: &str, floor: usize, end: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = end;
    let mut depth = 0usize;
    while i > floor {
        let c = bytes[i - 1];
        match c {
            b')' | b']' => depth += 1,
            b'(' | b'[' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            b'.' => {}
            b'>' if i >= floor + 2 && bytes[i - 2] == b'-' => i -= 1,
            _ if is_identifier_char(c as char) => {}
            _ => break,
        }
        i -= 1;
    }
    i
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// The words that start with `prefix`, sorted, once each.
fn matching(words: Vec<String>, prefix: &str) -> Vec<String> {
    let mut found: Vec<String> = words
        .into_iter()
        .filter(|w| w.starts_with(prefix) && !w.is_empty())
        .collect();
    found.sort();
    found.dedup();
    found.truncate(MAX_CANDIDATES);
    found
}

/// gdb's `complete TEXT`: each completion as the whole line it makes.
pub fn completed_lines(text: &str, source: &dyn Source) -> Vec<String> {
    let (start, words) = complete(text, text.len(), source);
    words
        .into_iter()
        .map(|word| format!("{}{word}", &text[..start]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program with `count` and `s` (a struct with `x`, `y`, `inner`)
    /// in scope and `p` pointing to one.
    struct Fixed;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    impl Source for Fixed {
        fn commands(&self) -> Vec<String> {
            strings(&["print", "ptype", "step", "stop"])
        }
        fn functions(&self) -> Vec<String> {
            strings(&["main", "compute"])
        }
        fn files(&self) -> Vec<String> {
            strings(&["prog.c"])
        }
        fn variables(&self) -> Vec<String> {
            strings(&["count", "s", "p", "counter"])
        }
        fn members(&self, expression: &str) -> Vec<String> {
            match expression {
                "s" | "p" | "(*p)" | "arr[i + 1]" | "s.inner" => strings(&["x", "y", "inner"]),
                _ => Vec::new(),
            }
        }
    }

    fn at_end(line: &str) -> (usize, Vec<String>) {
        complete(line, line.len(), &Fixed)
    }

    #[test]
    fn first_word_is_a_command() {
        assert_eq!(at_end("st"), (0, strings(&["step", "stop"])));
        assert_eq!(at_end("  p"), (2, strings(&["print", "ptype"])));
    }

    #[test]
    fn expression_commands_complete_variables_and_functions() {
        assert_eq!(
            at_end("print co"),
            (6, strings(&["compute", "count", "counter"]))
        );
        assert_eq!(
            at_end("p count + cou"),
            (10, strings(&["count", "counter"]))
        );
        assert_eq!(
            at_end("display/x cou"),
            (10, strings(&["count", "counter"]))
        );
        assert_eq!(
            at_end("whatis (c"),
            (8, strings(&["compute", "count", "counter"]))
        );
    }

    #[test]
    fn members_after_dot_and_arrow() {
        assert_eq!(at_end("print s."), (8, strings(&["inner", "x", "y"])));
        assert_eq!(at_end("print p->i"), (9, strings(&["inner"])));
        assert_eq!(at_end("ptype s.inner.x"), (14, strings(&["x"])));
        assert_eq!(at_end("print 2 * arr[i + 1].y"), (21, strings(&["y"])));
        assert_eq!(at_end("print (*p).x"), (11, strings(&["x"])));
        assert_eq!(at_end("print nosuch."), (13, Vec::new()));
    }

    #[test]
    fn other_commands_complete_functions_and_files() {
        assert_eq!(at_end("stop in co"), (8, strings(&["compute"])));
        assert_eq!(at_end("stop at \"pr"), (9, strings(&["prog.c"])));
        // Variables are for expressions only.
        assert_eq!(at_end("stop in cou"), (8, Vec::new()));
    }

    #[test]
    fn the_cursor_may_be_inside_the_line() {
        assert_eq!(
            complete("print cou + 1", 9, &Fixed).1,
            strings(&["count", "counter"])
        );
    }

    /// The session at a stop in `scale` of tests/programs/session.c
    /// (built here): the candidates the line editor gets.
    #[test]
    fn candidates_at_a_stop_in_a_real_program() {
        let dir = std::env::temp_dir().join(format!("rdbx-complete-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join("session");
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs/session.c");
        let built = std::process::Command::new("gcc")
            .args(["-g", "-O0", source, "-o"])
            .arg(&program)
            .status()
            .expect("gcc must be installed");
        assert!(built.success());
        let mut session = crate::session::Session::new().unwrap();
        session
            .load_program(program.to_str().unwrap(), &[])
            .unwrap();
        session.execute_line("stop in scale");
        session.execute_line("run");
        let at = |session: &crate::session::Session, line: &str, pos: usize| {
            complete(line, pos, session)
        };
        assert_eq!(
            at(&session, "print sca", 9),
            (6, strings(&["scale", "scaled"]))
        );
        // The cursor in the middle of the line: the word before it.
        assert_eq!(
            at(&session, "print pp->ri + factor", 12),
            (10, strings(&["right"]))
        );
        assert_eq!(at(&session, "p fac * 2", 5), (2, strings(&["factor"])));
        assert_eq!(
            at(&session, "ptype pp->next_pair->", 21),
            (21, strings(&["left", "next_pair", "right"]))
        );
        assert_eq!(at(&session, "whatis g_p", 10), (7, strings(&["g_pair"])));
        // Not an expression command: functions, not variables.
        assert_eq!(at(&session, "stop in sca", 11), (8, strings(&["scale"])));
        session.execute_line("up");
        assert_eq!(
            at(&session, "print local_pair.", 17),
            (17, strings(&["left", "next_pair", "right"]))
        );
        assert_eq!(at(&session, "print fac", 9), (6, Vec::new()));
        session.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn complete_shows_whole_lines() {
        assert_eq!(
            completed_lines("print s.i", &Fixed),
            strings(&["print s.inner"])
        );
        assert_eq!(completed_lines("st", &Fixed), strings(&["step", "stop"]));
    }
}
