//! Breakpoints: the user's (logical) breakpoints, and the physical `int3`
//! sites in the target that implement them and the debugger's own
//! internal stops.
//!
//! Resuming from a site executes its displaced instruction out of line, in
//! a per-site slot of a scratch page in the target followed by a jump
//! back, so a breakpoint hit costs one ptrace stop and no single-step.
//! The slot depends only on the site, so every thread can use it at once.

use crate::memory::Memory;
use crate::relocate::{self, Displacement};
use crate::Result;
use std::collections::{BTreeMap, BTreeSet};

/// Where the user asked to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocationSpec {
    Function(String),
    Line { file: Option<String>, line: u32 },
    Address(u64),
}

/// What happens at a hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Stop,
    /// dbx `when`: the session runs command list N, then resumes unless
    /// the list contains `stop`.
    When(usize),
}

/// A user breakpoint. Read through its accessors; the engine keeps its
/// addresses in step with the sites in the target, and the session changes
/// its settings through `Debugger`'s methods.
#[derive(Debug, Clone)]
pub struct Breakpoint {
    pub(crate) id: u32,
    pub(crate) location: LocationSpec,
    pub(crate) condition: Option<String>,
    /// Stop on the Nth hit (dbx `-count N`).
    pub(crate) count: Option<u64>,
    pub(crate) temporary: bool,
    pub(crate) enabled: bool,
    pub(crate) action: Action,
    /// Hits so far (condition true).
    pub(crate) hits: u64,
    /// Runtime addresses; empty while pending.
    pub(crate) addresses: Vec<u64>,
    /// The line actually used when the requested one had no code.
    pub(crate) resolved_line: Option<u32>,
    /// It has resolved at least once (so a later resolution is no news).
    pub(crate) ever_resolved: bool,
}

impl Breakpoint {
    pub fn is_pending(&self) -> bool {
        self.addresses.is_empty()
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn location(&self) -> &LocationSpec {
        &self.location
    }

    pub fn condition(&self) -> Option<&str> {
        self.condition.as_deref()
    }

    /// Stop at every Nth hit (`-count N`), when set.
    pub fn count(&self) -> Option<u64> {
        self.count
    }

    pub fn temporary(&self) -> bool {
        self.temporary
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn action(&self) -> &Action {
        &self.action
    }

    /// Hits so far (with the condition true).
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Where it is inserted (runtime addresses; empty while pending).
    pub fn addresses(&self) -> &[u64] {
        &self.addresses
    }

    /// The line used when the one asked for had no code.
    pub fn resolved_line(&self) -> Option<u32> {
        self.resolved_line
    }
}

/// Who needs a site to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    User(u32),
    /// The dynamic loader's `_dl_debug_state`: a library was (un)loaded.
    LoaderEvent,
    /// A temporary stop of `next`, `step up` or `finish` (the return address).
    StepResume,
    /// The executable's entry point, once: preloaded libraries are loaded
    /// and their constructors have run (the collector starts here).
    EntryPoint,
}

#[derive(Debug, Clone)]
pub struct Site {
    pub(crate) address: u64,
    /// The original instruction bytes (up to 16), with no int3 in them.
    pub(crate) original: Vec<u8>,
    pub(crate) owners: BTreeSet<Owner>,
    /// How to get past it; decided at the first resume over the site.
    pub(crate) displacement: Option<Displacement>,
    /// Address of the out-of-line slot, for `Displacement::OutOfLine`.
    pub(crate) slot: Option<u64>,
    /// Length of the original instruction (where the jump back starts in the slot).
    pub(crate) instruction_len: usize,
}

/// A page of the target's memory holding out-of-line slots.
#[derive(Debug, Clone)]
struct ScratchPage {
    base: u64,
    used: usize,
}

pub const SCRATCH_SIZE: usize = 4096;

#[derive(Debug, Default)]
pub struct Breakpoints {
    pub(crate) user: BTreeMap<u32, Breakpoint>,
    next_id: u32,
    sites: BTreeMap<u64, Site>,
    scratch: Vec<ScratchPage>,
    /// Slots freed by removed sites, reused before new ones are cut.
    free_slots: Vec<u64>,
}

impl Breakpoints {
    /// The user's breakpoint `id`.
    pub fn user(&self, id: u32) -> Option<&Breakpoint> {
        self.user.get(&id)
    }

