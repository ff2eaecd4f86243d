//! Invocation (-c, -x FILE, commands on a stdin pipe) and the inspection
//! commands: print (compared with gdb), regs, dis, list, loadobjects.
mod common;
use common::*;

#[test]
fn commands_from_x_file() {
    let p = prog("recurse-O0");
    let dir = scratch_dir("xfile");
    let script = dir.join("cmds.rdbx");
    write_file(&script, "stop in fact -if n == 1\nrun\nwhere\n");
    let o = Rdbx::batch().arg("-x").arg(&script).prog(&p, &[]).run();
    o.assert_no_errors();
    assert!(
        o.has_line("(1) stop in fact -if n == 1"),
        "{}",
        o.transcript()
    );
    assert!(o.nth_where(0).len() >= 7, "{}", o.transcript());
}

#[test]
fn commands_from_stdin_pipe() {
    let p = prog("recurse-O0");
    let o = Rdbx::interactive()
        .stdin("stop in fact -if n == 1\nrun\nwhere\ncont\nquit\n")
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    assert!(
        o.has_line("(1) stop in fact -if n == 1"),
        "{}",
        o.transcript()
    );
    assert_eq!(o.stops().len(), 1);
    assert!(o.nth_where(0).len() >= 7);
    o.assert_out_contains("fact=720 fib=55");
    assert_eq!(o.exit_lines(), [0], "{}", o.transcript());
    assert_eq!(o.exit_code(), Some(0));
}

#[test]
fn stdin_pipe_until_eof_without_quit() {
    let p = prog("recurse-O0");
    let o = Rdbx::interactive()
        .stdin("stop in fact\nrun\n")
        .prog(&p, &[])
        .run();
    assert_eq!(o.stops().len(), 1, "{}", o.transcript());
    assert_eq!(o.exit_code(), Some(0));
}

#[test]
fn batch_without_program() {
    let o = Rdbx::batch().cmd("cont").run();
    o.assert_stderr_well_formed();
    assert_eq!(o.errors().len(), 1, "{}", o.transcript());
    // As `gdb -batch -ex continue`: the last command failed.
    assert_eq!(o.exit_code(), Some(1), "{}", o.transcript());
    let o = Rdbx::batch().cmds(&["cont", "help"]).run();
    assert_eq!(o.exit_code(), Some(0), "the last command did not fail");
}

/// Runs to `show` in types-O0 and prints each expression in rdbx and gdb.
fn compare_prints(exprs: &[&str], frame_cmd: Option<&str>) -> Vec<(String, String, String)> {
    let p = prog("types-O0");
    let mut cmds = vec!["stop in show", "run"];
    let mut gcmds = vec!["break show", "run"];
    if let Some(f) = frame_cmd {
        cmds.push(f);
        gcmds.push(f);
    }
    let rprints: Vec<String> = exprs.iter().map(|e| format!("print {e}")).collect();
    let gprints: Vec<String> = exprs.iter().map(|e| format!("print {e}")).collect();
    cmds.extend(rprints.iter().map(|s| s.as_str()));
    gcmds.extend(gprints.iter().map(|s| s.as_str()));
    let o = Rdbx::batch().cmds(&cmds).prog(&p, &[]).run();
    o.assert_no_errors();
    let gout = gdb(&p, &[], &gcmds);
    let gvals = parse_gdb_values(&gout);
    assert_eq!(gvals.len(), exprs.len(), "gdb:\n{gout}");
    exprs
        .iter()
        .zip(gvals)
        .map(|(e, g)| (e.to_string(), o.printed_one(e), g))
        .collect()
}

/// gdb prints pointers as `(int *) 0x...`; the contract prints `0x...`.
fn normalize_gdb(v: &str) -> String {
    if v.starts_with('(') {
        if let Some(i) = v.find(") 0x") {
            return v[i + 2..].to_string();
        }
    }
    v.to_string()
}

