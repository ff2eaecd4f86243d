//! From an event's data address to its data object: a stack variable of
//! the frame the event names, a variable at a fixed address of a load
//! object, a heap block in use at the event's time, or an `<Unknown>`
//! element saying why none.

use super::descriptor::{is_scalar, object_descriptor, place, type_descriptor, Layouts};
use super::descriptor::{Layout, MemberHit, Step};
use super::heap_blocks::HeapBlocks;
use super::statics::StaticTable;
use super::{DataEvent, EventFrame};
use crate::resolve::{symbol_file, symbolize, PcSymbol};
use debugger::symbols::{ObjectFile, TypeRef};
use experiment::archive::ArchivedObject;
use experiment::log::Event;
use experiment::Experiment;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// The artificial aggregate of the addresses that map to no data object.
pub const UNKNOWN: &str = "<Unknown>";
/// The artificial aggregate of the heap blocks.
pub const HEAP: &str = "<Heap>";

/// Why an event has no data object: the elements of `<Unknown>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unknown {
    /// The counter gave the event no data address.
    NoAddress,
    /// The address is in a stack frame, but no variable of the frame's
    /// function is there at a known offset from the CFA: saved registers,
    /// the return address, spills and temporaries, a variable kept in
    /// registers elsewhere, a function without DWARF or whose frame base
    /// is not the CFA, or a stack record that was lost.
    StackData,
    /// The address is in a load object but in none of its variables
    /// (string literals, the GOT, data of an object without symbols).
    StaticData,
    /// In no load object, no stack frame the event names, and no heap
    /// block in use (or heap tracing was off): anonymous mappings, other
    /// threads' stacks, memory of allocators that are not traced.
    Unidentified,
}

impl Unknown {
    pub const ALL: [Unknown; 4] = [
        Unknown::NoAddress,
        Unknown::StackData,
        Unknown::StaticData,
        Unknown::Unidentified,
    ];

    /// The element of `<Unknown>`: `(No data address)`.
    pub fn element(self) -> &'static str {
        match self {
            Unknown::NoAddress => "(No data address)",
            Unknown::StackData => "(Undetermined stack data)",
            Unknown::StaticData => "(Undetermined static data)",
            Unknown::Unidentified => "(Unidentified)",
        }
    }
}

/// The data object of one event.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attribution {
    /// Outermost first: the variable, then each member holding the
    /// address; or `<Unknown>` or `<Heap>` and its element.
    pub path: Vec<Step>,
    /// Where the variable is: its load object's name (static data) or its
    /// function (stack data); None for the artificial objects.
    pub scope: Option<String>,
    /// The variable is a scalar: the event counts in `<Scalars>` too.
    pub scalar: bool,
    /// The member of each aggregate type the address is in.
    pub(crate) hits: Vec<MemberHit>,
}

impl Attribution {
    fn unknown(why: Unknown) -> Attribution {
        Attribution::artificial(UNKNOWN, why.element().into(), None)
    }

    fn artificial(aggregate: &str, element: Arc<str>, size: Option<u64>) -> Attribution {
        Attribution {
            path: vec![
                Step {
                    descriptor: aggregate.into(),
                    size: None,
                },
                Step {
                    descriptor: element,
                    size,
                },
            ],
            scope: None,
            scalar: false,
            hits: Vec::new(),
        }
    }

    /// The descriptor of the whole path: `{structure:record rec}.{int count}`.
    pub fn name(&self) -> String {
        let parts: Vec<&str> = self.path.iter().map(|s| s.descriptor.as_ref()).collect();
        parts.join(".")
    }
}

/// A load object where one experiment had it mapped.
pub struct LoadedObject {
    /// The basename, as objects are shown.
    pub name: String,
    /// Load bias: run-time address minus file address.
    pub base: u64,
    /// Its mapped addresses, `lo..hi`.
    pub lo: u64,
    pub hi: u64,
    file: Option<ObjectFile>,
    statics: OnceCell<StaticTable>,
}

impl LoadedObject {
    /// `file` is its symbols (None when they cannot be read).
    pub fn new(path: &Path, base: u64, lo: u64, hi: u64, file: Option<ObjectFile>) -> LoadedObject {
        LoadedObject {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| path.to_string_lossy().into_owned()),
            base,
            lo,
            hi,
            file,
            statics: OnceCell::new(),
        }
    }

    fn contains(&self, address: u64) -> bool {
        self.lo <= address && address < self.hi
    }

    fn statics(&self) -> Option<&StaticTable> {
        let file = self.file.as_ref()?;
        Some(self.statics.get_or_init(|| StaticTable::build(file)))
    }
}

/// A stack variable at a fixed offset from its frame's CFA.
struct Slot {
    start: i64,
    size: u64,
    descriptor: Arc<str>,
    ty: TypeRef,
    scalar: bool,
}

