//! The export directory: one directory per table, one partition
//! (`experiment=ID`) per experiment in each, and the Parquet files in them,
//! each written under a name no reader lists and renamed when complete.

use crate::{Error, Result};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The tables, as directories of the export directory.
pub const TABLES: [&str; 3] = ["events", "stacks", "experiments"];

/// The one file of a table's partition. Another part (`part-1`) could be
/// added beside it later without rewriting it.
const FILE_NAME: &str = "part-0.parquet";

/// Rows per Arrow batch handed to the writer: the columns of a batch are
/// held in memory, the Parquet row groups are encoded as they fill.
pub const BATCH_ROWS: usize = 64 * 1024;

/// One experiment's partition of every table, made by this export.
pub struct Partitions {
    dir: PathBuf,
    made: Vec<PathBuf>,
}

impl Partitions {
    /// Makes the partition `experiment=ID` of each table; fails when any of
    /// them exists (the experiment, or one of the same name, was exported
    /// before), having made none.
    pub fn create(dir: &Path, id: &str) -> Result<Partitions> {
        let mut partitions = Partitions {
            dir: dir.to_path_buf(),
            made: Vec::new(),
        };
        for table in TABLES {
            let table_dir = dir.join(table);
            std::fs::create_dir_all(&table_dir).map_err(|e| io_error(&table_dir, e))?;
            let partition = table_dir.join(format!("experiment={id}"));
            // create_dir, not create_dir_all: two exports of one id at once
            // cannot both own it.
            match std::fs::create_dir(&partition) {
                Ok(()) => partitions.made.push(partition),
                Err(e) => {
                    partitions.remove();
                    return Err(match e.kind() {
                        std::io::ErrorKind::AlreadyExists => Error::Exported {
                            id: id.to_string(),
                            dir: dir.to_path_buf(),
                        },
                        _ => io_error(&partition, e),
                    });
                }
            }
        }
        Ok(partitions)
    }

    /// Removes what this export made (after a failure).
    pub fn remove(&self) {
        for partition in &self.made {
            let _ = std::fs::remove_dir_all(partition);
        }
    }

    fn partition(&self, table: &str) -> &Path {
        let table_dir = self.dir.join(table);
        self.made
            .iter()
            .find(|p| p.parent() == Some(table_dir.as_path()))
            .expect("a partition per table")
    }
}

/// A table's Parquet file being written.
pub struct TableFile {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    tmp: PathBuf,
    path: PathBuf,
}

impl TableFile {
    /// `ascending` names the columns of values that mostly grow from row
    /// to row (times): they are stored as deltas, a few bits a row, where
    /// a dictionary of mostly distinct values would keep them whole.
    pub fn create(
        partitions: &Partitions,
        table: &str,
        schema: SchemaRef,
        ascending: &[&str],
    ) -> Result<TableFile> {
        let partition = partitions.partition(table);
        let path = partition.join(FILE_NAME);
        // Readers list `*.parquet` (and skip names starting with a dot).
        let tmp = partition.join(format!(".{FILE_NAME}.tmp"));
        let file = File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
        let mut properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("rdbx {}", env!("CARGO_PKG_VERSION")));
        for &column in ascending {
            properties = properties
                .set_column_dictionary_enabled(ColumnPath::from(column), false)
                .set_column_encoding(ColumnPath::from(column), Encoding::DELTA_BINARY_PACKED);
        }
        let properties = properties.build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(properties))
            .map_err(|e| parquet_error(&tmp, e))?;
        Ok(TableFile {
            writer,
            schema,
            tmp,
            path,
        })
    }

    /// Appends rows: one array per column of the schema, in its order.
    pub fn write(&mut self, columns: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)
            .map_err(|e| parquet_error(&self.tmp, e.into()))?;
        self.writer
            .write(&batch)
            .map_err(|e| parquet_error(&self.tmp, e))
    }

    /// Completes the file and gives it its name; its size in bytes.
    pub fn finish(self) -> Result<u64> {
        let file = self
            .writer
            .into_inner()
            .map_err(|e| parquet_error(&self.tmp, e))?;
        file.sync_all().map_err(|e| io_error(&self.tmp, e))?;
        let bytes = file.metadata().map_err(|e| io_error(&self.tmp, e))?.len();
        std::fs::rename(&self.tmp, &self.path).map_err(|e| io_error(&self.path, e))?;
        Ok(bytes)
    }
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn parquet_error(path: &Path, source: parquet::errors::ParquetError) -> Error {
    Error::Parquet {
        path: path.to_path_buf(),
        source,
    }
}
