//! The `stacks` table: one row per frame of every stack an experiment's
//! events use, leaf first, as `rdbx analyze` shows them with its default
//! settings (inlines off, no object hidden): the analyzer's own view of the
//! model's symbolized stacks, `<Truncated-stack>` below a stack the
//! unwinder could not finish and `<Unknown>` for a lost stack record.

use crate::events::{exported_stack_id, UsedStacks};
use crate::partition::{Partitions, TableFile, BATCH_ROWS};
use crate::Result;
use analyzer::metrics::{View, ViewSettings};
use analyzer::model::Model;
use arrow_array::{ArrayRef, Int32Array, Int64Array, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use std::sync::Arc;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("stack", DataType::Int64, false),
        Field::new("frame", DataType::Int32, false),
        Field::new("function", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, true),
        Field::new("file", DataType::Utf8, true),
        Field::new("line", DataType::Int32, true),
        Field::new("offset", DataType::Int64, true),
    ]))
}

pub struct Written {
    pub stacks: u64,
    pub bytes: u64,
}

/// Rows not written yet, column by column.
#[derive(Default)]
struct Frames {
    stack: Vec<i64>,
    frame: Vec<i32>,
    function: Vec<String>,
    object: Vec<Option<String>>,
    file: Vec<Option<String>>,
    line: Vec<Option<i32>>,
    offset: Vec<Option<i64>>,
}

impl Frames {
    fn columns(&mut self) -> Vec<ArrayRef> {
        let frames = std::mem::take(self);
        vec![
            Arc::new(Int64Array::from(frames.stack)),
            Arc::new(Int32Array::from(frames.frame)),
            Arc::new(StringArray::from(frames.function)),
            Arc::new(StringArray::from(frames.object)),
            Arc::new(StringArray::from(frames.file)),
            Arc::new(Int32Array::from(frames.line)),
            Arc::new(Int64Array::from(frames.offset)),
        ]
    }
}

/// Writes the frames of the stacks `used`.
pub fn write(partitions: &Partitions, model: &Model, used: &UsedStacks) -> Result<Written> {
    let view = View::new(model, &ViewSettings::default());
    let mut file = TableFile::create(partitions, "stacks", schema(), &[])?;
    let mut rows = Frames::default();
    let mut buffer = Vec::new();
    let mut stacks = 0;
    for stack in used.ids() {
        stacks += 1;
        let id = exported_stack_id(model, stack);
        for (depth, &frame_id) in view.frames_of(stack, &mut buffer).iter().enumerate() {
            let frame = view.frame(frame_id);
            let function = model.function(frame.function);
            let line = frame.line.map(|l| model.line(l));
            rows.stack.push(id);
            rows.frame.push(depth as i32);
            rows.function.push(function.name.clone());
            rows.object.push(
                function
                    .object
                    .map(|o| model.object(o).path.display().to_string()),
            );
            rows.file.push(line.map(|l| l.file.display().to_string()));
            rows.line.push(line.map(|l| l.line as i32));
            rows.offset
                .push(frame.pc.map(|pc| model.pc(pc).offset as i64));
        }
        if rows.stack.len() >= BATCH_ROWS {
            file.write(rows.columns())?;
        }
    }
    if !rows.stack.is_empty() {
        file.write(rows.columns())?;
    }
    Ok(Written {
        stacks,
        bytes: file.finish()?,
    })
}
