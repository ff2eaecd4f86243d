//! Call stacks of stopped threads: physical frames from the unwinder,
//! expanded into inlined frames from DWARF, each with what `where` shows.

use crate::engine::Debugger;
use crate::memory::Memory;
use crate::objects::LoadedObjects;
use crate::ptrace::Tid;
use crate::regs;
use crate::symbols::{FrameContext, SourceLocation};
use crate::unwind::{self, FrameKind, UnwindMemory, UnwindRegs};
use crate::value::Value;
use crate::{Error, Result};

/// Deep enough for real recursion, bounded so a corrupt stack cannot hang us.
pub const MAX_FRAMES: usize = 4096;

/// One frame as the user sees it (inlined calls are frames of their own).
#[derive(Debug, Clone)]
pub struct StackFrame {
    /// The frame's pc (for callers, the return address).
    pub pc: u64,
    /// The address used for symbol lookup: pc - 1 for return addresses.
    pub lookup_pc: u64,
    pub cfa: Option<u64>,
    pub regs: UnwindRegs,
    pub function: Option<String>,
    /// pc minus the start of the function's ELF symbol.
    pub offset: u64,
    pub location: Option<SourceLocation>,
    /// Short name of the load object.
    pub object: Option<String>,
    pub inlined: bool,
    /// The kernel's signal trampoline: "<signal handler called>".
    pub signal_trampoline: bool,
    /// A call that a tail call removed from the stack, rebuilt from the
    /// call sites DWARF describes (its registers are its caller's).
    pub tail_call: bool,
    /// Index of the physical frame this one belongs to (for a tail-call
    /// frame, the frame it jumped to).
    pub physical: usize,
    /// Position among the inlined frames of the same physical frame:
    /// 0 for the innermost.
    pub inline_depth: usize,
    /// The thread whose stack this is.
    pub thread: Tid,
}

/// What the frames of one activation are made from.
struct FrameSeed {
    pc: u64,
    lookup_pc: u64,
    cfa: Option<u64>,
    regs: UnwindRegs,
    trampoline: bool,
    physical: usize,
    tail_call: bool,
    thread: Tid,
}

struct TargetMemory<'a>(&'a Memory);

impl UnwindMemory for TargetMemory<'_> {
    fn read_u64(&self, addr: u64) -> Option<u64> {
        self.0.read_u64(addr).ok()
    }
}

/// Registers and memory of one frame, for DWARF location expressions.
pub struct FrameView<'a> {
    pub memory: &'a Memory,
    pub regs: UnwindRegs,
    pub cfa: Option<u64>,
    pub bias: u64,
    /// xmm registers are only known for the innermost frame.
    pub xmm: Option<[u64; 16]>,
    /// The thread's `fs_base` (its TLS thread pointer), the same in every frame.
    pub thread_pointer: Option<u64>,
    /// The process's objects, to find a shared library's `__thread` block
    /// (only when one of its variables is read: the link map is walked then).
    pub objects: Option<&'a LoadedObjects>,
}

impl FrameContext for FrameView<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.memory.read(addr, buf)
    }

    fn register(&self, dwarf_regno: u16) -> Option<u64> {
        match dwarf_regno {
            0..=16 => self.regs.regs[dwarf_regno as usize],
            17..=32 => self.xmm.map(|x| x[(dwarf_regno - 17) as usize]),
            crate::symbols::FS_BASE => self.thread_pointer,
            _ => None,
        }
    }

    fn cfa(&self) -> Option<u64> {
        self.cfa
    }

    fn load_bias(&self) -> u64 {
        self.bias
    }

    fn library_tls_block(&self) -> std::result::Result<u64, String> {
        let (Some(objects), Some(thread_pointer)) = (self.objects, self.thread_pointer) else {
            return Err(crate::symbols::TLS_UNKNOWN.into());
        };
        crate::tls::library_tls_block(self.memory, objects, self.bias, thread_pointer)
    }
}

