//! Data objects: the program variable, member or heap block that each
//! counter event's data address falls in, and er_print's views over them,
//! `data_objects`, `data_single` and `data_layout` (the Performance
//! Analyzer manual's "Data Objects").
//!
//! On x86 nothing but DWARF and the symbol table says what an address
//! holds: a global or static is found by address in its load object (the
//! `object` log lines give the load bias), a stack variable by its offset
//! from the CFA of the frame that holds the address (the counter record
//! names the frame; gcc places locals at `DW_OP_fbreg N` with a frame base
//! of `DW_OP_call_frame_cfa`), a heap block by heap tracing (a block
//! allocated before the event and not freed before it).
//!
//! Descriptors, as the manual writes them: `{int counter}` is a variable
//! `counter` of type `int`; types with spaces take underscores
//! (`{unsigned_int n}`), derived types a `+` (`{pointer+structure:node
//! next}`, `{const+int limit}`), aggregates their kind (`structure:`,
//! `union:`, `class:`, `array:`): `{array:int[64][64] grid}`. A member
//! follows its container after a dot, `{structure:record rec}.{int
//! count}`; an unnamed object is `-`, padding between members `(Anon)`.
//! The artificial objects: `<Total>` (every event), `<Scalars>` (every
//! event on a scalar variable, in addition to the variable),
//! `<Unknown>` with one element per reason an address was not mapped
//! ([`Unknown`]), and `<Heap>` with an element per allocation site and
//! size (`<Heap>.(block of 4096 bytes from make_grid < main)`).
//!
//! The views are pure functions of a [`Resolver`] (one per experiment)
//! and [`DataEvent`]s, which the analyzer's counter records convert to
//! ([`DataEvent::from_counter`]).

mod descriptor;
mod heap_blocks;
mod resolver;
mod statics;
mod views;

#[cfg(test)]
mod tests;

pub use descriptor::Step;
pub use heap_blocks::{HeapBlock, HeapBlocks};
pub use resolver::{Attribution, LoadedObject, Resolver, Unknown, HEAP, UNKNOWN};
pub use views::{
    data_layout, data_objects, data_single, DataLayoutTable, DataObjectRow, DataObjects,
    DataObjectsTable, DataSingle, LayoutMemberRow, LayoutType, SingleObject, SCALARS,
};

use experiment::counters::CounterEvent;

/// One counter event as the data-object views need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataEvent {
    /// The event's data address; None when the counter gave none.
    pub data_addr: Option<u64>,
    /// The stack frame holding `data_addr`, when it is on the thread's stack.
    pub frame: Option<EventFrame>,
    /// CLOCK_MONOTONIC ns, as recorded (the heap events' clock).
    pub time_ns: u64,
    /// Index of the counter (its metric column).
    pub counter: usize,
    /// Events the record stands for.
    pub count: u64,
}

/// The stack frame an event's data address is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventFrame {
    /// Where to look the frame's function up: the interrupted pc of the
    /// leaf frame, a caller's return address minus one. None when the
    /// event's stack record was lost.
    pub pc: Option<u64>,
    /// The frame's canonical frame address.
    pub cfa: u64,
}

impl DataEvent {
    /// The event of a counter record whose stack (leaf first, as recorded)
    /// is `stack`; None for a stack that was not found.
    pub fn from_counter(event: &CounterEvent, stack: Option<&[u64]>) -> DataEvent {
        let frame = event.stack_frame().map(|(index, cfa)| {
            let index = usize::from(index);
            let recorded = stack.and_then(|pcs| pcs.get(index).copied());
            EventFrame {
                // A caller's pc is the return address, after its call.
                pc: recorded.map(|pc| if index == 0 { pc } else { pc.wrapping_sub(1) }),
                cfa,
            }
        });
        DataEvent {
            data_addr: event.address(),
            frame,
            time_ns: event.time_ns,
            counter: usize::from(event.counter),
            count: event.count,
        }
    }
}