/// The stack variables of a function at one pc, innermost block last.
struct FrameSlots {
    function: Option<String>,
    slots: Vec<Slot>,
}

/// Names the data objects of one experiment's addresses.
pub struct Resolver {
    /// A later mapping of the same range (dlclose, dlopen) comes later.
    objects: Vec<LoadedObject>,
    heap: HeapBlocks,
    layouts: RefCell<Layouts>,
    /// Each frame pc's variables, by object and file pc, found once.
    frames: RefCell<HashMap<(usize, u64), Arc<FrameSlots>>>,
    /// Each heap block's element of `<Heap>`, made once.
    heap_names: RefCell<HashMap<usize, Arc<str>>>,
}

impl Resolver {
    pub fn new(objects: Vec<LoadedObject>, heap: HeapBlocks) -> Resolver {
        Resolver {
            objects,
            heap,
            layouts: RefCell::default(),
            frames: RefCell::default(),
            heap_names: RefCell::default(),
        }
    }

    /// The resolver of an experiment: its load objects from the log, read
    /// from the files the archive vouches for (as the loader reads them),
    /// and its heap blocks when it traced the heap.
    pub fn for_experiment(
        expt: &Experiment,
        archive: &[ArchivedObject],
        archives_dir: &Path,
    ) -> experiment::Result<Resolver> {
        let mut objects: Vec<LoadedObject> = Vec::new();
        for event in expt.log()? {
            let Event::Object { path, base, lo, hi } = &event.event else {
                continue;
            };
            objects.retain(|o| o.hi <= *lo || o.lo >= *hi);
            let archived = archive.iter().find(|a| a.path == *path);
            let file = symbol_file(path, archived, archives_dir)
                .ok()
                .and_then(|from| ObjectFile::open(&from).ok());
            objects.push(LoadedObject::new(path, *base, *lo, *hi, file));
        }
        let mut resolver = Resolver::new(objects, HeapBlocks::default());
        if expt.manifest().kinds.iter().any(|k| k == "heap-trace") {
            resolver.heap = HeapBlocks::of_experiment(expt, |pcs| resolver.site_of(pcs))?;
        }
        Ok(resolver)
    }

    /// The layout of an aggregate type met while resolving.
    pub(crate) fn layout(&self, id: usize) -> Option<Layout> {
        self.layouts.borrow().get(id).cloned()
    }

    /// The data object of one event.
    pub fn resolve(&self, event: &DataEvent) -> Attribution {
        self.resolve_all(std::slice::from_ref(event))
            .pop()
            .unwrap_or_else(|| Attribution::unknown(Unknown::Unidentified))
    }

    /// The data objects of many events, in their order.
    pub fn resolve_all(&self, events: &[DataEvent]) -> Vec<Attribution> {
        let mut found = vec![None; events.len()];
        self.resolve_each(events, |index, attribution| {
            found[index] = Some(attribution)
        });
        found.into_iter().flatten().collect()
    }

    /// Gives `each` the data object of every event with its index: those
    /// outside the heap as they come, then those the heap may hold, looked
    /// up in one pass over its history.
    pub fn resolve_each(&self, events: &[DataEvent], mut each: impl FnMut(usize, Attribution)) {
        let mut heap_queries = Vec::new();
        let mut waiting = Vec::new();
        for (index, event) in events.iter().enumerate() {
            match self.resolve_outside_heap(event) {
                Some(attribution) => each(index, attribution),
                None => {
                    heap_queries.push((event.data_addr.unwrap_or(0), event.time_ns));
                    waiting.push(index);
                }
            }
        }
        let blocks = match self.heap.is_empty() {
            true => vec![None; waiting.len()],
            false => self.heap.holding(&heap_queries),
        };
        for (index, block) in waiting.into_iter().zip(blocks) {
            let attribution = match block {
                Some(block) => self.heap_attribution(block),
                None => Attribution::unknown(Unknown::Unidentified),
            };
            each(index, attribution);
        }
    }

    /// A stack or static object, an unknown element, or None when only the
    /// heap may hold the address.
    fn resolve_outside_heap(&self, event: &DataEvent) -> Option<Attribution> {
        let Some(address) = event.data_addr else {
            return Some(Attribution::unknown(Unknown::NoAddress));
        };
        if let Some(frame) = event.frame {
            return Some(self.in_frame(frame, address));
        }
        let object = self.objects.iter().rev().find(|o| o.contains(address))?;
        Some(self.in_object(object, address))
    }