/// The frames of one stack, computed once for all the entry values
/// looked up while one frame is read.
type SharedStack = std::rc::Rc<std::cell::OnceCell<std::rc::Rc<Vec<StackFrame>>>>;

/// The whole stack of a thread, kept while the thread's registers are
/// the same: reading every frame's entry values asks for it once per
/// frame, and a deep recursion would otherwise unwind it again each time.
pub(crate) struct CachedStack {
    thread: Tid,
    registers: [Option<u64>; unwind::REGISTER_COUNT],
    frames: std::rc::Rc<Vec<StackFrame>>,
}

/// A [`FrameView`] that also answers DW_OP_entry_value from the caller's
/// call site, looked up on first use.
pub struct FrameReader<'a> {
    pub view: FrameView<'a>,
    dbg: &'a Debugger,
    frame: StackFrame,
    stack: SharedStack,
    /// How many entry values were looked up, each in the caller of the
    /// last, to get to this frame.
    nesting: usize,
    /// Where the frame is in the stack, when known.
    position: Option<usize>,
    entry_values: std::cell::OnceCell<Vec<(u16, std::result::Result<u64, String>)>>,
}

/// Entry values looked up one inside another at most (each in the caller
/// of the frame of the last): gdb's bound on nested DWARF evaluations,
/// which a deep recursion passing a value down reaches.
const MAX_ENTRY_VALUE_NESTING: usize = 256;

impl FrameContext for FrameReader<'_> {
    fn read_memory(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.view.read_memory(addr, buf)
    }

    fn register(&self, dwarf_regno: u16) -> Option<u64> {
        self.view.register(dwarf_regno)
    }

    fn cfa(&self) -> Option<u64> {
        self.view.cfa()
    }

    fn load_bias(&self) -> u64 {
        self.view.load_bias()
    }

    fn library_tls_block(&self) -> std::result::Result<u64, String> {
        self.view.library_tls_block()
    }

    fn entry_value(&self, dwarf_regno: u16) -> std::result::Result<Option<u64>, String> {
        if self.nesting >= MAX_ENTRY_VALUE_NESTING {
            // gdb's words, so the two show the same.
            return Err(format!(
                "error reading variable: DWARF-2 expression error: Loop detected ({}).",
                self.nesting + 1
            ));
        }
        self.entry_values
            .get_or_init(|| {
                self.dbg
                    .call_site_values(&self.frame, &self.stack, self.nesting + 1, self.position)
            })
            .iter()
            .find(|(r, _)| *r == dwarf_regno)
            .map(|(_, v)| v.clone())
            .transpose()
    }
}

/// Whether two frames of one stack are the same frame.
fn same_frame(a: &StackFrame, b: &StackFrame) -> bool {
    a.physical == b.physical
        && a.tail_call == b.tail_call
        && a.pc == b.pc
        && a.inline_depth == b.inline_depth
}