fn assert_prints_match(results: &[(String, String, String)]) {
    for (expr, r, g) in results {
        let g = normalize_gdb(g);
        if g.starts_with("0x7ff") {
            // A stack address: gdb runs the target with a different environment
            // (LINES, COLUMNS), so the stack sits elsewhere. Only the form can be compared.
            assert!(r.starts_with("0x7ff"), "print {expr}: rdbx {r:?} gdb {g:?}");
        } else if g.starts_with("0x") {
            assert_eq!(
                parse_hex(r),
                parse_hex(&g),
                "print {expr}: rdbx {r:?} gdb {g:?}"
            );
        } else {
            assert_eq!(r, &g, "print {expr}: rdbx {r:?} gdb {g:?}");
        }
    }
}

#[test]
fn print_parameters_of_base_types_like_gdb() {
    let r = compare_prints(&["i", "u", "l", "c", "d", "f", "b", "p"], None);
    assert_prints_match(&r);
    // Spot-check the contract's spelling too.
    assert_eq!(r[3].1, "90 'Z'");
    assert_eq!(r[4].1, "-0.5");
    assert!(r[7].1.starts_with("0x"), "{:?}", r[7]);
}

#[test]
fn print_globals_of_base_types_like_gdb() {
    let r = compare_prints(
        &[
            "g_int",
            "g_unsigned",
            "g_long",
            "g_char",
            "g_double",
            "g_float",
            "g_bool",
            "g_ptr",
            "g_short",
        ],
        None,
    );
    assert_prints_match(&r);
    assert_eq!(r[3].1, "97 'a'");
    assert_eq!(r[4].1, "2.5");
}

#[test]
fn print_inexact_double_has_gdb_value() {
    // gdb prints 3.1415899999999999 (%.17g); accept any spelling of the same double.
    let r = compare_prints(&["g_pi", "g_uchar"], None);
    let (rv, gv) = (&r[0].1, &r[0].2);
    assert_eq!(
        rv.parse::<f64>().ok(),
        gv.parse::<f64>().ok(),
        "rdbx {rv} gdb {gv}"
    );
    assert!(r[1].1.starts_with("200"), "{:?}", r[1]);
}

#[test]
fn print_locals_in_caller_and_expressions() {
    let r = compare_prints(
        &[
            "li",
            "lu",
            "ll",
            "lc",
            "ld",
            "lf",
            "lb",
            "a+b",
            "li * 2 + 1",
            "*lp",
        ],
        Some("up"),
    );
    assert_prints_match(&r);
    assert_eq!(r[7].1, "7");
}

#[test]
fn gdb_style_p_uses_history_numbers() {
    let p = prog("types-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in show", "run", "p i", "p c", "print i"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    assert!(o.has_line("$1 = 7"), "{}", o.transcript());
    assert!(o.has_line("$2 = 90 'Z'"), "{}", o.transcript());
    assert!(o.has_line("i = 7"), "{}", o.transcript());
}

#[test]
fn regs_layout_and_pc_like_gdb() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in fact", "run", "regs"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let gout = gdb(&p, &[], &["break fact", "run", "info registers"]);
    let reg = |text: &str, name: &str| -> Option<(String, u64)> {
        text.lines().find_map(|l| {
            if l.len() < 16 || l[..15].trim_end() != name {
                return None;
            }
            Some((
                l.to_string(),
                parse_hex(l[15..].split_whitespace().next()?)?,
            ))
        })
    };
    for name in [
        "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r15", "rip", "eflags",
    ] {
        assert!(
            reg(&o.stdout, name).is_some(),
            "regs shows {name} (name padded to 15)\n{}",
            o.transcript()
        );
    }
    // (stack registers differ: gdb gives the target a different environment)
    for name in ["rip", "rdi"] {
        let (_, r) = reg(&o.stdout, name).unwrap();
        let (_, g) = reg(&gout, name).unwrap_or_else(|| panic!("gdb {name}:\n{gout}"));
        assert_eq!(r, g, "{name}: rdbx {r:#x} gdb {g:#x}\n{}", o.transcript());
    }
    // rax line: hex padded to 19 then decimal.
    let (line, v) = reg(&o.stdout, "rax").unwrap();
    let hex = format!("{v:#x}");
    assert_eq!(&line[15..15 + hex.len()], hex, "{line:?}");
    assert_eq!(line[15 + 19..].trim(), v.to_string(), "{line:?}");
}

