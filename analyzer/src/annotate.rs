//! Annotated source and disassembly (being written on the annotate branch).

use crate::model::FunctionId;
use crate::report::{Context, Report};
use std::path::PathBuf;

/// Where to look for source files.
#[derive(Debug, Clone, Default)]
pub struct SourcePaths {
    pub pathmaps: Vec<(String, String)>,
    pub search: Vec<PathBuf>,
}

pub fn source_for_function(_: &Context, _: FunctionId, _: &SourcePaths) -> Result<Report, String> {
    Err("source: not available in this build".into())
}

pub fn source_for_file(_: &Context, _: &str, _: &SourcePaths) -> Result<Report, String> {
    Err("source: not available in this build".into())
}

pub fn disasm_for_function(_: &Context, _: FunctionId, _: &SourcePaths) -> Result<Report, String> {
    Err("disasm: not available in this build".into())
}
