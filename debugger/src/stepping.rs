//! Stepping: by instruction, by source line, and out of a function.
//!
//! Line stepping single-steps the current thread (the others stay
//! stopped) through the addresses of the current line. Calls are stepped
//! over by running every thread to the return address with a temporary
//! breakpoint, checked against the stack pointer so that recursive
//! activations do not end the step early. Like gdb, returning into the
//! middle of the caller's line stops there at once.

use crate::breakpoints::Owner;
use crate::engine::{ConditionEvaluator, Debugger, StepResume, Stop, StopReason};
use crate::ptrace::{self, Tid};
use crate::{Error, Result};

/// More single-steps than this on one `step`/`next` is a runaway loop in
/// code without line information; stop and tell rather than spin forever.
const MAX_STEPS: usize = 5_000_000;

/// Inlined calls one `next` runs through on one line at most.
const MAX_INLINED_CALLS_ON_A_LINE: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `step`: into calls of functions with line information.
    Into,
    /// `next`: over calls.
    Over,
}

/// The current source line of a thread: address range and position.
#[derive(Debug, Clone)]
struct LineSpan {
    start: u64,
    end: u64,
    file: std::path::PathBuf,
    line: u32,
}

impl Debugger {
    fn line_span(&self, pc: u64) -> Option<LineSpan> {
        let object = self.objects.object_at(pc)?;
        let range = object.file.line_range_at(object.file_address(pc))?;
        Some(LineSpan {
            start: object.runtime_address(range.start),
            end: object.runtime_address(range.end),
            file: range.location.file,
            line: range.location.line,
        })
    }

    fn is_statement_start(&self, pc: u64) -> bool {
        self.objects
            .object_at(pc)
            .is_some_and(|o| o.file.is_statement_start(o.file_address(pc)))
    }

    /// Start (runtime) of the function containing `pc` and whether it has
    /// line information; the address to stop at when stepping into it.
    fn function_entry(&self, pc: u64) -> Option<(u64, Option<u64>)> {
        let object = self.objects.object_at(pc)?;
        let file_pc = object.file_address(pc);
        if let Some(function) = object.file.function_at(file_pc) {
            let stop_at = function
                .location
                .is_some()
                .then(|| object.runtime_address(function.breakpoint_address));
            return Some((object.runtime_address(function.low_pc), stop_at));
        }
        let symbol = object.file.symbol_at(file_pc)?;
        Some((object.runtime_address(symbol.address), None))
    }

    fn current_regs(&self, tid: Tid) -> Result<libc::user_regs_struct> {
        self.process()?.regs(tid)
    }

    /// `stepi` / `nexti`: one machine instruction (over calls for nexti).
    pub fn step_instruction(
        &mut self,
        over_calls: bool,
        conditions: ConditionEvaluator,
    ) -> Result<Stop> {
        let outcome = self.step_one_instruction(over_calls, conditions);
        self.settle(outcome)
    }

    fn step_one_instruction(
        &mut self,
        over_calls: bool,
        conditions: ConditionEvaluator,
    ) -> Result<Stop> {
        let tid = self.current_tid;
        self.selected_frame = 0;
        self.hidden_inline = None;
        let regs = self.current_regs(tid)?;
        if over_calls {
            if let Some(insn) = self.instruction_at(regs.rip) {
                if insn.is_call {
                    let return_address = regs.rip + insn.bytes.len() as u64;
                    if let Some(stop) = self.run_to(tid, return_address, regs.rsp, conditions)? {
                        return Ok(stop);
                    }
                    return Ok(self.step_stop(tid));
                }
            }
        }
        if let Some(stop) = self.single_step(tid, conditions)? {
            return Ok(stop);
        }
        Ok(self.step_stop(tid))
    }

    fn step_stop(&mut self, tid: Tid) -> Stop {
        if let Some(process) = self.process.as_mut() {
            process.set_cause(tid, crate::inferior::StopCause::Step);
        }
        Stop {
            tid,
            reason: StopReason::Step,
        }
    }

    /// Executes one instruction of `tid` (over a breakpoint site if it
    /// stands on one). A signal that stops the program, or the program's
    /// end, is returned as the stop.
    ///
    /// A system call may wait for another thread (a lock, a pipe), so it
    /// is not single-stepped alone: every thread runs until the
    /// instruction after it, as `next` runs over a call.
    fn single_step(&mut self, tid: Tid, conditions: ConditionEvaluator) -> Result<Option<Stop>> {
        let regs = self.current_regs(tid)?;
        let pc = regs.rip;
        if self.breakpoints.is_site(pc) {
            self.step_over_site(tid)?;
        } else if let Some(insn) = self.instruction_at(pc).filter(|i| i.is_system_call()) {
            let next = pc + insn.bytes.len() as u64;
            if let Some(stop) = self.run_to(tid, next, regs.rsp, conditions)? {
                return Ok(Some(stop));
            }
        } else {
            let stepped = self
                .process_mut()?
                .resume(tid, crate::inferior::Resume::Step)
                .and_then(|()| self.wait_for_step(tid));
            if let Err(e) = stepped {
                if matches!(e, Error::Interrupted) {
                    return Err(e);
                }
                return self
                    .deferred_stop(conditions)
                    .and_then(|s| s.ok_or(e).map(Some));
            }
        }
        self.deferred_stop(conditions)
    }

