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
    /// Index of the physical frame this one belongs to.
    pub physical: usize,
    /// Position among the inlined frames of the same physical frame:
    /// 0 for the innermost.
    pub inline_depth: usize,
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

/// A [`FrameView`] that also answers DW_OP_entry_value from the caller's
/// call site, looked up on first use.
pub struct FrameReader<'a> {
    pub view: FrameView<'a>,
    dbg: &'a Debugger,
    frame: StackFrame,
    entry_values: std::cell::OnceCell<Vec<(u16, u64)>>,
}

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

    fn entry_value(&self, dwarf_regno: u16) -> Option<u64> {
        self.entry_values
            .get_or_init(|| self.dbg.call_site_values(&self.frame))
            .iter()
            .find(|(r, _)| *r == dwarf_regno)
            .map(|(_, v)| *v)
    }
}

impl Debugger {
    /// The call stack of thread `tid`, innermost first, at most `limit` frames.
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
            let symbolized = self.objects.symbolize(lookup_pc);
            let make = |function, location, inlined, inline_depth| StackFrame {
                pc: frame.pc,
                lookup_pc,
                cfa: frame.cfa,
                regs: frame.regs,
                function,
                offset: symbolized.offset,
                location,
                object: symbolized.object.clone(),
                inlined,
                signal_trampoline: is_trampoline,
                physical: index,
                inline_depth,
            };
            if is_trampoline {
                frames.push(make(symbolized.function.clone(), None, false, 0));
                continue;
            }
            let mut inline = self.objects.inline_frames(lookup_pc);
            let skipped = match index {
                0 => self.inline_skips.at(tid, frame.pc),
                _ => 0,
            };
            let skipped = skipped.min(inline.len().saturating_sub(1));
            if inline.is_empty() {
                frames.push(make(
                    symbolized.function.clone(),
                    symbolized.location.clone(),
                    false,
                    0,
                ));
            }
            // Inlined calls not entered yet (inline_stop.rs) are left out;
            // the others keep their depth in the inline chain.
            for (depth, level) in inline.drain(..).enumerate().skip(skipped) {
                frames.push(make(
                    Some(level.function),
                    level.location,
                    level.inlined,
                    depth,
                ));
            }
            if frames.len() >= limit {
                break;
            }
        }
        frames.truncate(limit);
        Ok(frames)
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
        Ok(FrameReader {
            view: self.plain_view(frame)?,
            dbg: self,
            frame: frame.clone(),
            entry_values: std::cell::OnceCell::new(),
        })
    }

    /// The registers the caller of `frame` passed, from its call site's
    /// DW_TAG_call_site_parameter entries, computed in the caller's frame.
    fn call_site_values(&self, frame: &StackFrame) -> Vec<(u16, u64)> {
        if frame.signal_trampoline {
            return Vec::new();
        }
        let Ok(frames) = self.backtrace(self.current_tid, MAX_FRAMES) else {
            return Vec::new();
        };
        let Some(caller) = frames
            .iter()
            .find(|f| f.physical == frame.physical + 1 && f.inline_depth == 0)
        else {
            return Vec::new();
        };
        if caller.signal_trampoline || caller.pc == caller.lookup_pc {
            return Vec::new();
        }
        let (Some(object), Ok(view)) = (
            self.objects.object_at(caller.lookup_pc),
            self.plain_view(caller),
        ) else {
            return Vec::new();
        };
        object
            .file
            .call_site_values(object.file_address(caller.pc), &view)
    }

    /// A view of `frame`'s registers and memory, without entry values.
    fn plain_view(&self, frame: &StackFrame) -> Result<FrameView<'_>> {
        let process = self.process()?;
        let bias = self
            .objects
            .object_at(frame.lookup_pc)
            .map(|o| o.bias)
            .unwrap_or(0);
        let xmm = if frame.physical == 0 {
            crate::ptrace::get_fpregs(self.current_tid).ok().map(|fp| {
                let mut x = [0u64; 16];
                for (i, slot) in x.iter_mut().enumerate() {
                    *slot = regs::xmm_low(&fp, i);
                }
                x
            })
        } else {
            None
        };
        let thread_pointer = process.regs(self.current_tid).ok().map(|r| r.fs_base);
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

    /// Parameters of `frame` with their values, for `where`.
    pub fn frame_arguments(&self, frame: &StackFrame) -> Vec<(String, Value)> {
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
        object
            .file
            .parameters_at(address, frame.inline_depth)
            .into_iter()
            .map(|var| {
                let value = object
                    .file
                    .read_variable(&var, &view)
                    .unwrap_or_else(|e| Value::Unavailable(e.to_string()));
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
                    .locals_at(address, frame.inline_depth)
                    .into_iter()
                    .chain(object.file.parameters_at(address, frame.inline_depth))
                    .find(|v| v.name() == name);
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
            let at = Some((address, frame.inline_depth));
            if let Some(var) = object.file.lookup_variable(at, name) {
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
