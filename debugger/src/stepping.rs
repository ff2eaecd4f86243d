//! Stepping: by instruction, by source line, and out of a function.
//!
//! Line stepping single-steps the current thread (the others stay
//! stopped) through the addresses of the current line. Calls are stepped
//! over by running every thread to the return address with a temporary
//! breakpoint, checked against the stack pointer so that recursive
//! activations do not end the step early. Where a step stops follows
//! gdb's rules (`step_in_frame`): the start of a statement row of another
//! line stops it; code inlined into the stepped function counts as a call
//! (`inlined_landing`); frames are compared with the inlined calls that
//! start at the pc left out, as every stop shows them.

use crate::breakpoints::Owner;
use crate::engine::{ConditionEvaluator, Debugger, StepResume, Stop, StopReason};
use crate::ptrace::Tid;
use crate::{Error, Result};

/// More single-steps than this on one `step`/`next` is a runaway loop in
/// code without line information; stop and tell rather than spin forever.
const MAX_STEPS: usize = 5_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `step`: into calls of functions with line information.
    Into,
    /// `next`: over calls.
    Over,
}

/// What a step goes on from: the frame being stepped (its functions,
/// outermost first), the line it steps away from, the address range it
/// runs through without looking.
struct SteppedFrame {
    frame: Vec<(usize, usize)>,
    current: (std::path::PathBuf, u32),
    span: LineSpan,
}

/// Where a step landed relative to code inlined into the stepped frame.
enum InlinedLanding {
    /// Not in a call inlined into the frame: the line rules decide.
    NotDeeper,
    KeepGoing,
    /// Stop, leaving out this many inlined frames (`None`: those that
    /// start here, as at any stop).
    Stop(Option<usize>),
}