    /// Events that arrived during a step (signals, exits, forks) are
    /// handled now; one the user must see ends the step.
    fn deferred_stop(&mut self, conditions: ConditionEvaluator) -> Result<Option<Stop>> {
        while let Some(event) = self.deferred.pop_front() {
            if let Some(stop) = self.handle_event(event, conditions)? {
                return Ok(Some(stop));
            }
        }
        // Internal handling may have resumed threads; all-stop again.
        self.stop_all()?;
        Ok(None)
    }

    /// Runs all threads until `tid` reaches `address` with its stack
    /// pointer at or above `min_sp`. `None` when it got there; a user
    /// stop (breakpoint, signal, exit) that came first otherwise.
    fn run_to(
        &mut self,
        tid: Tid,
        address: u64,
        min_sp: u64,
        conditions: ConditionEvaluator,
    ) -> Result<Option<Stop>> {
        let process = self.process.as_ref().ok_or(Error::NoProcess)?;
        self.breakpoints
            .insert_site(process.memory(), address, Owner::StepResume)?;
        self.step_resume = Some(StepResume {
            tid,
            address,
            min_sp,
        });
        let outcome = self.run_until_stop(conditions);
        self.step_resume = None;
        let memory = self.process.as_ref().map(|p| p.memory());
        self.breakpoints
            .remove_owner(memory, address, Owner::StepResume);
        let stop = outcome?;
        if stop.tid == tid && stop.reason == StopReason::Step {
            return Ok(None);
        }
        Ok(Some(stop))
    }

    /// `step` / `next`: to the beginning of another source line.
    pub fn step_line(&mut self, kind: StepKind, conditions: ConditionEvaluator) -> Result<Stop> {
        if kind == StepKind::Into {
            // At a call inlined here (hidden): `step` enters it where it is.
            if let Some(stop) = self.step_into_hidden_call() {
                return Ok(stop);
            }
        }
        let from = self.visible_line(self.current_tid);
        for _ in 0..MAX_INLINED_CALLS_ON_A_LINE {
            let outcome = self.step_to_line(kind, conditions);
            let stop = self.settle(outcome)?;
            self.hide_inlined_calls_at(&stop);
            // Stopped at a call inlined on the line the step started from:
            // as gdb, `step` enters it and `next` runs through it.
            let at_call_on_same_line = stop.reason == StopReason::Step
                && self.hidden_inline.is_some()
                && self.visible_line(stop.tid) == from;
            if !at_call_on_same_line {
                return Ok(stop);
            }
            if kind == StepKind::Into {
                return Ok(self.step_into_hidden_call().unwrap_or(stop));
            }
        }
        Err(Error::Other(
            "next gave up after too many inlined calls on one line".into(),
        ))
    }

    /// The source line thread `tid` is shown at (its frame 0's).
    fn visible_line(&self, tid: Tid) -> Option<(std::path::PathBuf, u32)> {
        let frames = self.backtrace(tid, 1).ok()?;
        let location = frames.first()?.location.as_ref()?;
        Some((location.full_path.clone(), location.line))
    }

