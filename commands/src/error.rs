//! The one error type of the command language.

/// Why a command line could not be parsed. Every message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The first word is no command; `suggestion` is the nearest spelling.
    #[error("unknown command \"{word}\"; {}", hint(.suggestion))]
    UnknownCommand {
        word: String,
        suggestion: Option<String>,
    },
    /// A known command with missing, extra or malformed arguments.
    #[error("{command}: {problem}; usage: {usage}")]
    Invalid {
        command: String,
        problem: String,
        usage: String,
    },
    /// A command inside the `{ ... }` body of `when` is wrong.
    #[error("in when body: {0}")]
    WhenBody(Box<ParseError>),
}

fn hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(name) => format!("did you mean \"{name}\"?"),
        None => "type \"help\" for a list of commands".to_string(),
    }
}
