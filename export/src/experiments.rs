//! The `experiments` table (one row per experiment) and the experiment ids
//! that name the partitions.

use crate::partition::{Partitions, TableFile};
use crate::Result;
use analyzer::groups::Placement;
use analyzer::model::{ExperimentEntry, Model};
use arrow_array::{
    ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use std::path::Path;
use std::sync::Arc;

/// The experiment's id: its partition value (`experiment=ID`) in every
/// table. The founder's directory name, and for a descendant the founder's
/// name followed by its lineage (`t.er_f1` for `t.er/_f1.er`). Characters
/// a partition path would have to escape become `_`.
pub fn id(entry: &ExperimentEntry) -> String {
    let founder = directory_name(&entry.founder);
    let raw = match entry.path == entry.founder {
        true => founder,
        false => {
            let own = directory_name(&entry.path);
            format!("{founder}{}", own.strip_suffix(".er").unwrap_or(&own))
        }
    };
    raw.chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '+' | '-' => c,
            _ => '_',
        })
        .collect()
}

/// The last component of `path` (`.` and `..` resolved first).
fn directory_name(path: &Path) -> String {
    let named = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    named(path)
        .or_else(|| std::fs::canonicalize(path).ok().as_deref().and_then(named))
        .unwrap_or_else(|| "experiment".to_string())
}

fn schema() -> SchemaRef {
    let text = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    let int = |name: &str| Field::new(name, DataType::Int32, true);
    Arc::new(Schema::new(vec![
        text("founder", false),
        text("path", false),
        text("host", true),
        int("rank"),
        int("pid"),
        int("ppid"),
        text("command", true),
        text("executable", true),
        Field::new(
            "start",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        Field::new("duration_ns", DataType::Int64, false),
        Field::new("ended", DataType::Boolean, false),
        text("format_version", false),
    ]))
}

/// Writes the row of experiment `index`; the file's size in bytes.
pub fn write(
    partitions: &Partitions,
    model: &Model,
    index: u16,
    placement: &Placement,
) -> Result<u64> {
    let entry = &model.experiments[usize::from(index)];
    let founder = model
        .experiments
        .iter()
        .find(|e| e.path == entry.founder)
        .map_or_else(|| directory_name(&entry.founder), id);
    let start = entry.start.as_ref();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![founder])),
        Arc::new(StringArray::from(vec![entry.path.display().to_string()])),
        Arc::new(StringArray::from(vec![placement.host.clone()])),
        Arc::new(Int32Array::from(vec![rank_column(placement)])),
        Arc::new(Int32Array::from(vec![start.map(|s| s.pid as i32)])),
        Arc::new(Int32Array::from(vec![start.map(|s| s.ppid as i32)])),
        Arc::new(StringArray::from(vec![start.map(|s| s.args.clone())])),
        Arc::new(StringArray::from(vec![
            start.map(|s| s.exe.display().to_string())
        ])),
        Arc::new(
            TimestampMicrosecondArray::from(vec![start.map(|s| (s.realtime_ns / 1_000) as i64)])
                .with_timezone("UTC"),
        ),
        Arc::new(Int64Array::from(vec![
            entry.end_ns.saturating_sub(entry.start_ns) as i64,
        ])),
        Arc::new(BooleanArray::from(vec![entry.ended])),
        Arc::new(StringArray::from(vec![entry.format_version.clone()])),
    ];
    let mut file = TableFile::create(partitions, "experiments", schema(), &[])?;
    file.write(columns)?;
    file.finish()
}

/// The rank as the tables hold it (a rank beyond `i32` cannot be: MPI
/// ranks are C ints).
pub fn rank_column(placement: &Placement) -> Option<i32> {
    placement.rank.and_then(|rank| i32::try_from(rank).ok())
}