/// A chain of active functions (outermost first) without its `count`
/// innermost inlined calls; the real function always stays.
fn without_innermost(mut chain: Vec<(usize, usize)>, count: usize) -> Vec<(usize, usize)> {
    let keep = chain.len().saturating_sub(count).max(1).min(chain.len());
    chain.truncate(keep);
    chain
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

    /// Start (runtime) of the function containing `pc` and whether it has
    /// line information; the address to stop at when stepping into it.
    fn function_entry(&self, pc: u64) -> Option<(u64, Option<u64>)> {
        let object = self.objects.object_at(pc)?;
        let file_pc = object.file_address(pc);
        if let Some(function) = object.file.function_at(file_pc) {
            let stop_at = function
                .location
                .is_some()
                .then(|| object.runtime_address(function.step_address));
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
        let tid = self.current_tid;
        let pc = self.current_regs(tid)?.rip;
        if kind == StepKind::Into && self.enter_skipped_inline_call(tid, pc) {
            // gdb's `step` into an inlined call that starts here: the
            // program does not move, the call's frame appears.
            self.selected_frame = 0;
            return Ok(self.step_stop(tid));
        }
        let outcome = self.step_to_line(kind, conditions);
        let stop = self.settle(outcome)?;
        if stop.reason == StopReason::Step {
            if let Ok(pc) = self.current_regs(stop.tid).map(|r| r.rip) {
                self.skip_inlined_calls_at(stop.tid, pc);
            }
        }
        Ok(stop)
    }

    fn step_to_line(&mut self, kind: StepKind, conditions: ConditionEvaluator) -> Result<Stop> {
        let tid = self.current_tid;
        self.selected_frame = 0;
        let start_pc = self.current_regs(tid)?.rip;
        let Some(mut span) = self.line_span(start_pc) else {
            // No line information here: run until this function returns.
            return self.run_out_of_frame(0, conditions).map(|(stop, _)| stop);
        };
        // The frame being stepped: inlined calls not entered yet are not
        // part of it, and its line is the one shown for it.
        let skipped = self.inline_skips.at(tid, start_pc);
        let frame = without_innermost(self.function_chain(start_pc), skipped);
        if skipped > 0 {
            // As gdb: the line's range ends with the inlined call not
            // entered yet (its code is not the frame's line).
            if let Some(end) = self.objects.object_at(start_pc).and_then(|o| {
                o.file
                    .function_scope_end(o.file_address(start_pc), frame.len())
                    .map(|end| o.runtime_address(end))
            }) {
                span.end = span.end.min(end);
            }
        }
        let current = self
            .inline_call_site(start_pc, skipped)
            .unwrap_or_else(|| (span.file.clone(), span.line));
        self.step_in_frame(
            kind,
            conditions,
            SteppedFrame {
                frame,
                current,
                span,
            },
        )
    }

    /// The stepping loop: single steps (over calls for `next`) in `stepped`
    /// until gdb's rules say stop.
    fn step_in_frame(
        &mut self,
        kind: StepKind,
        conditions: ConditionEvaluator,
        stepped: SteppedFrame,
    ) -> Result<Stop> {
        let tid = self.current_tid;
        let SteppedFrame {
            mut frame,
            mut current,
            mut span,
        } = stepped;
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
                    let mut callee = self.current_regs(tid)?.rip;
                    if let Some(target) = self.plt_target(callee) {
                        // A call through the PLT: gdb steps on into the
                        // function the stub jumps to (through the dynamic
                        // linker's resolver the first time), when it has
                        // lines.
                        if matches!(self.function_entry(target), Some((entry, Some(_))) if entry == target)
                        {
                            let entry_sp = regs.rsp - 8;
                            if let Some(stop) = self.run_to(tid, target, entry_sp, conditions)? {
                                return Ok(stop);
                            }
                            callee = target;
                        }
                    }
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
                // A return lands in the caller, usually mid-line: the line
                // rules below go on to its next statement, as gdb does.
            }
            let pc = self.current_regs(tid)?.rip;
            if pc >= span.start && pc < span.end {
                continue;
            }
            match self.inlined_landing(kind, &frame, &current, pc) {
                InlinedLanding::NotDeeper => {}
                InlinedLanding::KeepGoing => continue,
                InlinedLanding::Stop(skip) => {
                    if let Some(frames) = skip {
                        self.inline_skips.choose(tid, pc, frames);
                    }
                    return Ok(self.step_stop(tid));
                }
            }
            let Some(new_span) = self.line_span(pc) else {
                // A jump into a PLT stub (a tail call into a library):
                // on into the function it calls when that has lines.
                if let Some(target) = self.plt_target(pc) {
                    if let Some((entry, Some(stop_at))) = self.function_entry(target) {
                        if entry == target {
                            let sp = self.current_regs(tid)?.rsp;
                            if let Some(stop) = self.run_to(tid, target, sp, conditions)? {
                                return Ok(stop);
                            }
                            return self.enter_function(tid, target, stop_at, conditions);
                        }
                    }
                }
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
                // Anywhere else without a line (a return into a caller
                // without line information): stop, as gdb does.
                return Ok(self.step_stop(tid));
            };
            // A jump into another function (a tail call) is no call for
            // gdb: the line rules below decide, so it stops at the entry.
            // gdb's rule: stop at the start of a statement row of another
            // line; at the start of a non-statement row of another line in
            // the same frame, go on through that row as if in the old line;
            // in the middle of a row, go on in its line.
            if let Some((row_start, location, is_stmt)) = self.line_row_at(pc) {
                let mut line = (location.file.clone(), location.line);
                let here = self.frame_at(pc, self.function_chain(pc));
                if pc == row_start && line != current {
                    if is_stmt {
                        return Ok(self.step_stop(tid));
                    }
                    if here == frame {
                        span = new_span;
                        continue;
                    }
                    // Another frame, not at a statement: no line to step
                    // away from, so that a later row of this one stops.
                    line = (std::path::PathBuf::new(), 0);
                }
                current = line;
                frame = here;
            }
            span = new_span;
        }
        Err(Error::Other(
            "step gave up after too many instructions without reaching a new line".into(),
        ))
    }

    /// The function the PLT stub at `pc` calls (`NAME@plt`), found as the
    /// dynamic linker finds it: the first loaded object defining NAME.
    fn plt_target(&self, pc: u64) -> Option<u64> {
        let object = self.objects.object_at(pc)?;
        let stub = object.file.symbol_at(object.file_address(pc))?;
        let name = stub.name.strip_suffix("@plt")?;
        self.objects.list.iter().find_map(|o| {
            o.file
                .lookup_symbol(name)
                .into_iter()
                .find(|s| s.is_function && s.address != 0)
                .map(|s| o.runtime_address(s.address))
        })
    }

    /// The frame a thread at `pc` is in, from the functions active there
    /// (`chain`): inlined calls starting at `pc` are not entered yet.
    fn frame_at(&self, pc: u64, chain: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
        let starting = self.objects.object_at(pc).map_or(0, |o| {
            o.file.inlined_calls_starting_at(o.file_address(pc)).len()
        });
        without_innermost(chain, starting)
    }

    /// The functions active at `pc`, outermost first (see
    /// `function_scopes_at`).
    fn function_chain(&self, pc: u64) -> Vec<(usize, usize)> {
        self.objects
            .object_at(pc)
            .map(|o| o.file.function_scopes_at(o.file_address(pc)))
            .unwrap_or_default()
    }

    fn line_row_at(&self, pc: u64) -> Option<(u64, crate::symbols::SourceLocation, bool)> {
        let object = self.objects.object_at(pc)?;
        let (start, location, is_stmt) = object.file.line_row_at(object.file_address(pc))?;
        Some((object.runtime_address(start), location, is_stmt))
    }

    /// The call site of the outermost of the `skipped` innermost inlined
    /// calls at `pc`: the line shown for the frame they are inlined into.
    fn inline_call_site(&self, pc: u64, skipped: usize) -> Option<(std::path::PathBuf, u32)> {
        if skipped == 0 {
            return None;
        }
        let frames = self.objects.inline_frames(pc);
        let location = frames.get(skipped)?.location.as_ref()?;
        Some((location.file.clone(), location.line))
    }

    /// gdb's handling of a step that reached code inlined into the frame
    /// being stepped (`frame`, whose current line is `current`). At the
    /// first instruction of the inlined calls, `step` enters the outermost
    /// when it is called from the current line and otherwise stops at its
    /// call site; `next` goes on through a call from the current line and
    /// stops at a call from another. Inside inlined code `next` goes on
    /// and `step` stops.
    fn inlined_landing(
        &self,
        kind: StepKind,
        frame: &[(usize, usize)],
        current: &(std::path::PathBuf, u32),
        pc: u64,
    ) -> InlinedLanding {
        let chain = self.function_chain(pc);
        // As at any stop, inlined calls starting at `pc` are not entered.
        let effective = self.frame_at(pc, chain.clone());
        let starting = chain.len() - effective.len();
        if frame.is_empty() || !effective.starts_with(frame) {
            return InlinedLanding::NotDeeper;
        }
        if effective.len() > frame.len() {
            // Inside code inlined into the frame.
            return match kind {
                StepKind::Over => InlinedLanding::KeepGoing,
                StepKind::Into => InlinedLanding::Stop(None),
            };
        }
        if starting == 0 {
            return InlinedLanding::NotDeeper;
        }
        let from_current_line = self.inline_call_site(pc, starting).as_ref() == Some(current);
        match (kind, from_current_line) {
            (StepKind::Into, true) => InlinedLanding::Stop(Some(starting - 1)),
            (StepKind::Over, true) => InlinedLanding::KeepGoing,
            (_, false) => InlinedLanding::Stop(Some(starting)),
        }
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
        let outcome = match self.run_out_of_frame(frame, conditions) {
            Err(Error::Interrupted) => Ok((self.settle(Err(Error::Interrupted))?, None)),
            other => other,
        };
        if let Ok((stop, _)) = &outcome {
            if matches!(stop.reason, StopReason::Finished { .. }) {
                // Back at the return address: inlined calls starting there
                // are not entered yet, as at any stop.
                if let Ok(pc) = self.current_regs(stop.tid).map(|r| r.rip) {
                    self.skip_inlined_calls_at(stop.tid, pc);
                }
            }
        }
        outcome
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
        if returning.inlined && returning.physical == 0 {
            return self.finish_inlined(&returning, conditions);
        }
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

    /// gdb's `finish` out of an inlined call: `next` in the frame it is
    /// inlined into, from no line, until the thread is back in that frame
    /// at the start of a statement. No value: the call has no return.
    fn finish_inlined(
        &mut self,
        returning: &crate::stack::StackFrame,
        conditions: ConditionEvaluator,
    ) -> Result<(Stop, Option<String>)> {
        let tid = self.current_tid;
        self.selected_frame = 0;
        let pc = self.current_regs(tid)?.rip;
        let mut caller = self.function_chain(pc);
        caller.truncate(caller.len().saturating_sub(returning.inline_depth + 1));
        let stepped = SteppedFrame {
            frame: caller,
            current: (std::path::PathBuf::new(), 0),
            span: LineSpan {
                start: pc,
                end: pc,
                file: std::path::PathBuf::new(),
                line: 0,
            },
        };
        let stop = self.step_in_frame(StepKind::Over, conditions, stepped)?;
        let function = returning.function.clone().unwrap_or_else(|| "??".into());
        if stop.reason != StopReason::Step {
            return Ok((stop, None));
        }
        let stop = Stop {
            tid,
            reason: StopReason::Finished {
                function: function.clone(),
                value: None,
            },
        };
        Ok((stop, Some(function)))
    }

    /// What the function of `frame` (a frame before the return) returned,
    /// read from the registers and memory now that it has.
    fn return_value(&self, frame: &crate::stack::StackFrame) -> Option<crate::value::Value> {
        if frame.inlined {
            return None;
        }
        let object = self.objects.object_at(frame.lookup_pc)?;
        let function = object
            .file
            .function_at(object.file_address(frame.lookup_pc))?;
        let now = self
            .backtrace(self.current_tid, 1)
            .ok()?
            .into_iter()
            .next()?;
        let view = self.frame_view(&now).ok()?;
        object.file.returned_value(function.low_pc, &view)
    }
}