    fn step_to_line(&mut self, kind: StepKind, conditions: ConditionEvaluator) -> Result<Stop> {
        let tid = self.current_tid;
        self.selected_frame = 0;
        let start_pc = self.current_regs(tid)?.rip;
        // Stopped at a call inlined at the pc (hidden, see stack.rs): `next`
        // steps over the whole inlined call first.
        let mut hidden_call = match kind {
            StepKind::Over => self.hidden_inlined_call(tid, start_pc),
            StepKind::Into => Vec::new(),
        };
        self.hidden_inline = None;
        let Some(mut span) = self.line_span(start_pc) else {
            // No line information here: run until this function returns.
            return self.run_out_of_frame(0, conditions).map(|(stop, _)| stop);
        };
        let mut start_line = (span.file.clone(), span.line);
        let start_function = self.function_entry(start_pc);
        for _ in 0..MAX_STEPS {
            let regs = self.current_regs(tid)?;
            let pc = regs.rip;
            let Some(insn) = self.instruction_at(pc) else {
                return Err(Error::Memory(pc));
            };
            if insn.is_call {
                let return_address = pc + insn.bytes.len() as u64;
                if kind == StepKind::Into {
                    if let Some(stop) = self.single_step(tid, conditions)? {
                        return Ok(stop);
                    }
                    let callee = self.current_regs(tid)?.rip;
                    match self.function_entry(callee) {
                        Some((_, Some(stop_at))) => {
                            return self.enter_function(tid, callee, stop_at, conditions);
                        }
                        _ => {
                            // No line information (or a PLT stub): step over it.
                            if let Some(stop) =
                                self.run_to(tid, return_address, regs.rsp, conditions)?
                            {
                                return Ok(stop);
                            }
                        }
                    }
                } else if let Some(stop) = self.run_to(tid, return_address, regs.rsp, conditions)? {
                    return Ok(stop);
                }
            } else {
                if let Some(stop) = self.single_step(tid, conditions)? {
                    return Ok(stop);
                }
                if insn.is_return {
                    // Back in the caller, perhaps mid-line: stop, as gdb does.
                    return Ok(self.step_stop(tid));
                }
            }
            let pc = self.current_regs(tid)?.rip;
            if !hidden_call.is_empty() {
                if hidden_call
                    .iter()
                    .any(|(start, end)| (*start..*end).contains(&pc))
                {
                    continue;
                }
                // Out of the inlined call: a `next` from the line it was on.
                hidden_call.clear();
                if let Some(new_span) = self.line_span(pc) {
                    start_line = (new_span.file.clone(), new_span.line);
                    span = new_span;
                }
                continue;
            }
            if pc >= span.start && pc < span.end {
                continue;
            }
            match self.line_span(pc) {
                None => {
                    // A jump into code without line information (a tail
                    // call into a library): leave it through its return.
                    if self
                        .function_entry(pc)
                        .is_some_and(|(entry, _)| entry == pc)
                    {
                        let sp = self.current_regs(tid)?.rsp;
                        let return_address = self.process()?.memory().read_u64(sp)?;
                        if let Some(stop) = self.run_to(tid, return_address, sp + 8, conditions)? {
                            return Ok(stop);
                        }
                        return Ok(self.step_stop(tid));
                    }
                }
                Some(new_span) => {
                    let moved_line = (new_span.file.clone(), new_span.line) != start_line;
                    let entry = self.function_entry(pc);
                    if entry.is_some_and(|(start, _)| start == pc) && entry != start_function {
                        // A tail call into another function with line info.
                        return match entry {
                            Some((_, Some(stop_at))) => {
                                self.enter_function(tid, pc, stop_at, conditions)
                            }
                            _ => Ok(self.step_stop(tid)),
                        };
                    }
                    if moved_line && self.is_statement_start(pc) {
                        return Ok(self.step_stop(tid));
                    }
                    span = new_span;
                }
            }
        }
        Err(Error::Other(
            "step gave up after too many instructions without reaching a new line".into(),
        ))
    }

    /// `step` arrived at the first instruction `pc` of a function with
    /// line information: run past its prologue to `stop_at` and stop.
    fn enter_function(
        &mut self,
        tid: Tid,
        pc: u64,
        stop_at: u64,
        conditions: ConditionEvaluator,
    ) -> Result<Stop> {
        if stop_at != pc {
            if let Some(stop) = self.run_to(tid, stop_at, 0, conditions)? {
                return Ok(stop);
            }
        }
        Ok(self.step_stop(tid))
    }

    /// `step up` / `finish`: run until frame `frame` returns to its
    /// caller. Returns the stop and the returning function's name.
    pub fn finish_frame(
        &mut self,
        frame: usize,
        conditions: ConditionEvaluator,
    ) -> Result<(Stop, Option<String>)> {
        match self.run_out_of_frame(frame, conditions) {
            Err(Error::Interrupted) => Ok((self.settle(Err(Error::Interrupted))?, None)),
            other => other,
        }
    }

    fn run_out_of_frame(
        &mut self,
        frame: usize,
        conditions: ConditionEvaluator,
    ) -> Result<(Stop, Option<String>)> {
        let tid = self.current_tid;
        let frames = self.backtrace(tid, frame + 64)?;
        let returning = frames
            .get(frame)
            .ok_or_else(|| Error::Other(format!("no frame {}", frame + 1)))?
            .clone();
        // The physical caller: the first frame of a different physical frame.
        let caller = frames
            .iter()
            .find(|f| f.physical > returning.physical)
            .cloned()
            .ok_or_else(|| {
                Error::Other("\"finish\" not meaningful in the outermost frame".into())
            })?;
        let cfa = returning
            .cfa
            .ok_or_else(|| Error::Unwind("cannot find the frame's return address".into()))?;
        self.selected_frame = 0;
        self.hidden_inline = None;
        if let Some(stop) = self.run_to(tid, caller.pc, cfa, conditions)? {
            return Ok((stop, None));
        }
        let value = self.return_value(&returning);
        let function = returning.function.clone().unwrap_or_else(|| "??".into());
        let stop = Stop {
            tid,
            reason: StopReason::Finished {
                function: function.clone(),
                value,
            },
        };
        Ok((stop, Some(function)))
    }

    fn return_value(&self, frame: &crate::stack::StackFrame) -> Option<crate::value::Value> {
        if frame.inlined {
            return None;
        }
        let object = self.objects.object_at(frame.lookup_pc)?;
        let function = object
            .file
            .function_at(object.file_address(frame.lookup_pc))?;
        let regs = self.current_regs(self.current_tid).ok()?;
        let xmm0 = ptrace::get_fpregs(self.current_tid)
            .map(|fp| crate::regs::xmm_low(&fp, 0))
            .unwrap_or(0);
        object.file.return_value(function.low_pc, regs.rax, xmm0)
    }
}
