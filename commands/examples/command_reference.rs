//! Prints the command reference of docs/commands.md from the command
//! tables, so the documentation is regenerated rather than hand-copied:
//! `cargo run -p commands --example command_reference -- analysis`
//! (or `debugger`).

use commands::CommandHelp;

fn section(help: &CommandHelp) -> String {
    let mut text = format!("### `{}`\n\n", help.name);
    if !help.aliases.is_empty() {
        let aliases: Vec<String> = help.aliases.iter().map(|a| format!("`{a}`")).collect();
        text.push_str(&format!("Aliases: {}\n\n", aliases.join(", ")));
    }
    text.push_str(&format!(
        "Usage: `{}`\n\n{}\n\n",
        help.usage, help.description
    ));
    text.push_str(&format!("```\n{}\n```\n\n", help.example));
    text
}

fn main() {
    let table = match std::env::args().nth(1).as_deref() {
        Some("analysis") => commands::analysis_help(),
        _ => commands::all_help(),
    };
    for help in table {
        print!("{}", section(help));
    }
}