/// (address, mnemonic) of disassembly lines; strips a leading `=> `.
fn dis_lines(text: &str) -> Vec<(u64, String, bool)> {
    text.lines()
        .filter_map(|l| {
            let cur = l.starts_with("=> ");
            let l = l.strip_prefix("=> ").unwrap_or(l).trim_start();
            if !l.starts_with("0x") {
                return None;
            }
            let addr = parse_hex(l)?;
            let (_, ins) = l.split_once(":\t")?;
            Some((addr, ins.split_whitespace().next()?.to_string(), cur))
        })
        .collect()
}

#[test]
fn dis_function_matches_gdb() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in main", "run", "dis main", "dis"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    o.assert_out_contains("<main+");
    let gout = gdb(
        &p,
        &[],
        &["break main", "run", "x/6i main", "info registers rip"],
    );
    let g = dis_lines(&gout.replace("=> ", "   "));
    let r = dis_lines(&o.stdout);
    assert!(r.len() >= 6, "{}", o.transcript());
    let r6: Vec<(u64, String)> = r.iter().take(6).map(|(a, m, _)| (*a, m.clone())).collect();
    let g6: Vec<(u64, String)> = g.iter().take(6).map(|(a, m, _)| (*a, m.clone())).collect();
    assert_eq!(
        r6,
        g6,
        "dis main vs gdb x/6i main\n{gout}\n{}",
        o.transcript()
    );
    assert!(
        o.stdout
            .lines()
            .any(|l| l.contains("call") && l.contains("<fact>")),
        "call targets are symbolized\n{}",
        o.transcript()
    );
    let rip = gout
        .lines()
        .find_map(|l| parse_hex(l.strip_prefix("rip")?.split_whitespace().next()?))
        .unwrap();
    let cur: Vec<u64> = r.iter().filter(|x| x.2).map(|x| x.0).collect();
    assert!(
        !cur.is_empty() && cur.iter().all(|a| *a == rip),
        "`=> ` marks the pc {rip:#x}\n{}",
        o.transcript()
    );
}

#[test]
fn list_function_shows_source_lines() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch().cmds(&["list fact"]).prog(&p, &[]).run();
    o.assert_no_errors();
    let listed: Vec<(u32, String)> = o
        .stdout
        .lines()
        .filter_map(|l| {
            let (n, t) = l.split_once('\t')?;
            Some((n.trim().parse().ok()?, t.to_string()))
        })
        .collect();
    assert!(listed.len() >= 5, "{}", o.transcript());
    for (n, t) in &listed {
        assert_eq!(t, &source_line("recurse.c", *n), "line {n}");
    }
    let rec = line_of("recurse.c", "fact_rec");
    assert!(
        listed.iter().any(|(n, _)| *n == rec),
        "list fact includes fact's body\n{}",
        o.transcript()
    );
    for l in o.stdout.lines().filter(|l| l.contains('\t')) {
        let (n, _) = l.split_once('\t').unwrap();
        assert_eq!(n.len(), 6, "line numbers right-aligned in 6 columns: {l:?}");
    }
}

#[test]
fn list_line_range() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch().cmds(&["list 8,12"]).prog(&p, &[]).run();
    o.assert_no_errors();
    let want: String = (8..=12)
        .map(|n| format!("{n:>6}\t{}\n", source_line("recurse.c", n)))
        .collect();
    o.assert_out_contains(&want);
}

#[test]
fn loadobjects_lists_libc_and_loader() {
    let p = prog("recurse-O0");
    let o = Rdbx::batch()
        .cmds(&["stop in main", "run", "loadobjects"])
        .prog(&p, &[])
        .run();
    o.assert_no_errors();
    let objs: Vec<(u64, String)> = o
        .stdout
        .lines()
        .filter_map(|l| {
            let (a, path) = l.trim().split_once("  ")?;
            if a.len() != 18 {
                return None;
            }
            Some((parse_hex(a)?, path.trim().to_string()))
        })
        .collect();
    assert!(
        objs.iter().any(|(_, p)| p.ends_with("libc.so.6")),
        "{}",
        o.transcript()
    );
    assert!(
        objs.iter().any(|(_, p)| p.contains("ld-linux-x86-64.so.2")),
        "{}",
        o.transcript()
    );
    assert!(objs.iter().all(|(a, _)| *a != 0), "{}", o.transcript());
}
