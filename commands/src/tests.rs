//! Every command, alias and error case of the parser.

use crate::*;

fn ok(line: &str) -> Command {
    parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

/// The error message of a line that must not parse.
fn err(line: &str) -> String {
    match parse(line) {
        Ok(command) => panic!("{line:?} parsed as {command:?}"),
        Err(e) => e.to_string(),
    }
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn func(name: &str) -> Location {
    Location::Function(name.to_string())
}

fn line(file: Option<&str>, line: u32) -> Location {
    Location::Line {
        file: file.map(String::from),
        line,
    }
}

fn addr(text: &str) -> Location {
    Location::Address(text.to_string())
}

fn stop(location: Location) -> Command {
    Command::Stop(BreakpointSpec::at(location))
}

fn sig(name: &str) -> Signal {
    Signal::parse(name).unwrap()
}

#[test]
fn blank_and_comment_lines() {
    for line in ["", "   ", "\t", "# a comment", "  #x"] {
        assert_eq!(ok(line), Command::Nothing);
    }
}

#[test]
fn run_and_its_arguments() {
    let none = Redirects::default();
    assert_eq!(
        ok("run"),
        Command::Run {
            args: None,
            redirects: none.clone()
        }
    );
    assert_eq!(ok("r"), ok("run"));
    assert_eq!(
        ok(r#"run a 'b c' "d e" < in.txt > "out file""#),
        Command::Run {
            args: Some(words(&["a", "b c", "d e"])),
            redirects: Redirects {
                stdin: Some("in.txt".into()),
                stdout: Some("out file".into()),
                append: false
            }
        }
    );
    assert_eq!(
        ok("r x>>log"),
        Command::Run {
            args: Some(words(&["x"])),
            redirects: Redirects {
                stdin: None,
                stdout: Some("log".into()),
                append: true
            }
        }
    );
    assert_eq!(
        ok("run '>' x"),
        Command::Run {
            args: Some(words(&[">", "x"])),
            redirects: none.clone()
        }
    );
    assert_eq!(
        ok("rerun"),
        Command::Rerun {
            args: vec![],
            redirects: none.clone()
        }
    );
    assert_eq!(
        ok("rerun 1 2"),
        Command::Rerun {
            args: words(&["1", "2"]),
            redirects: none
        }
    );
    assert!(err("run >").contains("missing file name after >"));
    assert!(err("run < a < b").contains("< given twice"));
    assert!(err("run 'oops").contains("unterminated"));
}

#[test]
fn process_commands() {
    for (line, command) in [
        ("kill", Command::Kill),
        ("k", Command::Kill),
        ("quit", Command::Quit),
        ("q", Command::Quit),
        ("exit", Command::Quit),
        ("detach", Command::Detach),
        ("maintenance crash panic", Command::Crash(CrashKind::Panic)),
        (
            "maint crash thread-stack-overflow",
            Command::Crash(CrashKind::ThreadStackOverflow),
        ),
        ("attach 123", Command::Attach { pid: 123 }),
    ] {
        assert_eq!(ok(line), command, "{line}");
    }
    assert!(err("attach").contains("missing process id"));
    assert!(err("attach x").contains("invalid process id \"x\""));
    assert!(err("quit now").contains("unexpected argument \"now\""));
}

#[test]
fn dbx_stop() {
    assert_eq!(ok("stop in main"), stop(func("main")));
    assert_eq!(ok("stop in ns::f"), stop(func("ns::f")));
    assert_eq!(ok("stop at 12"), stop(line(None, 12)));
    assert_eq!(ok("stop at foo.c:12"), stop(line(Some("foo.c"), 12)));
    assert_eq!(
        ok(r#"stop at "my file.c":7"#),
        stop(line(Some("my file.c"), 7))
    );
    assert_eq!(ok("stopi at 0x401000"), stop(addr("0x401000")));
    assert_eq!(ok("stopi in main"), stop(func("main")));
    assert_eq!(
        ok("stop at 5 -count 3 -temp -if x == 'a' && s[1] > 2"),
        Command::Stop(BreakpointSpec {
            location: line(None, 5),
            condition: Some("x == 'a' && s[1] > 2".into()),
            count: Some(3),
            temporary: true,
        })
    );
    assert_eq!(
        ok("stop in f -if a  <  b -temp -count 2"),
        Command::Stop(BreakpointSpec {
            location: func("f"),
            condition: Some("a  <  b".into()),
            count: Some(2),
            temporary: true,
        })
    );
}

#[test]
fn dbx_stop_errors() {
    assert_eq!(
        err("stop in"),
        "stop: missing function name; usage: stop in FUNCTION | stop at [FILE:]LINE  \
         [-if EXPR] [-count N] [-temp]"
    );
    // A bare `stop` is dbx's "stop here", meaningful in a `when` body.
    assert_eq!(parse("stop").unwrap(), Command::Halt);
    assert!(err("stop main").contains("expected \"in\" or \"at\", got \"main\""));
    assert!(err("stop at foo.c:abc").contains("invalid line number \"abc\""));
    assert!(err("stop at 0").contains("invalid line number \"0\""));
    assert!(err("stop at").contains("missing line number"));
    assert!(err("stop in 12").contains("\"12\" is not a function name"));
    assert!(err("stop in f -if").contains("missing expression after -if"));
    assert!(err("stop in f -count").contains("missing number after -count"));
    assert!(err("stop in f -count 0").contains("count must be positive"));
    assert!(err("stop in f -bogus").contains("unexpected \"-bogus\""));
    assert!(err("stopi at").contains("stopi: missing address"));
}

#[test]
fn gdb_break() {
    assert_eq!(ok("break main"), stop(func("main")));
    assert_eq!(ok("b main"), stop(func("main")));
    assert_eq!(ok("br 42"), stop(line(None, 42)));
    assert_eq!(ok("b foo.c:42"), stop(line(Some("foo.c"), 42)));
    assert_eq!(ok("b *0x401136"), stop(addr("0x401136")));
    assert_eq!(ok("b *main+4"), stop(addr("main+4")));
    assert_eq!(ok("b 0x401136"), stop(addr("0x401136")));
    assert_eq!(
        ok("b std::vector<int>::push_back"),
        stop(func("std::vector<int>::push_back"))
    );
    assert_eq!(
        ok("b foo.cc:ns::f"),
        stop(Location::FunctionInFile {
            file: "foo.cc".into(),
            function: "ns::f".into()
        })
    );
    assert_eq!(
        ok("break foo.c:9 if n > 10"),
        Command::Stop(BreakpointSpec {
            condition: Some("n > 10".into()),
            ..BreakpointSpec::at(line(Some("foo.c"), 9))
        })
    );
    assert_eq!(
        ok("tbreak main"),
        Command::Stop(BreakpointSpec {
            temporary: true,
            ..BreakpointSpec::at(func("main"))
        })
    );
    assert!(err("break").contains("break: missing location"));
    assert!(err("b *").contains("missing address after *"));
    assert!(err("b main if").contains("missing expression after if"));
    assert!(err("b main thread 2").contains("unexpected \"thread\""));
}

#[test]
fn when_bodies_are_parsed() {
    let Command::When {
        spec,
        body_text,
        body,
    } = ok(r#"when at loop.c:8 -if i > 2 { print i; p "a;b" ; when in g { cont } ; }"#)
    else {
        panic!("not a when");
    };
    assert_eq!(spec.location, line(Some("loop.c"), 8));
    assert_eq!(spec.condition.as_deref(), Some("i > 2"));
    assert_eq!(body_text, r#"print i; p "a;b" ; when in g { cont } ;"#);
    assert_eq!(body.len(), 3);
    assert_eq!(
        body[1],
        Command::Print(PrintSpec {
            expr: "\"a;b\"".into(),
            format: None,
            gdb_style: true
        })
    );
    assert!(matches!(&body[2], Command::When { body, .. } if body.len() == 1));
    let Command::When { spec, body, .. } = ok("when in main {}") else {
        panic!()
    };
    assert_eq!(spec.location, func("main"));
    assert!(body.is_empty());
}

#[test]
fn when_errors() {
    assert!(err("when in main").contains("missing { COMMANDS }"));
    assert!(err("when in main { print x").contains("missing closing }"));
    assert!(err("when in main { print x } x").contains("unexpected \"x\" after }"));
    assert!(err("when { print x }").contains("when: missing location"));
    assert_eq!(
        err("when in main { stpo in f }"),
        "in when body: unknown command \"stpo\"; did you mean \"stop\"?"
    );
}

/// `when` bodies parse recursively: nesting is bounded, and an error deep
/// inside is one line that says where once.
#[test]
fn when_bodies_nest_to_a_limit() {
    let nested = |levels: usize| {
        format!(
            "{}print 1{}",
            "when in main { ".repeat(levels),
            " }".repeat(levels)
        )
    };
    assert!(matches!(
        parse(&nested(crate::parse::MAX_WHEN_NESTING)),
        Ok(Command::When { .. })
    ));
    for levels in [crate::parse::MAX_WHEN_NESTING + 1, 20_000] {
        let message = err(&nested(levels));
        assert!(
            message.starts_with("in when body: when: when bodies nest at most 16 deep"),
            "{message}"
        );
        assert_eq!(message.matches("in when body").count(), 1, "{message}");
    }
    assert_eq!(
        err("when in main { when in f { stpo } }"),
        "in when body: unknown command \"stpo\"; did you mean \"stop\"?"
    );
}

#[test]
fn breakpoint_management() {
    for line in [
        "status",
        "info breakpoints",
        "info b",
        "i b",
        "info break",
        "info br",
    ] {
        assert_eq!(ok(line), Command::Status, "{line}");
    }
    assert_eq!(
        ok("delete 1 2,3"),
        Command::Delete(Selection::Ids(vec![1, 2, 3]))
    );
    assert_eq!(ok("d all"), Command::Delete(Selection::All));
    assert!(err("delete x").contains("delete: invalid number \"x\""));
    assert!(err("delete").contains("missing number"));
    assert_eq!(ok("clear"), Command::Clear(None));
    assert_eq!(
        ok("clear foo.c:3"),
        Command::Clear(Some(line(Some("foo.c"), 3)))
    );
    assert_eq!(ok("ignore 2 5"), Command::IgnoreCount { id: 2, count: 5 });
    assert_eq!(
        ok("condition 1 argc > 2"),
        Command::Condition {
            id: 1,
            condition: Some("argc > 2".into())
        }
    );
    assert_eq!(
        ok("condition 1"),
        Command::Condition {
            id: 1,
            condition: None
        }
    );
    assert!(err("condition").contains("missing breakpoint number"));
    assert_eq!(ok("enable"), Command::Enable(Selection::All));
    assert_eq!(ok("disable 4"), Command::Disable(Selection::Ids(vec![4])));
}

#[test]
fn execution_control() {
    let pending = |count| Command::Continue {
        count,
        signal: Delivery::Pending,
    };
    assert_eq!(ok("cont"), pending(None));
    assert_eq!(ok("c 3"), pending(Some(3)));
    assert_eq!(ok("continue"), pending(None));
    assert_eq!(
        ok("cont sig SIGUSR1"),
        Command::Continue {
            count: None,
            signal: Delivery::Signal(sig("USR1"))
        }
    );
    assert_eq!(
        ok("cont sig 0"),
        Command::Continue {
            count: None,
            signal: Delivery::Cancel
        }
    );
    assert!(err("cont sig").contains("missing signal"));
    assert!(err("cont sig FOO").contains("unknown signal \"FOO\""));
    for (line, command) in [
        ("step", Command::Step { count: 1 }),
        ("s 4", Command::Step { count: 4 }),
        ("next", Command::Next { count: 1 }),
        ("n 2", Command::Next { count: 2 }),
        ("step up", Command::StepUp),
        ("finish", Command::StepUp),
        ("fin", Command::StepUp),
        ("stepi", Command::StepInstruction { count: 1 }),
        ("si 3", Command::StepInstruction { count: 3 }),
        ("nexti", Command::NextInstruction { count: 1 }),
        ("ni 9", Command::NextInstruction { count: 9 }),
    ] {
        assert_eq!(ok(line), command, "{line}");
    }
    assert_eq!(
        err("step -3"),
        "step: invalid count \"-3\" (expected a non-negative integer); usage: step [N]"
    );
    assert!(err("next 0").contains("count must be positive, got 0"));
    assert!(err("step up 2").contains("step up: unexpected argument \"2\""));
    assert!(err("step 1 2").contains("unexpected argument \"2\""));
}

#[test]
fn stack_and_threads() {
    for (line, command) in [
        (
            "where",
            Command::Where {
                depth: None,
                thread: None,
            },
        ),
        (
            "bt",
            Command::Where {
                depth: None,
                thread: None,
            },
        ),
        (
            "backtrace 3",
            Command::Where {
                depth: Some(3),
                thread: None,
            },
        ),
        (
            "where t@2",
            Command::Where {
                depth: None,
                thread: Some(2),
            },
        ),
        (
            "where 4 t@3",
            Command::Where {
                depth: Some(4),
                thread: Some(3),
            },
        ),
        (
            "where t@3 4",
            Command::Where {
                depth: Some(4),
                thread: Some(3),
            },
        ),
        ("up", Command::Up { count: None }),
        ("up 2", Command::Up { count: Some(2) }),
        ("down", Command::Down { count: None }),
        ("down 0", Command::Down { count: Some(0) }),
        ("frame", Command::Frame { number: None }),
        ("f 0", Command::Frame { number: Some(0) }),
        ("threads", Command::Threads),
        ("info threads", Command::Threads),
        ("thread 2", Command::Thread { id: 2 }),
        ("thread t@2", Command::Thread { id: 2 }),
        ("t 1", Command::Thread { id: 1 }),
        ("t t@1", Command::Thread { id: 1 }),
        ("regs", Command::Registers { names: vec![] }),
        ("info registers", Command::Registers { names: vec![] }),
        ("info reg", Command::Registers { names: vec![] }),
        ("i r", Command::Registers { names: vec![] }),
        (
            "i r $rip rsp",
            Command::Registers {
                names: words(&["rip", "rsp"]),
            },
        ),
        ("loadobjects", Command::LoadObjects),
        ("info sharedlibrary", Command::LoadObjects),
        ("info sharedlib", Command::LoadObjects),
    ] {
        assert_eq!(ok(line), command, "{line}");
    }
    assert_eq!(
        err("thread"),
        "thread: missing thread id (t@N or N); usage: thread t@N | thread N"
    );
    for bad in [
        "thread t@",
        "thread t@x",
        "thread t@0",
        "thread x@2",
        "thread -1",
    ] {
        assert!(
            err(bad).contains("invalid thread id") && err(bad).contains("expected t@N or N"),
            "{bad}: {}",
            err(bad)
        );
    }
    assert!(err("thread t@1 t@2").contains("unexpected argument \"t@2\""));
    assert!(err("where t@1 t@2").contains("two thread ids"));
    assert!(err("where 2 3").contains("unexpected argument \"3\""));
    assert!(err("where t@q").contains("invalid thread id \"t@q\""));
    assert!(err("frame x").contains("invalid frame number"));
    assert!(err("info").contains("info: missing subcommand"));
    assert!(err("info bogus").contains("unknown subcommand \"bogus\""));
}

#[test]
fn listing_and_disassembly() {
    assert_eq!(ok("list"), Command::List(ListTarget::Next));
    assert_eq!(ok("l -"), Command::List(ListTarget::Previous));
    assert_eq!(
        ok("list main"),
        Command::List(ListTarget::Around(func("main")))
    );
    assert_eq!(
        ok("list 20"),
        Command::List(ListTarget::Around(line(None, 20)))
    );
    assert_eq!(
        ok("list a.c:20"),
        Command::List(ListTarget::Around(line(Some("a.c"), 20)))
    );
    assert_eq!(
        ok("list a.c:10,20"),
        Command::List(ListTarget::Range {
            file: Some("a.c".into()),
            first: 10,
            last: 20
        })
    );
    assert!(err("list 20,10").contains("runs backwards"));
    assert!(err("list 1,x").contains("invalid line number \"x\""));

    let dis = |start: Option<Location>, count, gdb_style| Command::Disassemble {
        start,
        count,
        gdb_style,
    };
    assert_eq!(ok("dis"), dis(None, None, false));
    assert_eq!(ok("disassemble"), dis(None, None, true));
    assert_eq!(ok("disas main"), dis(Some(func("main")), None, true));
    assert_eq!(
        ok("dis 0x401000 5"),
        dis(Some(addr("0x401000")), Some(5), false)
    );
    assert_eq!(ok("dis $pc"), dis(Some(addr("$pc")), None, false));
    assert_eq!(ok("dis *main"), dis(Some(addr("main")), None, false));
    assert_eq!(ok("x/4i $pc"), dis(Some(addr("$pc")), Some(4), false));
    assert_eq!(ok("x/i 0x10"), dis(Some(addr("0x10")), Some(1), false));
    assert_eq!(ok("x/3i"), dis(Some(addr("$pc")), Some(3), false));
    assert_eq!(
        ok("examine main /3i"),
        dis(Some(func("main")), Some(3), false)
    );
    assert!(err("dis main x").contains("invalid instruction count \"x\""));
}

#[test]
fn print_in_both_styles() {
    let print = |expr: &str, format, gdb_style| {
        Command::Print(PrintSpec {
            expr: expr.into(),
            format,
            gdb_style,
        })
    };
    assert_eq!(ok("print x + 1"), print("x + 1", None, false));
    assert_eq!(ok("p x"), print("x", None, true));
    assert_eq!(
        ok("p/x flags & 0xff"),
        print("flags & 0xff", Some('x'), true)
    );
    assert_eq!(ok("print/d c"), print("c", Some('d'), true));
    assert_eq!(ok("print -x n"), print("n", Some('x'), false));
    assert_eq!(ok("print -x"), print("-x", None, false));
    assert_eq!(ok("print -- -x"), print("-x", None, false));
    assert_eq!(ok("print -y - 1"), print("-y - 1", None, false));
    assert_eq!(ok("p \"a  b\""), print("\"a  b\"", None, true));
    assert!(err("print").contains("print: missing expression"));
    assert!(err("p/x").contains("missing expression"));
    assert!(err("p/q x").contains("unknown format \"q\""));
    assert!(err("step/x").contains("unexpected \"/\""));
}

#[test]
fn examine_in_both_styles() {
    let examine = |address: Option<&str>, count, format, size| {
        Command::Examine(ExamineSpec {
            address: address.map(String::from),
            count,
            format,
            size,
        })
    };
    assert_eq!(ok("x/4xw &a"), examine(Some("&a"), 4, Some('x'), Some('w')));
    assert_eq!(
        ok("x/gd $sp"),
        examine(Some("$sp"), 1, Some('d'), Some('g'))
    );
    assert_eq!(ok("x &a"), examine(Some("&a"), 1, None, None));
    assert_eq!(ok("x"), examine(None, 1, None, None));
    assert_eq!(ok("x/2s p"), examine(Some("p"), 2, Some('s'), None));
    assert_eq!(
        ok("examine &a /4x"),
        examine(Some("&a"), 4, Some('x'), None)
    );
    assert_eq!(
        ok("examine &a / 2 bx"),
        examine(Some("&a"), 2, Some('x'), Some('b'))
    );
    assert_eq!(ok("examine p + 1"), examine(Some("p + 1"), 1, None, None));
    assert_eq!(
        ok("examine (p / n)"),
        examine(Some("(p / n)"), 1, None, None)
    );
    assert!(err("x/4q &a").contains("unknown letter \"q\""));
    assert!(err("x/xd &a").contains("two formats"));
    assert!(err("x/0x &a").contains("count must be positive"));
}

#[test]
fn locals_and_args() {
    assert_eq!(ok("dump"), Command::Dump { function: None });
    assert_eq!(
        ok("dump fact"),
        Command::Dump {
            function: Some("fact".into())
        }
    );
    assert_eq!(ok("info locals"), Command::Dump { function: None });
    assert_eq!(ok("info args"), Command::Arguments);
    assert!(err("info args x").contains("unexpected argument"));
    assert!(err("dump a b").contains("unexpected argument"));
}

#[test]
fn other_data_commands() {
    assert_eq!(
        ok("display"),
        Command::Display {
            expr: None,
            format: None
        }
    );
    assert_eq!(
        ok("display/x i"),
        Command::Display {
            expr: Some("i".into()),
            format: Some('x')
        }
    );
    assert_eq!(ok("undisplay all"), Command::Undisplay(Selection::All));
    assert_eq!(ok("whatis argv[0]"), Command::Whatis("argv[0]".into()));
    assert_eq!(
        ok("ptype struct node"),
        Command::Ptype("struct node".into())
    );
    assert!(err("whatis").contains("missing expression"));
    let assign = |t: &str, v: &str, gdb_style| Command::Assign {
        target: t.into(),
        value: v.into(),
        gdb_style,
    };
    assert_eq!(
        ok("assign a[i==1] = b == c"),
        assign("a[i==1]", "b == c", false)
    );
    assert_eq!(ok("set var x = 3"), assign("x", "3", true));
    assert_eq!(ok("set variable p->n = -1"), assign("p->n", "-1", true));
    assert_eq!(ok("set x=4"), assign("x", "4", true));
    assert!(err("assign x == 3").contains("missing \"= EXPR\""));
    assert!(err("assign = 3").contains("missing expression on one side"));
}

#[test]
fn calls_and_settings() {
    assert_eq!(
        ok("call add(2, \"x y\")"),
        Command::Call("add(2, \"x y\")".into())
    );
    assert!(err("call").contains("missing expression"));
    let setting = |name: Option<&str>, value: Option<&str>| Command::Dbxenv {
        name: name.map(String::from),
        value: value.map(String::from),
    };
    assert_eq!(ok("dbxenv"), setting(None, None));
    assert_eq!(
        ok("dbxenv call_timeout"),
        setting(Some("call_timeout"), None)
    );
    assert_eq!(
        ok("dbxenv call_timeout 2.5"),
        setting(Some("call_timeout"), Some("2.5"))
    );
    assert_eq!(
        ok("set call-timeout 1"),
        setting(Some("call_timeout"), Some("1"))
    );
    assert!(err("dbxenv nosuch 1").contains("unknown setting \"nosuch\""));
    assert!(err("dbxenv call_timeout 1 2").contains("unexpected argument \"2\""));
    assert_eq!(
        ok("dbxenv stack_past_main on"),
        setting(Some("stack_past_main"), Some("on"))
    );
    assert_eq!(
        ok("set backtrace past-main off"),
        setting(Some("stack_past_main"), Some("off"))
    );
    assert_eq!(
        ok("set backtrace  past-main"),
        setting(Some("stack_past_main"), None)
    );
    // `set` of a variable is still an assignment.
    assert!(matches!(ok("set call = 1"), Command::Assign { .. }));
}

#[test]
fn complete_keeps_its_text_as_typed() {
    assert_eq!(
        ok("complete print s."),
        Command::Complete("print s.".into())
    );
    // A trailing blank asks for every completion of an empty word.
    assert_eq!(ok("  complete p "), Command::Complete("p ".into()));
    assert_eq!(ok("complete"), Command::Complete(String::new()));
    // Only the word itself: `completely` is no command.
    assert!(err("completely").contains("unknown command"));
}

#[test]
fn signal_dispositions() {
    let set = |signals: Vec<Signal>, stop, print, pass| {
        Command::Signals(SignalCommand::Set {
            signals,
            disposition: Disposition { stop, print, pass },
        })
    };
    let show = |filter| Command::Signals(SignalCommand::Show(filter));
    assert_eq!(ok("catch"), show(SignalFilter::Caught));
    assert_eq!(ok("ignore"), show(SignalFilter::Ignored));
    assert_eq!(ok("handle"), show(SignalFilter::All));
    assert_eq!(ok("info signals"), show(SignalFilter::All));
    assert_eq!(
        ok("handle segv"),
        show(SignalFilter::Only(vec![Signal::SIGSEGV]))
    );
    assert_eq!(
        ok("catch SIGSEGV usr1 14"),
        set(
            vec![Signal::SIGSEGV, sig("USR1"), sig("ALRM")],
            Some(true),
            Some(true),
            None
        )
    );
    assert_eq!(
        ok("ignore ALRM"),
        set(vec![sig("ALRM")], Some(false), Some(false), Some(true))
    );
    assert_eq!(
        ok("ignore 14"),
        set(vec![sig("ALRM")], Some(false), Some(false), Some(true))
    );
    assert_eq!(
        ok("handle SIGPIPE nostop noprint pass"),
        set(vec![sig("PIPE")], Some(false), Some(false), Some(true))
    );
    assert_eq!(
        ok("handle SIGUSR1 stop"),
        set(vec![sig("USR1")], Some(true), Some(true), None)
    );
    assert_eq!(
        ok("handle SIGUSR1 nopass"),
        set(vec![sig("USR1")], None, None, Some(false))
    );
    let Command::Signals(SignalCommand::Set { signals, .. }) = ok("handle all nostop") else {
        panic!()
    };
    assert!(signals.len() > 20 && !signals.contains(&Signal::SIGTRAP));
    assert_eq!(
        err("catch SIGFOO"),
        "catch: unknown signal \"SIGFOO\"; usage: catch [SIGNAL...]"
    );
    assert!(err("ignore 1 x").contains("unknown signal \"x\""));
    assert!(err("handle nostop").contains("missing signal name"));
    assert!(err("handle SIGFOO stop").contains("unknown signal \"SIGFOO\""));
}

#[test]
fn help_source_collector_analyze() {
    assert_eq!(ok("help"), Command::Help(None));
    assert_eq!(ok("h b"), Command::Help(Some("b".into())));
    assert_eq!(ok("help info b"), Command::Help(Some("info b".into())));
    assert_eq!(ok("help step up"), Command::Help(Some("step up".into())));
    assert!(err("help stpo").contains("no command named \"stpo\"; did you mean \"stop\"?"));
    assert_eq!(
        ok("source ~/cmds.txt"),
        Command::Source("~/cmds.txt".into())
    );
    assert!(err("source").contains("missing file name"));
    assert_eq!(
        ok("collector enable"),
        Command::Collector(crate::CollectorCommand::Enable)
    );
    assert!(err("collector").contains("missing subcommand"));
    assert!(err("collector sample record a b").contains("usage: collector sample"));
    assert_eq!(ok("analyze"), Command::Analyze(None));
    assert_eq!(
        ok("analyze functions  -n 5"),
        Command::Analyze(Some("functions  -n 5".into()))
    );
}

#[test]
fn unknown_commands_get_suggestions() {
    assert_eq!(
        err("stpo in main"),
        "unknown command \"stpo\"; did you mean \"stop\"?"
    );
    assert_eq!(
        err("contnue"),
        "unknown command \"contnue\"; did you mean \"continue\"?"
    );
    assert_eq!(
        err("frobnicate"),
        "unknown command \"frobnicate\"; type \"help\" for a list of commands"
    );
}

/// Every spelling in the table parses to something (with a plausible
/// argument where one is needed), so the table and the parser agree.
#[test]
fn every_table_spelling_is_parsed() {
    for entry in all_help() {
        for spelling in std::iter::once(entry.name).chain(entry.aliases.iter().copied()) {
            let parsed = parse(spelling).or_else(|_| parse(&format!("{spelling} 1")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} in f")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} in f {{ }}")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} x = 1")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling}/1i")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} on")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} status")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} periodic")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} directory d")));
            let parsed = parsed.or_else(|_| parse(&format!("{spelling} crash panic")));
            assert!(parsed.is_ok(), "{spelling}: {parsed:?}");
        }
    }
    // And every example line parses.
    for entry in all_help() {
        assert!(
            parse(entry.example).is_ok(),
            "{}: {:?}",
            entry.example,
            parse(entry.example)
        );
    }
}

#[test]
fn errors_are_one_line() {
    for line in [
        "stop in",
        "stpo",
        "when in f { bogus }",
        "info x",
        "delete x",
        "step -3",
    ] {
        assert!(!err(line).contains('\n'), "{line}");
    }
}