    /// Every user breakpoint, by number.
    pub fn users(&self) -> impl Iterator<Item = &Breakpoint> {
        self.user.values()
    }

    pub fn next_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// Makes sure an int3 is at `address` for `owner`.
    pub fn insert_site(&mut self, memory: &Memory, address: u64, owner: Owner) -> Result<()> {
        if let Some(site) = self.sites.get_mut(&address) {
            site.owners.insert(owner);
            return Ok(());
        }
        let mut original = vec![0u8; 16];
        let readable = memory.read_partial(address, &mut original);
        if readable == 0 {
            return Err(crate::Error::Memory(address));
        }
        original.truncate(readable);
        self.unpatch(address, &mut original);
        crate::rescue::note_patch(address, &original[..1]);
        if let Err(e) = memory.write(address, &[0xcc]) {
            crate::rescue::forget_patch(address, 1);
            return Err(e);
        }
        self.sites.insert(
            address,
            Site {
                address,
                original,
                owners: BTreeSet::from([owner]),
                displacement: None,
                slot: None,
                instruction_len: 0,
            },
        );
        Ok(())
    }

    /// Drops `owner` from the site; removes the int3 when nobody is left.
    pub fn remove_owner(&mut self, memory: Option<&Memory>, address: u64, owner: Owner) {
        let Some(site) = self.sites.get_mut(&address) else {
            return;
        };
        site.owners.remove(&owner);
        if site.owners.is_empty() {
            let site = self.sites.remove(&address).expect("present");
            if let Some(memory) = memory {
                // The process may be gone; then there is nothing to restore.
                let _ = memory.write(address, &site.original[..1]);
            }
            crate::rescue::forget_patch(address, 1);
            if let Some(slot) = site.slot {
                crate::rescue::forget_slot(slot);
                self.free_slots.push(slot);
            }
        }
    }

    /// Removes every site owned only by `owner`.
    pub fn remove_all_of(&mut self, memory: Option<&Memory>, owner: Owner) {
        let addresses: Vec<u64> = self
            .sites
            .values()
            .filter(|s| s.owners.contains(&owner))
            .map(|s| s.address)
            .collect();
        for address in addresses {
            self.remove_owner(memory, address, owner);
        }
    }

    /// Replaces int3 bytes of our sites inside `buf` (read from `address`)
    /// with the original bytes, so the caller sees the program's code.
    pub fn unpatch(&self, address: u64, buf: &mut [u8]) {
        let end = address + buf.len() as u64;
        for (site_address, site) in self.sites.range(address..end) {
            if let Some(&byte) = site.original.first() {
                buf[(site_address - address) as usize] = byte;
            }
        }
    }

    /// The address of a site whose int3 or saved instruction bytes overlap
    /// `[address, address + len)`.
    pub fn site_overlapping(&self, address: u64, len: usize) -> Option<u64> {
        let end = address.saturating_add(len as u64);
        self.sites
            .range(address.saturating_sub(15)..end)
            .find(|(&at, site)| at + site.original.len().max(1) as u64 > address)
            .map(|(&at, _)| at)
    }

    /// Reads memory as the program's code is, without our int3s.
    pub fn read_code(&self, memory: &Memory, address: u64, buf: &mut [u8]) -> usize {
        let n = memory.read_partial(address, buf);
        self.unpatch(address, &mut buf[..n]);
        n
    }

    pub fn is_site(&self, address: u64) -> bool {
        self.sites.contains_key(&address)
    }