    fn in_object(&self, object: &LoadedObject, address: u64) -> Attribution {
        let file_address = address.wrapping_sub(object.base);
        let Some(found) = object.statics().and_then(|t| t.at(file_address)) else {
            return Attribution::unknown(Unknown::StaticData);
        };
        let mut attribution = Attribution {
            path: vec![Step {
                descriptor: found.descriptor.clone(),
                size: Some(found.size),
            }],
            scope: Some(object.name.clone()),
            scalar: found.scalar,
            hits: Vec::new(),
        };
        if let Some(ty) = &found.ty {
            self.place_in(ty, file_address - found.start, &mut attribution);
        }
        attribution
    }

    fn in_frame(&self, frame: EventFrame, address: u64) -> Attribution {
        let slots = frame.pc.and_then(|pc| self.frame_slots(pc));
        let Some(slots) = slots else {
            return Attribution::unknown(Unknown::StackData);
        };
        let from_cfa = address.wrapping_sub(frame.cfa) as i64;
        // Blocks that share stack space: the innermost in scope wins.
        let found = slots
            .slots
            .iter()
            .rev()
            .find(|s| from_cfa >= s.start && ((from_cfa - s.start) as u64) < s.size);
        let Some(slot) = found else {
            return Attribution::unknown(Unknown::StackData);
        };
        let mut attribution = Attribution {
            path: vec![Step {
                descriptor: slot.descriptor.clone(),
                size: Some(slot.size),
            }],
            scope: slots.function.clone(),
            scalar: slot.scalar,
            hits: Vec::new(),
        };
        self.place_in(&slot.ty, (from_cfa - slot.start) as u64, &mut attribution);
        attribution
    }

    fn place_in(&self, ty: &TypeRef, offset: u64, attribution: &mut Attribution) {
        let mut layouts = self.layouts.borrow_mut();
        place(
            ty,
            offset,
            &mut layouts,
            &mut attribution.path,
            &mut attribution.hits,
        );
    }

    /// The stack variables of the function at run-time pc `pc`.
    fn frame_slots(&self, pc: u64) -> Option<Arc<FrameSlots>> {
        let index = self.objects.iter().rposition(|o| o.contains(pc))?;
        let object = &self.objects[index];
        let file = object.file.as_ref()?;
        let file_pc = pc.wrapping_sub(object.base);
        let mut frames = self.frames.borrow_mut();
        let slots = frames
            .entry((index, file_pc))
            .or_insert_with(|| Arc::new(frame_slots_of(file, file_pc)));
        Some(slots.clone())
    }

    fn heap_attribution(&self, index: usize) -> Attribution {
        let block = self.heap.block(index);
        let element = self
            .heap_names
            .borrow_mut()
            .entry(index)
            .or_insert_with(|| {
                format!("(block of {} bytes from {})", block.size, block.site).into()
            })
            .clone();
        Attribution::artificial(HEAP, element, Some(block.size))
    }

    /// How a heap block's allocation site is shown: the functions of its
    /// stack, leaf first, the collector's own frames left out, down to
    /// `main` or four frames.
    fn site_of(&self, pcs: Option<&[u64]>) -> String {
        let Some(pcs) = pcs else {
            return "<unknown stack>".into();
        };
        let mut shown = Vec::new();
        for &pc in pcs {
            let looked_up = pc.wrapping_sub(1);
            let Some(object) = self.objects.iter().rev().find(|o| o.contains(looked_up)) else {
                shown.push(format!("0x{pc:x}"));
                continue;
            };
            if object.name.starts_with("libcollector") {
                continue;
            }
            let name = object
                .file
                .as_ref()
                .map(|file| symbolize(file, looked_up.wrapping_sub(object.base), false));
            match name {
                Some(PcSymbol::Function { name, .. }) => shown.push(name),
                _ => shown.push(format!("0x{pc:x}")),
            }
            if shown.len() == 4 || shown.last().is_some_and(|n| n == "main") {
                break;
            }
        }
        match shown.is_empty() {
            true => "<unknown stack>".into(),
            false => shown.join(" < "),
        }
    }
}

/// The stack variables at `file_pc` with their CFA offsets and sizes.
fn frame_slots_of(file: &ObjectFile, file_pc: u64) -> FrameSlots {
    let slots = file
        .cfa_variables_at(file_pc)
        .into_iter()
        .filter_map(|(var, start)| {
            let ty = file.variable_type(&var)?;
            let size = ty.size().filter(|&s| s > 0)?;
            Some(Slot {
                start,
                size,
                descriptor: object_descriptor(&type_descriptor(&ty), Some(var.name())).into(),
                scalar: is_scalar(&ty),
                ty,
            })
        })
        .collect();
    FrameSlots {
        function: file.function_at(file_pc).map(|f| f.name),
        slots,
    }
}

/// A resolver may move to another thread with the analysis holding it.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<Resolver>();
};
