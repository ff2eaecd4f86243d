//! The documentation names every command the parser knows.

#[test]
fn every_command_is_documented() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md"))
        .expect("docs/commands.md exists");
    for help in commands::all_help() {
        assert!(
            docs.contains(&format!("### `{}`", help.name)),
            "docs/commands.md lacks a section for `{}`",
            help.name
        );
    }
}

#[test]
fn every_analysis_command_is_documented() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md"))
        .expect("docs/commands.md exists");
    let reference = docs
        .split("## Analysis command reference")
        .nth(1)
        .expect("an analysis command reference section");
    for help in commands::analysis_help() {
        assert!(
            reference.contains(&format!("### `{}`", help.name)),
            "docs/commands.md lacks an analysis section for `{}`",
            help.name
        );
    }
}
