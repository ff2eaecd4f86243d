//! Real programs at -O0 and -O2, and in Rust, against gdb: Lua 5.4 (the
//! lua-src crate's sources, our driver) and wordfreq (the regex crate,
//! optimized, full DWARF). See tests/common/real.rs for how they are built.

mod common;

use common::real::{lua, lua_script, wordfreq, Opt};

#[test]
fn the_real_programs_build_and_run() {
    for opt in [Opt::O0, Opt::O2] {
        let output = std::process::Command::new(lua(opt))
            .arg(lua_script("tables.lua"))
            .output()
            .expect("run lua");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout).trim(),
            "9\t2358350",
            "{opt:?}"
        );
    }
    let output = std::process::Command::new(wordfreq())
        .output()
        .expect("run wordfreq");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "builtin: 26 words, CAT=3 DOG=3 MAT=3 SAT=6 THE=10",
    );
}
