//! Frames that tail calls removed, rebuilt from the call sites DWARF
//! describes, as gdb rebuilds them.
//!
//! A caller's call site says which function it called. When the frame the
//! unwinder finds below it runs another function, the called one ended
//! with a jump: gdb searches the chains of tail calls (call sites with
//! DW_AT_call_tail_call) from the called function to the one running and,
//! when every chain agrees, shows the functions of the chain as frames.
//! When the chains differ, only the calls they share at either end are
//! shown. Any call whose target cannot be known without a frame (an
//! indirect jump, a function without DWARF) makes the search give up.

use crate::engine::Debugger;
use crate::symbols::{CallSite, CallTarget};

/// The functions a tail-call search visits at most: a bound on the search
/// in a program whose functions jump to each other in many ways.
const SEARCH_BUDGET: usize = 10_000;

/// A tail call of a function: where the frame it left would return to
/// (a runtime address), and the functions it may jump to.
#[derive(Debug, Clone)]
struct TailCall {
    return_pc: u64,
    targets: Vec<u64>,
}

/// Why a search found nothing: gdb gives up on the first call it cannot
/// follow.
#[derive(Debug)]
struct Unresolvable;

/// The chains found so far: the first, and how many of its calls every
/// later one shares from its start (`callers`) and from its end
/// (`callees`).
struct Chains {
    first: Vec<u64>,
    callers: usize,
    callees: usize,
}

impl Chains {
    /// Adds a chain; `false` once nothing is shared at either end.
    fn add(found: &mut Option<Chains>, chain: &[u64]) -> bool {
        let Some(chains) = found else {
            *found = Some(Chains {
                first: chain.to_vec(),
                callers: chain.len(),
                callees: chain.len(),
            });
            return true;
        };
        let shared_start = chains
            .first
            .iter()
            .zip(chain)
            .take_while(|(a, b)| a == b)
            .count();
        let shared_end = chains
            .first
            .iter()
            .rev()
            .zip(chain.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        chains.callers = chains.callers.min(shared_start);
        chains.callees = chains.callees.min(shared_end);
        chains.callers > 0 || chains.callees > 0
    }

    /// The return pcs of the frames to show, innermost first: the calls
    /// shared at the callee's end, then those shared at the caller's end.
    fn frames(&self) -> Vec<u64> {
        let length = self.first.len();
        if self.callers == length && self.callees == length {
            return self.first.iter().rev().copied().collect();
        }
        let near_callee = self.first[length - self.callees..].iter().rev();
        let near_caller = self.first[..self.callers].iter().rev();
        near_callee.chain(near_caller).copied().collect()
    }
}

impl Debugger {
    /// The start of the (outermost) function DWARF describes at runtime
    /// address `pc`.
    pub(crate) fn dwarf_function_entry(&self, pc: u64) -> Option<u64> {
        let object = self.objects.object_at(pc)?;
        let entry = object.file.function_entry_at(object.file_address(pc))?;
        Some(object.runtime_address(entry))
    }

    /// The runtime addresses a call site of the object containing `pc`
    /// calls, when they are known without a frame.
    pub(crate) fn static_targets(&self, pc: u64, site: &CallSite) -> Option<Vec<u64>> {
        let object = self.objects.object_at(pc)?;
        match site.target() {
            CallTarget::Entries(entries) => {
                Some(entries.iter().map(|e| object.runtime_address(*e)).collect())
            }
            CallTarget::Named(name) => self.named_function_address(object, name).map(|a| vec![a]),
            CallTarget::Computed | CallTarget::Unknown => None,
        }
    }

    /// A function's address by name: in the object that calls it first,
    /// then in any other.
    fn named_function_address(
        &self,
        caller: &crate::objects::LoadedObject,
        name: &str,
    ) -> Option<u64> {
        let defined = |object| crate::call::defined_function(object, name);
        defined(caller).or_else(|| self.objects.list.iter().find_map(defined))
    }

    /// The tail calls of the function starting at `entry`; unresolvable
    /// when DWARF has no such function or one of its targets is unknown.
    fn tail_calls_of(&self, entry: u64) -> Result<Vec<TailCall>, Unresolvable> {
        let object = self.objects.object_at(entry).ok_or(Unresolvable)?;
        let sites = object
            .file
            .tail_call_sites(object.file_address(entry))
            .ok_or(Unresolvable)?;
        sites
            .iter()
            .map(|site| {
                Ok(TailCall {
                    return_pc: object.runtime_address(site.return_pc()),
                    targets: self.static_targets(entry, site).ok_or(Unresolvable)?,
                })
            })
            .collect()
    }