impl Debugger {
    /// The call stack of thread `tid`, innermost first, at most `limit` frames.
    /// Inlined calls and calls that tail calls removed are frames too.
    pub fn backtrace(&self, tid: Tid, limit: usize) -> Result<Vec<StackFrame>> {
        let process = self.process()?;
        let registers = process.regs(tid)?;
        let initial = UnwindRegs {
            regs: regs::to_dwarf_array(&registers),
        };
        let physical = unwind::unwind(
            &self.objects,
            &TargetMemory(process.memory()),
            initial,
            // One more than asked: a frame's CFA is known once its caller is.
            limit.saturating_add(1).min(MAX_FRAMES),
        );
        let mut frames = Vec::new();
        let mut after_signal = true; // frame 0 is at its pc, not after a call
        for (index, frame) in physical.iter().enumerate() {
            let is_trampoline = frame.kind == FrameKind::SignalHandlerCaller;
            let lookup_pc = if after_signal || is_trampoline {
                frame.pc
            } else {
                frame.pc.wrapping_sub(1)
            };
            after_signal = is_trampoline;
            let seed = FrameSeed {
                pc: frame.pc,
                lookup_pc,
                cfa: frame.cfa,
                regs: frame.regs,
                trampoline: is_trampoline,
                physical: index,
                tail_call: false,
                thread: tid,
            };
            self.push_frames(&seed, &mut frames);
            if index == 0 {
                // Inlined calls not entered yet (inline_stop.rs) are left out.
                let skipped = self.inline_skips.at(tid, frame.pc);
                frames.drain(..skipped.min(frames.len().saturating_sub(1)));
            }
            if let Some(caller) = physical.get(index + 1) {
                let caller_is_trampoline = caller.kind == FrameKind::SignalHandlerCaller;
                if !is_trampoline && !caller_is_trampoline {
                    for seed in self.tail_call_seeds(&seed, caller) {
                        self.push_frames(&seed, &mut frames);
                    }
                }
            }
            if frames.len() >= limit {
                break;
            }
        }
        frames.truncate(limit);
        Ok(frames)
    }

    /// The frames of one activation: the function's and, innermost first,
    /// those of the calls inlined where it is.
    fn push_frames(&self, seed: &FrameSeed, frames: &mut Vec<StackFrame>) {
        let symbolized = self.objects.symbolize(seed.lookup_pc);
        let make = |function, location, inlined, inline_depth| StackFrame {
            pc: seed.pc,
            lookup_pc: seed.lookup_pc,
            cfa: seed.cfa,
            regs: seed.regs,
            function,
            offset: symbolized.offset,
            location,
            object: symbolized.object.clone(),
            inlined,
            signal_trampoline: seed.trampoline,
            tail_call: seed.tail_call,
            physical: seed.physical,
            inline_depth,
            thread: seed.thread,
        };
        if seed.trampoline {
            frames.push(make(symbolized.function.clone(), None, false, 0));
            return;
        }
        let inline = self.objects.inline_frames(seed.lookup_pc);
        if inline.is_empty() {
            frames.push(make(
                symbolized.function.clone(),
                symbolized.location.clone(),
                false,
                0,
            ));
        }
        for (depth, level) in inline.into_iter().enumerate() {
            frames.push(make(
                Some(level.function),
                level.location,
                level.inlined,
                depth,
            ));
        }
    }

    /// The activations tail calls removed between `callee` and the frame
    /// that called it, innermost first. As gdb has them, they run at the
    /// address after their jump, with the caller's registers (the stack
    /// pointer too: the callee's CFA).
    fn tail_call_seeds(&self, callee: &FrameSeed, caller: &unwind::Frame) -> Vec<FrameSeed> {
        let Some(entry) = self.dwarf_function_entry(callee.lookup_pc) else {
            return Vec::new();
        };
        self.tail_call_frames(caller.pc, entry)
            .into_iter()
            .map(|pc| {
                let mut regs = caller.regs;
                regs.set(unwind::RIP, Some(pc));
                regs.set(unwind::RSP, callee.cfa);
                FrameSeed {
                    pc,
                    lookup_pc: pc.wrapping_sub(1),
                    cfa: callee.cfa,
                    regs,
                    trampoline: false,
                    physical: callee.physical,
                    tail_call: true,
                    thread: callee.thread,
                }
            })
            .collect()
    }

    /// The frame selected by `up`/`down`/`frame` in the current thread.
    pub fn selected_frame(&self) -> Result<StackFrame> {
        let frames = self.backtrace(self.current_tid, self.selected_frame + 1)?;
        frames
            .get(self.selected_frame)
            .or(frames.last())
            .cloned()
            .ok_or_else(|| Error::Unwind("no frames".into()))
    }

