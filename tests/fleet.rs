//! The Parquet export (`rdbx analyze --export parquet`, docs/fleet.md)
//! queried by DuckDB: experiments recorded from real runs (two threads, a
//! fork, heap tracing) are exported, the DuckDB setup and the `functions`,
//! `callers` and `heap` queries are read from docs/fleet.md and run by
//! DuckDB's Python package, and every number must equal what
//! `rdbx analyze --json` prints for the same experiments. An export appends:
//! the files of experiments exported before are left as they were.

mod common;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A function as both sides name it: its name and its load object's path.
type FunctionKey = (String, Option<String>);

/// Why DuckDB cannot be used here, if it cannot (.ci/run installs it).
fn duckdb_missing() -> Option<String> {
    let output = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output();
    match output {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Some(format!("cannot run python3: {e}")),
    }
}

/// `rdbx analyze --export parquet fleet EXPERIMENTS` in `dir`.
fn export(dir: &Path, experiments: &[&str]) -> Output {
    let mut args = vec!["parquet", "fleet"];
    args.extend(experiments);
    export_as(dir, &args)
}

/// `rdbx analyze --export ARGS` in `dir`.
fn export_as(dir: &Path, args: &[&str]) -> Output {
    Command::new(rdbx_bin())
        .args(["analyze", "--export"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run rdbx analyze --export")
}

/// The SQL of docs/fleet.md's code block "```sql NAME".
fn documented_sql(name: &str) -> String {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleet.md"))
        .expect("docs/fleet.md exists");
    let fence = format!("```sql {name}\n");
    let start = docs
        .find(&fence)
        .unwrap_or_else(|| panic!("docs/fleet.md has no {fence:?} block"))
        + fence.len();
    let end = start + docs[start..].find("```").expect("the block ends");
    docs[start..end].to_string()
}

/// Runs the documented DuckDB setup, then each query, in `dir` (where
/// the export directory `fleet` is); each query's rows as objects by
/// column name, and each table's column names under `schema:TABLE`.
fn duckdb(dir: &Path, queries: &[&str]) -> BTreeMap<String, Vec<Value>> {
    const RUNNER: &str = r#"
import duckdb, json, sys
request = json.load(sys.stdin)
con = duckdb.connect()
con.execute(request["setup"])
out = {}
for name, query in request["queries"].items():
    cursor = con.execute(query)
    columns = [d[0] for d in cursor.description]
    out[name] = [dict(zip(columns, row)) for row in cursor.fetchall()]
for table in ("events", "stacks", "experiments"):
    out["schema:" + table] = [{"name": r[0]} for r in con.execute("DESCRIBE " + table).fetchall()]
json.dump(out, sys.stdout, default=str)
"#;
    let request = serde_json::json!({
        "setup": documented_sql("duckdb"),
        "queries": queries
            .iter()
            .map(|&q| (q.to_string(), Value::String(documented_sql(q))))
            .collect::<serde_json::Map<_, _>>(),
    });
    let mut child = Command::new("python3")
        .args(["-c", RUNNER])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    serde_json::to_writer(child.stdin.take().unwrap(), &request).unwrap();
    let output = child.wait_with_output().expect("wait for python3");
    assert!(
        output.status.success(),
        "DuckDB failed: {}",
        output_text(&output)
    );
    serde_json::from_slice(&output.stdout).expect("DuckDB's answer is JSON")
}

/// `rdbx analyze --json -c functions -c callers-callees EXPERIMENTS`.
fn rdbx_listings(dir: &Path, experiments: &[&str]) -> (Value, Value) {
    let output = Command::new(rdbx_bin())
        .args([
            "analyze",
            "--json",
            "-c",
            "functions",
            "-c",
            "callers-callees",
        ])
        .args(experiments)
        .current_dir(dir)
        .output()
        .expect("run rdbx analyze");
    assert!(output.status.success(), "{}", output_text(&output));
    let documents = json_documents(&output.stdout);
    (documents[0].clone(), documents[1].clone())
}

fn int(value: &Value) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not an integer: {value}"))
}

fn key_of(row: &Value, name: &str, object: &str) -> FunctionKey {
    (
        row[name].as_str().expect("a name").to_string(),
        row[object].as_str().map(str::to_string),
    )
}

/// The numbers of each function (`<Total>` left out) from rdbx's
/// `functions` rows: `fields` picks them (a missing metric is 0).
fn rdbx_functions(functions: &Value, fields: &[(&str, &str)]) -> BTreeMap<FunctionKey, Vec<i64>> {
    functions["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["name"] != "<Total>")
        .map(|row| {
            let numbers = fields
                .iter()
                .map(|(metric, kind)| row[metric][kind].as_i64().unwrap_or(0))
                .collect();
            (key_of(row, "name", "object"), numbers)
        })
        .collect()
}

/// The same from a query's rows, `columns` in the order of `fields`.
fn sql_functions(rows: &[Value], columns: &[&str]) -> BTreeMap<FunctionKey, Vec<i64>> {
    rows.iter()
        .map(|row| {
            let numbers = columns.iter().map(|c| int(&row[c])).collect();
            (key_of(row, "function", "object"), numbers)
        })
        .collect()
}

/// (function, caller) -> attributed CPU ns and events, from rdbx's
/// `callers-callees`; functions are told apart by object through the
/// `functions` rows' ids.
fn rdbx_callers(
    functions: &Value,
    callers_callees: &Value,
) -> BTreeMap<(FunctionKey, FunctionKey), Vec<i64>> {
    let mut by_id: BTreeMap<i64, FunctionKey> = functions["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["name"] != "<Total>")
        .map(|row| (int(&row["function_id"]), key_of(row, "name", "object")))
        .collect();
    by_id.insert(0, ("<Total>".to_string(), None));
    let mut out = BTreeMap::new();
    for block in callers_callees["functions"].as_array().unwrap() {
        let center = by_id[&int(&block["function_id"])].clone();
        for caller in block["callers"].as_array().unwrap() {
            let attributed = &caller["attributed"];
            out.insert(
                (center.clone(), by_id[&int(&caller["function_id"])].clone()),
                vec![int(&attributed["ns"]), int(&attributed["events"])],
            );
        }
    }
    out
}

fn sql_callers(rows: &[Value]) -> BTreeMap<(FunctionKey, FunctionKey), Vec<i64>> {
    rows.iter()
        .map(|row| {
            let pair = (
                key_of(row, "function", "object"),
                key_of(row, "caller", "caller_object"),
            );
            (
                pair,
                vec![
                    int(&row["attributed_cpu_ns"]),
                    int(&row["attributed_events"]),
                ],
            )
        })
        .collect()
}

const CPU_FIELDS: [(&str, &str); 4] = [
    ("exclusive", "ns"),
    ("inclusive", "ns"),
    ("exclusive", "events"),
    ("inclusive", "events"),
];
const CPU_COLUMNS: [&str; 4] = [
    "exclusive_cpu_ns",
    "inclusive_cpu_ns",
    "exclusive_events",
    "inclusive_events",
];
const HEAP_METRICS: [&str; 4] = ["allocations", "bytes_allocated", "leaks", "bytes_leaked"];

/// The documented queries on the export in `dir` give what
/// `rdbx analyze` gives for `experiments`, number for number.
fn assert_queries_match_rdbx(dir: &Path, experiments: &[&str]) {
    let (functions, callers_callees) = rdbx_listings(dir, experiments);
    let answers = duckdb(dir, &["functions", "callers", "heap"]);

    let sql = sql_functions(&answers["functions"], &CPU_COLUMNS);
    let rdbx = rdbx_functions(&functions, &CPU_FIELDS);
    assert_eq!(sql, rdbx, "functions: DuckDB (left) and rdbx (right)");
    let total_ns = int(&functions["total"]["ns"]);
    assert!(total_ns > 0, "the experiments have CPU time");
    let exclusive_sum: i64 = sql.values().map(|v| v[0]).sum();
    assert_eq!(exclusive_sum, total_ns, "the leaves add up to <Total>");

    let sql = sql_callers(&answers["callers"]);
    let rdbx = rdbx_callers(&functions, &callers_callees);
    assert!(!rdbx.is_empty());
    assert_eq!(sql, rdbx, "callers: DuckDB (left) and rdbx (right)");

    let fields: Vec<(&str, &str)> = HEAP_METRICS
        .iter()
        .flat_map(|&m| [(m, "exclusive"), (m, "inclusive")])
        .collect();
    let columns: Vec<String> = HEAP_METRICS
        .iter()
        .flat_map(|m| [format!("exclusive_{m}"), format!("inclusive_{m}")])
        .collect();
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let sql = sql_functions(&answers["heap"], &columns);
    assert_eq!(
        sql,
        rdbx_functions(&functions, &fields),
        "heap: DuckDB (left) and rdbx (right)"
    );

    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleet.md")).unwrap();
    for table in ["events", "stacks", "experiments"] {
        for column in &answers[&format!("schema:{table}")] {
            let name = column["name"].as_str().unwrap();
            assert!(
                docs.contains(&format!("| `{name}` |")),
                "docs/fleet.md does not describe {table}.{name}"
            );
        }
    }
}

/// Every file under `dir` with its contents.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn duckdb_queries_of_the_export_give_the_numbers_of_rdbx_analyze() {
    if let Some(reason) = duckdb_missing() {
        println!("skipped: DuckDB's Python package cannot be imported ({reason})");
        return;
    }
    let dir = scratch_dir("fleet");
    rdbx_collect(&dir, "a.er", &[], phases(), &["threads", "0.3"]);
    rdbx_collect(&dir, "b.er", &[], phases(), &["fork", "0.2"]);
    rdbx_collect(&dir, "c.er", &["-H", "on"], &prog("heap_known-O0"), &[]);

    let out = export(&dir, &["a.er"]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("exported a.er as experiment=a.er: "),
        "{}",
        output_text(&out)
    );
    assert_queries_match_rdbx(&dir, &["a.er"]);

    let first = files(&dir.join("fleet"));
    let out = export(&dir, &["b.er", "c.er"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("as experiment=b.er_f1: "), "{stdout}");
    let appended = files(&dir.join("fleet"));
    for (path, bytes) in &first {
        assert!(appended.get(path) == Some(bytes), "{path:?} was rewritten");
    }
    assert_eq!(
        appended.len(),
        first.len() + 3 * 3,
        "three tables of three experiments"
    );
    assert_queries_match_rdbx(&dir, &["a.er", "b.er", "c.er"]);

    let (functions, _) = rdbx_listings(&dir, &["c.er"]);
    assert!(
        int(&functions["total"]["leaks"]) > 0,
        "the heap-tracing experiment has leaks to compare"
    );

    // Exported again: refused, the tables as they were.
    let out = export(&dir, &["a.er"]);
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("experiment a.er is in fleet already"),
        "{}",
        output_text(&out)
    );
    assert_eq!(files(&dir.join("fleet")), appended);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every path under `dir`, directories too.
fn paths(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The slips of a command line an export refuses in one line, writing
/// nothing: the export directory left out (the first experiment would be
/// taken for it and the tables written inside it), another format.
#[test]
fn an_export_refuses_an_experiment_for_its_directory_and_formats_but_parquet() {
    let dir = scratch_dir("fleet-slips");
    rdbx_collect(&dir, "a.er", &[], phases(), &["threads", "0.1"]);
    rdbx_collect(&dir, "b.er", &[], phases(), &["threads", "0.1"]);
    let before = paths(&dir);
    for (args, says) in [
        (
            &["parquet", "a.er", "b.er"][..],
            "a.er is an experiment, not an export directory",
        ),
        (&["csv", "out", "a.er"][..], "cannot export as csv"),
    ] {
        let out = export_as(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.lines().count() == 1 && stderr.contains(says),
            "{args:?}: {stderr}"
        );
        assert_eq!(paths(&dir), before, "{args:?} wrote something");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
