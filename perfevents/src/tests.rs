use super::*;

/// A machine with no PMU but the software one (this VM's case).
fn no_pmu() -> Catalog {
    Catalog::from_sysfs(Path::new("/nonexistent"))
}

/// A machine with a CPU PMU, from a scratch sysfs tree.
fn with_pmu() -> Catalog {
    let root = std::env::temp_dir().join(format!(
        "perfevents-pmu-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let cpu = root.join("cpu");
    std::fs::create_dir_all(cpu.join("events")).unwrap();
    std::fs::create_dir_all(cpu.join("format")).unwrap();
    std::fs::write(cpu.join("type"), "4\n").unwrap();
    std::fs::write(cpu.join("format/event"), "config:0-7\n").unwrap();
    std::fs::write(cpu.join("format/umask"), "config:8-15\n").unwrap();
    std::fs::write(cpu.join("events/cycles"), "event=0x3c\n").unwrap();
    std::fs::write(cpu.join("events/mem-stores"), "event=0xd0,umask=0x82\n").unwrap();
    let catalog = Catalog::from_sysfs(&root);
    let _ = std::fs::remove_dir_all(&root);
    catalog
}

#[test]
fn software_counters_resolve_everywhere() {
    let spec = no_pmu()
        .resolve("page-faults", Interval::Events(1))
        .unwrap();
    assert_eq!(
        (spec.kind, spec.config, spec.interval, spec.data_address),
        (PERF_TYPE_SOFTWARE, 2, 1, true)
    );
    assert_eq!(spec.name, "page-faults");
    let spec = no_pmu().resolve("cs", Interval::On).unwrap();
    assert_eq!(
        (spec.config, spec.interval, spec.data_address),
        (3, 100, false)
    );
    assert_eq!(spec.name, "cs", "named as the user named it");
    assert_eq!(
        no_pmu().resolve("faults", Interval::Hi).unwrap().interval,
        10
    );
    assert_eq!(
        no_pmu()
            .resolve("Page-Faults", Interval::Lo)
            .unwrap()
            .interval,
        1000
    );
}

#[test]
fn hardware_counters_need_a_pmu() {
    for name in [
        "cycles",
        "insts",
        "cpu-cycles",
        "dcm",
        "LLC-load-misses",
        "r01c2",
    ] {
        assert_eq!(
            no_pmu().resolve(name, Interval::On),
            Err(Error::NoPmu { name: name.into() }),
            "{name}"
        );
    }
    let catalog = with_pmu();
    let cycles = catalog.resolve("cycles", Interval::On).unwrap();
    assert_eq!(
        (cycles.kind, cycles.config, cycles.interval),
        (PERF_TYPE_HARDWARE, 0, 10_000_003),
        "the generic event wins over the PMU's own of the same name"
    );
    let insts = catalog.resolve("insts", Interval::Hi).unwrap();
    assert_eq!(
        (insts.kind, insts.config, insts.interval),
        (0, 1, 1_000_003)
    );
    let dcm = catalog.resolve("dcm", Interval::On).unwrap();
    assert_eq!((dcm.kind, dcm.config), (PERF_TYPE_HW_CACHE, 1 << 16));
    let llc_store = catalog.resolve("LLC-store-misses", Interval::On).unwrap();
    assert_eq!(llc_store.config, 2 | 1 << 8 | 1 << 16);
    let raw = catalog.resolve("r01c2", Interval::Events(5000)).unwrap();
    assert_eq!(
        (raw.kind, raw.config, raw.interval),
        (PERF_TYPE_RAW, 0x1c2, 5000)
    );
    let named = catalog.resolve("mem-stores", Interval::On).unwrap();
    assert_eq!((named.kind, named.config), (4, 0x82d0));
    let qualified = catalog.resolve("cpu/mem-stores/", Interval::On).unwrap();
    assert_eq!(qualified.config, 0x82d0);
    // A memory event's records carry the address stored to (precise
    // sampling); cycles' do not.
    assert!(named.data_address);
    assert!(
        !catalog
            .resolve("cycles", Interval::On)
            .unwrap()
            .data_address
    );
}

#[test]
fn unknown_names_get_the_closest_match() {
    let err = no_pmu().resolve("page-fault", Interval::On).unwrap_err();
    assert_eq!(
        err,
        Error::Unknown {
            name: "page-fault".into(),
            closest: Some("page-faults".into())
        }
    );
    assert!(
        err.to_string().contains("did you mean \"page-faults\"?"),
        "{err}"
    );
    // Without a PMU, hardware names are not suggested.
    let err = no_pmu().resolve("cyclez", Interval::On).unwrap_err();
    assert!(
        matches!(&err, Error::Unknown { closest, .. } if closest.as_deref() != Some("cycles")),
        "{err}"
    );
    let err = with_pmu().resolve("cyclez", Interval::On).unwrap_err();
    assert!(
        matches!(&err, Error::Unknown { closest: Some(c), .. } if c == "cycles"),
        "{err}"
    );
    assert!(matches!(
        no_pmu().resolve("zzzz", Interval::On),
        Err(Error::Unknown { closest: None, .. })
    ));
}

#[test]
fn intervals_zero_and_absurd_are_refused() {
    assert_eq!(
        no_pmu().resolve("page-faults", Interval::Events(0)),
        Err(Error::ZeroInterval {
            name: "page-faults".into()
        })
    );
    assert!(matches!(
        no_pmu().resolve("page-faults", Interval::Events(MAX_INTERVAL + 1)),
        Err(Error::AbsurdInterval { .. })
    ));
    assert!(no_pmu()
        .resolve("page-faults", Interval::Events(MAX_INTERVAL))
        .is_ok());
}

#[test]
fn lists_are_checked_whole() {
    let catalog = no_pmu();
    let list = |names: &[&str]| -> Vec<(String, Interval)> {
        names
            .iter()
            .map(|n| (n.to_string(), Interval::On))
            .collect()
    };
    let specs = catalog
        .resolve_all(&list(&["page-faults", "context-switches"]))
        .unwrap();
    assert_eq!(specs.len(), 2);
    assert_eq!(
        catalog.resolve_all(&list(&["page-faults", "faults"])),
        Err(Error::Twice {
            name: "faults".into()
        })
    );
    let nine = list(&["page-faults"; 9]);
    assert_eq!(
        catalog.resolve_all(&nine),
        Err(Error::TooMany { given: 9, max: 8 })
    );
}

#[test]
fn the_listing_says_plainly_when_there_is_no_pmu() {
    let text = no_pmu().listing();
    assert!(
        text.starts_with("This machine has no hardware PMU"),
        "{text}"
    );
    assert!(text.contains("not available on this machine"), "{text}");
    assert!(text.contains("page-faults"), "{text}");
    assert!(!text.contains("Raw events"), "{text}");
    let text = with_pmu().listing();
    assert!(!text.contains("no hardware PMU"), "{text}");
    assert!(text.contains("mem-stores"), "{text}");
    assert!(text.contains("Raw events"), "{text}");
}

#[test]
fn this_machine_offers_the_software_counters() {
    let catalog = Catalog::probe();
    assert!(catalog.find("page-faults").is_some());
    assert!(catalog.resolve("context-switches", Interval::On).is_ok());
}

#[test]
fn defaults_follow_the_pmu() {
    let names = |c: &Catalog| -> Vec<String> { c.defaults().into_iter().map(|(n, _)| n).collect() };
    assert_eq!(names(&no_pmu()), ["page-faults"]);
    assert_eq!(names(&with_pmu()), ["cycles", "insts"]);
    assert!(no_pmu().resolve_all(&no_pmu().defaults()).is_ok());
}