    /// The return pcs of the tail-call frames between a caller whose call
    /// returns to `return_pc` and the function starting at `callee`,
    /// innermost first; empty when there are none or they are unknown.
    pub(crate) fn tail_call_frames(&self, return_pc: u64, callee: u64) -> Vec<u64> {
        let Some(object) = self.objects.object_at(return_pc.wrapping_sub(1)) else {
            return Vec::new();
        };
        let Some(site) = object
            .file
            .call_site_returning_to(object.file_address(return_pc))
        else {
            return Vec::new();
        };
        let Some(targets) = self.static_targets(return_pc.wrapping_sub(1), &site) else {
            return Vec::new();
        };
        let mut found = None;
        let mut budget = SEARCH_BUDGET;
        let mut path = Vec::new();
        for target in targets {
            let searched = self.search_chains(target, callee, &mut path, &mut found, &mut budget);
            if searched.is_err() {
                return Vec::new();
            }
        }
        found.map(|chains| chains.frames()).unwrap_or_default()
    }

    /// Depth-first through the tail calls from `function` to `callee`,
    /// each call at most once on a path; every path found is added to
    /// `found`.
    fn search_chains(
        &self,
        function: u64,
        callee: u64,
        path: &mut Vec<u64>,
        found: &mut Option<Chains>,
        budget: &mut usize,
    ) -> Result<(), Unresolvable> {
        if function == callee {
            return if Chains::add(found, path) {
                Ok(())
            } else {
                Err(Unresolvable)
            };
        }
        *budget = budget.checked_sub(1).ok_or(Unresolvable)?;
        for call in self.tail_calls_of(function)? {
            if path.contains(&call.return_pc) {
                continue;
            }
            path.push(call.return_pc);
            for target in &call.targets {
                self.search_chains(*target, callee, path, found, budget)?;
            }
            path.pop();
        }
        Ok(())
    }

    /// Whether the function starting at `entry` may reach itself through
    /// tail calls (or the tail calls cannot be followed): gdb then trusts
    /// no entry value of it, since the caller's call site may describe
    /// another activation.
    pub(crate) fn may_tail_call_itself(&self, entry: u64) -> bool {
        if let Some(known) = self.tail_call_loops.borrow().get(&entry) {
            return *known;
        }
        let found = self.search_tail_call_loop(entry);
        self.tail_call_loops.borrow_mut().insert(entry, found);
        found
    }

    fn search_tail_call_loop(&self, entry: u64) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![entry];
        while let Some(function) = todo.pop() {
            if seen.len() > SEARCH_BUDGET {
                return true;
            }
            let Ok(calls) = self.tail_calls_of(function) else {
                return true;
            };
            for target in calls.into_iter().flat_map(|c| c.targets) {
                if target == entry {
                    return true;
                }
                if seen.insert(target) {
                    todo.push(target);
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::Chains;

    #[test]
    fn one_chain_is_shown_whole_innermost_first() {
        let mut found = None;
        assert!(Chains::add(&mut found, &[1, 2, 3]));
        assert_eq!(found.unwrap().frames(), vec![3, 2, 1]);
    }

    #[test]
    fn chains_that_differ_show_what_they_share_at_each_end() {
        let mut found = None;
        assert!(Chains::add(&mut found, &[1, 2, 3, 4]));
        assert!(Chains::add(&mut found, &[1, 5, 4]));
        // 1 is shared from the caller's end, 4 from the callee's.
        assert_eq!(found.unwrap().frames(), vec![4, 1]);
    }

    #[test]
    fn chains_sharing_nothing_are_ambiguous() {
        let mut found = None;
        assert!(Chains::add(&mut found, &[1, 2]));
        assert!(!Chains::add(&mut found, &[3, 4]));
        // A direct call next to a chain is ambiguous too.
        let mut direct = None;
        assert!(Chains::add(&mut direct, &[]));
        assert!(!Chains::add(&mut direct, &[7]));
    }
}
