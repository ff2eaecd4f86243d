//! Stops at the first instruction of inlined calls.
//!
//! When a thread stops where one or more inlined calls begin (their
//! blocks start at the pc), gdb shows the stop in the function they are
//! inlined into, at the line of the outermost call: the inlined frames
//! are "not yet entered". `step` then enters them one at a time without
//! running the program. A breakpoint set on an inlined function itself
//! stops in that function, so the skipping ends at its frame; one set on
//! a line stops in the innermost function there, as gdb's does.

use std::collections::HashMap;

use crate::breakpoints::{LocationSpec, Owner};
use crate::engine::Debugger;
use crate::ptrace::Tid;
use crate::symbols::{function_name_matches, without_generic_arguments};

/// Per stopped thread: the pc it stopped at and how many of the innermost
/// inlined frames there are not entered yet.
#[derive(Debug, Default)]
pub(crate) struct InlineSkips {
    by_thread: HashMap<Tid, (u64, usize)>,
    /// What a step decided to show where it stopped (thread, pc, frames
    /// left out), instead of every inlined call starting there.
    chosen: Option<(Tid, u64, usize)>,
}

impl InlineSkips {
    /// Frames to leave out of thread `tid`'s stack when it is at `pc`.
    pub(crate) fn at(&self, tid: Tid, pc: u64) -> usize {
        match self.by_thread.get(&tid) {
            Some(&(at, frames)) if at == pc => frames,
            _ => 0,
        }
    }

    /// The thread runs again: what it skipped no longer holds.
    pub(crate) fn forget(&mut self, tid: Tid) {
        self.by_thread.remove(&tid);
    }

    /// A step stops at `pc` showing `frames` fewer inlined frames.
    pub(crate) fn choose(&mut self, tid: Tid, pc: u64, frames: usize) {
        self.chosen = Some((tid, pc, frames));
    }

    fn take_chosen(&mut self, tid: Tid, pc: u64) -> Option<usize> {
        match self.chosen.take() {
            Some((t, at, frames)) if t == tid && at == pc => Some(frames),
            _ => None,
        }
    }

    fn set(&mut self, tid: Tid, pc: u64, frames: usize) {
        if frames == 0 {
            self.by_thread.remove(&tid);
        } else {
            self.by_thread.insert(tid, (pc, frames));
        }
    }
}

impl Debugger {
    /// Thread `tid` stopped at `pc` (a breakpoint or the end of a step):
    /// leave out the inlined calls that start there, except down to one a
    /// user breakpoint at `pc` names.
    pub(crate) fn skip_inlined_calls_at(&mut self, tid: Tid, pc: u64) {
        if let Some(frames) = self.inline_skips.take_chosen(tid, pc) {
            self.inline_skips.set(tid, pc, frames);
            return;
        }
        let Some(object) = self.objects.object_at(pc) else {
            self.inline_skips.forget(tid);
            return;
        };
        let starting = object
            .file
            .inlined_calls_starting_at(object.file_address(pc));
        let locations: Vec<&LocationSpec> = self
            .breakpoints
            .owners(pc)
            .into_iter()
            .filter_map(|owner| match owner {
                Owner::User(id) => Some(&self.breakpoints.user.get(&id)?.location),
                _ => None,
            })
            .collect();
        // A breakpoint on an address or a line names no function: gdb
        // shows its stop in the innermost one.
        if locations
            .iter()
            .any(|l| !matches!(l, LocationSpec::Function(_)))
        {
            self.inline_skips.forget(tid);
            return;
        }
        let wanted: Vec<&String> = locations
            .iter()
            .filter_map(|l| match l {
                LocationSpec::Function(name) => Some(name),
                _ => None,
            })
            .collect();
        let frames = starting
            .iter()
            .take_while(|function| {
                // Frame names come from the demangler (`Counter<K>::feed`),
                // breakpoints may be named as DWARF spells them.
                !wanted
                    .iter()
                    .any(|w| function_name_matches(&without_generic_arguments(w), function))
            })
            .count();
        self.inline_skips.set(tid, pc, frames);
    }

    /// `step` at a stop before inlined calls: enter the outermost one that
    /// is not entered yet, without running. True when there was one.
    pub(crate) fn enter_skipped_inline_call(&mut self, tid: Tid, pc: u64) -> bool {
        let frames = self.inline_skips.at(tid, pc);
        if frames == 0 {
            return false;
        }
        self.inline_skips.set(tid, pc, frames - 1);
        true
    }
}