    /// Who needs the site at `address` (none if there is no site).
    pub fn owners(&self, address: u64) -> Vec<Owner> {
        self.sites
            .get(&address)
            .map(|s| s.owners.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The program's byte under the int3 at `address`.
    pub fn original_byte(&self, address: u64) -> Option<u8> {
        self.sites
            .get(&address)
            .and_then(|s| s.original.first().copied())
    }

    /// The out-of-line slot of the site at `address`, once prepared.
    pub fn slot_of(&self, address: u64) -> Option<u64> {
        self.sites.get(&address).and_then(|s| s.slot)
    }

    pub fn displacement_of(&self, address: u64) -> Option<Displacement> {
        self.sites
            .get(&address)
            .and_then(|s| s.displacement.clone())
    }

    /// Every site's address.
    pub fn site_addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.sites.keys().copied()
    }

    /// Puts the program's bytes back under every site in `memory` (a
    /// forked child's copy, or ours while a vfork child shares it); the
    /// sites stay defined.
    pub fn write_originals(&self, memory: &Memory) {
        for site in self.sites.values() {
            let _ = memory.write(site.address, &site.original[..1]);
        }
    }

    /// Writes every site's int3 again (after `write_originals`).
    pub fn write_traps(&self, memory: &Memory) {
        for address in self.sites.keys() {
            let _ = memory.write(*address, &[0xcc]);
        }
    }

    /// Forgets the sites in `range` (an object unloaded: the code is gone).
    pub fn forget_sites_in(&mut self, range: std::ops::Range<u64>) {
        let dead: Vec<u64> = self.sites.range(range).map(|(a, _)| *a).collect();
        for address in dead {
            if let Some(site) = self.sites.remove(&address) {
                crate::rescue::forget_patch(address, 1);
                if let Some(slot) = site.slot {
                    crate::rescue::forget_slot(slot);
                }
            }
            for bp in self.user.values_mut() {
                bp.addresses.retain(|&a| a != address);
            }
        }
    }

    /// Forgets every site (the address space went away: exit or exec).
    pub fn forget_sites(&mut self) {
        self.sites.clear();
        self.scratch.clear();
        self.free_slots.clear();
        for bp in self.user.values_mut() {
            bp.addresses.clear();
        }
    }

    pub fn add_scratch_page(&mut self, base: u64) {
        self.scratch.push(ScratchPage { base, used: 0 });
    }

    /// A free slot within ±2 GiB of `near`, if any page has room.
    fn take_slot(&mut self, near: u64) -> Option<u64> {
        let in_range = |slot: u64| slot.abs_diff(near) < (1 << 31) - SCRATCH_SIZE as u64;
        if let Some(i) = self.free_slots.iter().position(|&s| in_range(s)) {
            return Some(self.free_slots.swap_remove(i));
        }
        let page = self
            .scratch
            .iter_mut()
            .find(|p| in_range(p.base) && p.used + relocate::SLOT_SIZE <= SCRATCH_SIZE)?;
        let slot = page.base + page.used as u64;
        page.used += relocate::SLOT_SIZE;
        Some(slot)
    }

    pub fn has_scratch_near(&self, near: u64) -> bool {
        let in_range = |a: u64| a.abs_diff(near) < (1 << 31) - SCRATCH_SIZE as u64;
        self.free_slots.iter().any(|&s| in_range(s))
            || self
                .scratch
                .iter()
                .any(|p| in_range(p.base) && p.used + relocate::SLOT_SIZE <= SCRATCH_SIZE)
    }

    /// Decides how to get past the site at `address`, preparing its slot.
    /// `instruction_len` is the decoded length of the original instruction.
    pub fn prepare_displacement(
        &mut self,
        memory: &Memory,
        address: u64,
        instruction_len: usize,
    ) -> Result<Displacement> {
        if let Some(d) = self
            .sites
            .get(&address)
            .and_then(|s| s.displacement.clone())
        {
            return Ok(d);
        }
        let slot = self.take_slot(address);
        let Some(site) = self.sites.get_mut(&address) else {
            return Ok(Displacement::SingleStep);
        };
        site.instruction_len = instruction_len;
        let displacement = match slot {
            Some(slot) => relocate::displace(&site.original, address, slot),
            None => Displacement::SingleStep,
        };
        match (&displacement, slot) {
            (Displacement::OutOfLine { code }, Some(slot)) => {
                memory.write(slot, code)?;
                site.slot = Some(slot);
                crate::rescue::note_slot(slot, address, instruction_len);
            }
            (_, Some(slot)) => self.free_slots.push(slot),
            _ => {}
        }
        if let Some(site) = self.sites.get_mut(&address) {
            site.displacement = Some(displacement.clone());
        }
        Ok(displacement)
    }

    /// If `pc` lies inside an out-of-line slot, the address in the
    /// program it stands for, and whether the displaced instruction has
    /// not run yet (so the thread is logically at the breakpoint).
    pub fn translate_slot_pc(&self, pc: u64) -> Option<(u64, bool)> {
        self.sites.values().find_map(|site| {
            let slot = site.slot?;
            if pc == slot {
                Some((site.address, true))
            } else if pc > slot && pc < slot + relocate::SLOT_SIZE as u64 {
                Some((site.address + site.instruction_len as u64, false))
            } else {
                None
            }
        })
    }
}