    /// A view of `frame` for reading its variables, entry values
    /// (DW_OP_entry_value) included.
    pub fn frame_view(&self, frame: &StackFrame) -> Result<FrameReader<'_>> {
        self.frame_reader(frame, SharedStack::default(), 0)
    }

    fn frame_reader(
        &self,
        frame: &StackFrame,
        stack: SharedStack,
        nesting: usize,
    ) -> Result<FrameReader<'_>> {
        Ok(FrameReader {
            view: self.plain_view(frame)?,
            dbg: self,
            frame: frame.clone(),
            stack,
            nesting,
            position: None,
            entry_values: std::cell::OnceCell::new(),
        })
    }

    /// The whole stack of `thread`, unwound once while it stays where it is.
    fn whole_stack(&self, thread: Tid) -> std::rc::Rc<Vec<StackFrame>> {
        let registers = self
            .process()
            .and_then(|p| p.regs(thread))
            .map(|r| regs::to_dwarf_array(&r))
            .ok();
        if let (Some(registers), Some(cached)) = (registers, self.stack_cache.borrow().as_ref()) {
            if cached.thread == thread && cached.registers == registers {
                return cached.frames.clone();
            }
        }
        let frames = std::rc::Rc::new(self.backtrace(thread, MAX_FRAMES).unwrap_or_default());
        if let Some(registers) = registers {
            *self.stack_cache.borrow_mut() = Some(CachedStack {
                thread,
                registers,
                frames: frames.clone(),
            });
        }
        frames
    }

    /// Forgets the stack kept for entry values: memory changed, or what
    /// the frames show did.
    pub(crate) fn forget_stack(&self) {
        *self.stack_cache.borrow_mut() = None;
        self.tail_call_loops.borrow_mut().clear();
    }

    /// The registers the caller of `frame` passed, from its call site's
    /// DW_TAG_call_site_parameter entries, computed in the caller's frame.
    /// As gdb: the function is the one inlined calls are in; its caller is
    /// the next frame out, a frame a tail call removed included; the call
    /// site must call this very function, which must not be able to reach
    /// itself by tail calls (the call site could describe another
    /// activation). Otherwise nothing is known.
    fn call_site_values(
        &self,
        frame: &StackFrame,
        stack: &SharedStack,
        nesting: usize,
        hint: Option<usize>,
    ) -> Vec<(u16, std::result::Result<u64, String>)> {
        let frames = stack.get_or_init(|| self.whole_stack(frame.thread));
        // A caller's reader is made for the frame after the callee's.
        let at = match hint {
            Some(at) if frames.get(at).is_some_and(|f| same_frame(f, frame)) => Some(at),
            _ => frames.iter().position(|f| same_frame(f, frame)),
        };
        let Some(at) = at else {
            return Vec::new();
        };
        let Some(function) = frames[at..].iter().position(|f| !f.inlined).map(|i| at + i) else {
            return Vec::new();
        };
        let caller_at = function + 1;
        let (function, Some(caller)) = (&frames[function], frames.get(caller_at)) else {
            return Vec::new();
        };
        // gdb's stack ends at main: main has no caller to ask.
        let is_main = function.function.as_deref() == Some("main");
        if function.signal_trampoline
            || caller.signal_trampoline
            || is_main && !self.stack_past_main
        {
            return Vec::new();
        }
        let (Some(entry), Some(object)) = (
            self.dwarf_function_entry(function.lookup_pc),
            self.objects.object_at(caller.lookup_pc),
        ) else {
            return Vec::new();
        };
        let Some(site) = object
            .file
            .call_site_returning_to(object.file_address(caller.pc))
        else {
            return Vec::new();
        };
        let Ok(mut reader) = self.frame_reader(caller, stack.clone(), nesting) else {
            return Vec::new();
        };
        reader.position = Some(caller_at);
        let targets = match site.target() {
            crate::symbols::CallTarget::Computed => object
                .file
                .computed_call_target(&site, &reader)
                .into_iter()
                .collect(),
            _ => self
                .static_targets(caller.lookup_pc, &site)
                .unwrap_or_default(),
        };
        if !targets.contains(&entry) || self.may_tail_call_itself(entry) {
            return Vec::new();
        }
        object.file.call_site_parameters(&site, &reader)
    }

    /// A view of `frame`'s registers and memory, without entry values.
    fn plain_view(&self, frame: &StackFrame) -> Result<FrameView<'_>> {
        let process = self.process()?;
        let bias = self
            .objects
            .object_at(frame.lookup_pc)
            .map(|o| o.bias)
            .unwrap_or(0);
        let xmm = if frame.physical == 0 && !frame.tail_call {
            crate::ptrace::get_fpregs(frame.thread).ok().map(|fp| {
                let mut x = [0u64; 16];
                for (i, slot) in x.iter_mut().enumerate() {
                    *slot = regs::xmm_low(&fp, i);
                }
                x
            })
        } else {
            None
        };
        let thread_pointer = process.regs(frame.thread).ok().map(|r| r.fs_base);
        // Location lists are looked up at the frame's rip. In a caller that
        // is the return address, which may already be past the call's
        // location ranges: a value gcc describes only from the return
        // address on (the callee's result, say) does not exist yet while the
        // callee runs. gdb looks up at pc - 1, inside the call; so do we.
        let mut regs = frame.regs;
        regs.set(unwind::RIP, Some(frame.lookup_pc));
        Ok(FrameView {
            memory: process.memory(),
            regs,
            cfa: frame.cfa,
            bias,
            xmm,
            thread_pointer,
            objects: Some(&self.objects),
        })
    }

    /// Parameters of `frame` with their values, for `where` and `info args`.
    pub fn frame_arguments(&self, frame: &StackFrame) -> Vec<(String, Value)> {
        self.frame_values(frame, "", |file, address| {
            file.shown_parameters_at(address, frame.inline_depth)
        })
    }

    /// Locals in scope in `frame` with their values, innermost block
    /// first, for `dump` and `info locals`.
    pub fn frame_locals(&self, frame: &StackFrame) -> Vec<(String, Value)> {
        self.frame_values(frame, "error: ", |file, address| {
            file.frame_locals_at(address, frame.inline_depth)
        })
    }

    /// The variables `which` gives at the frame's pc, read the way `print`
    /// reads them; one that cannot be read shows why in place (after
    /// `error_prefix`).
    fn frame_values(
        &self,
        frame: &StackFrame,
        error_prefix: &str,
        which: impl FnOnce(&crate::symbols::ObjectFile, u64) -> Vec<crate::symbols::Variable>,
    ) -> Vec<(String, Value)> {
        let Some(object) = self.objects.object_at(frame.lookup_pc) else {
            return Vec::new();
        };
        if frame.signal_trampoline {
            return Vec::new();
        }
        let Ok(view) = self.frame_view(frame) else {
            return Vec::new();
        };
        let address = object.file_address(frame.lookup_pc);
        which(&object.file, address)
            .into_iter()
            .map(|var| {
                let value = object
                    .file
                    .read_variable(&var, &view)
                    .unwrap_or_else(|e| Value::Unavailable(format!("{error_prefix}{e}")));
                (var.name().to_string(), value)
            })
            .collect()
    }

    /// Looks `name` up as seen from the selected frame: locals and
    /// parameters, then statics and globals of every object.
    pub fn read_variable(&self, name: &str) -> Result<Value> {
        if self.process.is_none() {
            return self.read_static_variable(name);
        }
        match self.read_variable_in_scope(name) {
            Err(Error::NoSuchSymbol(_)) => {}
            other => return other,
        }
        if let Some((scope, short)) = split_scope(name) {
            if let Some(value) = self.read_scoped_variable(scope, short)? {
                return Ok(value);
            }
        }
        self.function_value(name)
            .ok_or_else(|| Error::NoSuchSymbol(name.to_string()))
    }

    /// `FILE::name` and `FUNC::name` (gdb's scope operator): a global or
    /// static of that source file; a local of the innermost frame of FUNC
    /// on the stack, or else a static local of FUNC.
    fn read_scoped_variable(&self, scope: &str, name: &str) -> Result<Option<Value>> {
        let frame = self.selected_frame()?;
        for object in &self.objects.list {
            if let Some(var) = object.file.file_variable(scope, name) {
                let view = FrameView {
                    bias: object.bias,
                    ..self.plain_view(&frame)?
                };
                return object.file.read_variable(&var, &view).map(Some);
            }
        }
        let frames = self.backtrace(self.current_tid, MAX_FRAMES)?;
        let of_function = frames.iter().find(|f| {
            f.function.as_deref().is_some_and(|function| {
                function == scope
                    || function
                        .strip_prefix(scope)
                        .is_some_and(|rest| rest.starts_with('('))
            })
        });
        if let Some(frame) = of_function {
            if let Some(object) = self.objects.object_at(frame.lookup_pc) {
                let address = object.file_address(frame.lookup_pc);
                let var = object
                    .file
                    .frame_variable(address, frame.inline_depth, name);
                if let Some(var) = var {
                    let view = self.frame_view(frame)?;
                    return object.file.read_variable(&var, &view).map(Some);
                }
            }
        }
        for object in &self.objects.list {
            let Some((entry, _)) = object.file.function_value(scope) else {
                continue;
            };
            if let Some(var) = object.file.static_local(entry, name) {
                let view = FrameView {
                    bias: object.bias,
                    ..self.plain_view(&frame)?
                };
                return object.file.read_variable(&var, &view).map(Some);
            }
        }
        Ok(None)
    }

    /// A function named in an expression, as gdb shows it:
    /// `{int (int, double)} 0x401136 <helper>`.
    pub fn function_value(&self, name: &str) -> Option<Value> {
        self.objects.list.iter().find_map(|object| {
            let (entry, ty) = object.file.function_value(name)?;
            let address = entry.wrapping_add(object.bias);
            let symbol = self.objects.symbolize(address).function;
            Some(crate::expr::function_value(ty, address, symbol))
        })
    }

    /// Locals and parameters of the selected frame, then statics and
    /// globals of every object.
    fn read_variable_in_scope(&self, name: &str) -> Result<Value> {
        let frame = self.selected_frame()?;
        if let Some(object) = self.objects.object_at(frame.lookup_pc) {
            let address = object.file_address(frame.lookup_pc);
            let local = object
                .file
                .frame_variable(address, frame.inline_depth, name);
            if let Some(var) = local.or_else(|| object.file.lookup_variable(Some(address), name)) {
                let view = self.frame_view(&frame)?;
                return object.file.read_variable(&var, &view);
            }
        }
        for object in &self.objects.list {
            if let Some(var) = object.file.lookup_variable(None, name) {
                let view = FrameView {
                    bias: object.bias,
                    ..self.plain_view(&frame)?
                };
                return object.file.read_variable(&var, &view);
            }
        }
        Err(Error::NoSuchSymbol(name.to_string()))
    }

    /// Globals can't be read without a process; say so clearly.
    fn read_static_variable(&self, name: &str) -> Result<Value> {
        let known = self
            .objects
            .list
            .iter()
            .any(|o| o.file.lookup_variable(None, name).is_some());
        if known {
            Err(Error::Other(format!(
                "\"{name}\" is not available: the program is not running"
            )))
        } else {
            Err(Error::NoSuchSymbol(name.to_string()))
        }
    }
}

/// `scope::name` split at the last `::`, quotes around the scope removed
/// (`'q.c'::counter`).
fn split_scope(name: &str) -> Option<(&str, &str)> {
    let (scope, short) = name.rsplit_once("::")?;
    let scope = scope.trim_matches('\'');
    (!scope.is_empty() && !short.is_empty()).then_some((scope, short))
}
