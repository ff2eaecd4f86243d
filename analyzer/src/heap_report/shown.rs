//! Stacks as the heap listings show them: the frame each model PC shows
//! as (as a caller, as a leaf), and the walk that turns a stack's PCs into
//! its shown frames from `main` (or the outermost frame) down, either as a
//! key of those frames (to group stacks shown alike) or as the frames
//! themselves (to print a group).

use crate::model::{FunctionKind, Model, ObjectId, PcId};
use crate::resolve::{symbolize, PcSymbol};
use debugger::symbols::ObjectFile;
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One frame of an allocation stack, as shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub(super) struct ShownFrame {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// A shown frame and its line of a listing's text.
#[derive(Default)]
pub(super) struct ShownLine {
    pub frame: ShownFrame,
    pub text: String,
}

/// A shown frame's name: a hash of its function, file and line, so that
/// walks on several threads, meeting frames in different orders, name
/// them alike. Bit 1 is set (`UNSET` and `HIDDEN` have it clear) and bit
/// 0 tells `main`, leaving 62 bits of hash: frames that differ share a
/// code with a chance of about n²/2^63 among n distinct frames (one in
/// ten million at a million frames).
pub(super) type FrameCode = u64;
/// A frame not worked out yet.
const UNSET: FrameCode = 0;
/// A PC of the collector's own code: not shown.
pub(super) const HIDDEN: FrameCode = 4;

fn is_main(frame: FrameCode) -> bool {
    frame & 1 != 0
}

fn code_of(frame: &ShownFrame) -> FrameCode {
    // The std hasher made by `new` has fixed keys: the same code on
    // every thread.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    frame.hash(&mut hasher);
    (hasher.finish() & !3) | 2 | u64::from(frame.function == "main")
}

/// The frames PCs show as, each worked out once, and the frames met (a
/// line each, numbered): what printing a group's stack needs, without
/// the model.
pub(super) struct FrameMemo {
    /// Per PC: its frame as a caller, as a leaf (or `UNSET`).
    caller: Vec<FrameCode>,
    leaf: Vec<FrameCode>,
    /// Per PC: in `__restore_rt`.
    trampoline: Arc<[bool]>,
    lines: Vec<ShownLine>,
    line_of: FxHashMap<FrameCode, u32>,
}

/// Per PC of `model`: whether it is in a signal trampoline.
pub(super) fn trampolines(model: &Model) -> Arc<[bool]> {
    let in_trampoline: Vec<bool> = model
        .functions
        .iter()
        .map(|f| f.name == "__restore_rt")
        .collect();
    model
        .pcs
        .iter()
        .map(|pc| in_trampoline[pc.function as usize])
        .collect()
}

impl FrameMemo {
    pub(super) fn new(trampoline: Arc<[bool]>) -> FrameMemo {
        FrameMemo {
            caller: vec![UNSET; trampoline.len()],
            leaf: vec![UNSET; trampoline.len()],
            trampoline,
            lines: Vec::new(),
            line_of: FxHashMap::default(),
        }
    }

    /// Names `frame` (and keeps it, to be printed).
    pub(super) fn record(&mut self, frame: ShownFrame) -> FrameCode {
        let code = code_of(&frame);
        if !self.line_of.contains_key(&code) {
            self.keep(
                code,
                ShownLine {
                    text: format!("    {}\n", frame_text(&frame)),
                    frame,
                },
            );
        }
        code
    }

    fn keep(&mut self, code: FrameCode, line: ShownLine) {
        self.line_of.insert(code, self.lines.len() as u32);
        self.lines.push(line);
    }

    /// The number of the line of the frame named `code` (recorded by this
    /// memo or one it absorbed).
    fn line_number(&self, code: FrameCode) -> Option<u32> {
        self.line_of.get(&code).copied()
    }

    /// Takes in what another walk worked out.
    pub(super) fn absorb(&mut self, other: FrameMemo) {
        for (mine, theirs) in [
            (&mut self.caller, &other.caller),
            (&mut self.leaf, &other.leaf),
        ] {
            for (mine, &theirs) in mine.iter_mut().zip(theirs) {
                if *mine == UNSET {
                    *mine = theirs;
                }
            }
        }
        let mut lines = other.lines;
        for (code, number) in other.line_of {
            if !self.line_of.contains_key(&code) {
                self.keep(code, std::mem::take(&mut lines[number as usize]));
            }
        }
    }

    fn in_trampoline(&self, pc: PcId) -> bool {
        self.trampoline.get(pc as usize).copied().unwrap_or(false)
    }

    fn known(&self, pc: PcId, as_leaf: bool) -> FrameCode {
        let memo = match as_leaf {
            true => &self.leaf,
            false => &self.caller,
        };
        memo.get(pc as usize).copied().unwrap_or(UNSET)
    }
}

/// Where a walk gets its frames from.
pub(super) trait Frames {
    /// The frame PC `pc` shows as: as the leaf (or below a signal
    /// trampoline), or as a caller.
    fn frame(&mut self, pc: PcId, as_leaf: bool) -> FrameCode;
    fn is_trampoline(&self, pc: PcId) -> bool;
}

/// A memo that has every frame the walks asked for: a stack walked again
/// asks for the same frames.
impl Frames for &FrameMemo {
    fn frame(&mut self, pc: PcId, as_leaf: bool) -> FrameCode {
        match self.known(pc, as_leaf) {
            UNSET => HIDDEN,
            code => code,
        }
    }

    fn is_trampoline(&self, pc: PcId) -> bool {
        self.in_trampoline(pc)
    }
}

/// The frames the model's PCs show as, each worked out once. A caller's
/// PC is shown as the loader symbolized it (a return address, looked up
/// at its call); a leaf's PC, the return address into the code that
/// called the allocator, which the loader looked up as it is (as an
/// interrupted PC), is looked up again at its call; so is the PC below a
/// signal trampoline, which the loader looked up as it is too.
pub(super) struct ModelFrames<'a> {
    model: &'a Model,
    memo: FrameMemo,
    /// Opened symbol files, by object (None: unreadable).
    files: HashMap<ObjectId, Option<ObjectFile>>,
}

impl Frames for ModelFrames<'_> {
    fn frame(&mut self, pc: PcId, as_leaf: bool) -> FrameCode {
        let known = self.memo.known(pc, as_leaf);
        if known != UNSET {
            return known;
        }
        let code = match self.work_out(pc, as_leaf) {
            Some(frame) => self.memo.record(frame),
            None => HIDDEN,
        };
        let memo = match as_leaf {
            true => &mut self.memo.leaf,
            false => &mut self.memo.caller,
        };
        if let Some(slot) = memo.get_mut(pc as usize) {
            *slot = code;
        }
        code
    }

    fn is_trampoline(&self, pc: PcId) -> bool {
        self.memo.in_trampoline(pc)
    }
}

impl<'a> ModelFrames<'a> {
    pub(super) fn new(model: &'a Model, trampoline: Arc<[bool]>) -> ModelFrames<'a> {
        ModelFrames {
            model,
            memo: FrameMemo::new(trampoline),
            files: HashMap::new(),
        }
    }

    pub(super) fn into_memo(self) -> FrameMemo {
        self.memo
    }

    /// The frame of `pc`, or None for the collector's own frames (its
    /// pthread_create, which a thread's stack passes through).
    fn work_out(&mut self, pc: PcId, as_leaf: bool) -> Option<ShownFrame> {
        let model = self.model;
        let entry = model.pc(pc);
        let object = entry.object.map(|o| model.object(o));
        if object.is_some_and(|o| o.is_collector()) {
            return None;
        }
        Some(match (as_leaf, entry.object) {
            (true, Some(object)) => self.look_up(object, entry.address, entry.offset),
            (true, None) => unknown_frame(entry.address.saturating_sub(1)),
            (false, _) => {
                let function = model.function(entry.function);
                let line = entry.line.map(|l| model.line(l));
                match function.kind {
                    FunctionKind::Normal => ShownFrame {
                        function: function.name.clone(),
                        file: line.map(|l| l.file.display().to_string()),
                        line: line.map(|l| l.line),
                    },
                    _ => unknown_frame(entry.address),
                }
            }
        })
    }

    /// The frame of the call before return address `address` (at `offset`
    /// in `object`).
    fn look_up(&mut self, object: ObjectId, address: u64, offset: u64) -> ShownFrame {
        let model = self.model;
        let entry = model.object(object);
        let file = self.files.entry(object).or_insert_with(|| {
            let path = entry
                .symbols_from
                .clone()
                .or_else(|| entry.path.is_file().then(|| entry.path.clone()))?;
            ObjectFile::open(&path).ok()
        });
        let vdso = entry.path.as_os_str() == "[vdso]";
        match file
            .as_ref()
            .map(|f| symbolize(f, offset.wrapping_sub(1), vdso))
        {
            Some(PcSymbol::Function { name, line, .. }) => ShownFrame {
                function: name,
                file: line.as_ref().map(|l| l.file.display().to_string()),
                line: line.map(|l| l.line),
            },
            _ => unknown_frame(address.saturating_sub(1)),
        }
    }
}

/// A frame no function is known for: its address.
fn unknown_frame(address: u64) -> ShownFrame {
    ShownFrame {
        function: format!("0x{address:x}"),
        file: None,
        line: None,
    }
}

fn frame_text(frame: &ShownFrame) -> String {
    match (&frame.file, frame.line) {
        (Some(file), Some(line)) => format!("{}, line {line} in \"{file}\"", frame.function),
        _ => frame.function.clone(),
    }
}

/// What a walk makes of a shown stack: a node per stack as shown, made
/// from its caller's node and its frame.
pub(super) trait Nodes {
    type Node: Copy;
    /// The empty stack.
    fn root(&self) -> Self::Node;
    fn child(&mut self, parent: Self::Node, frame: FrameCode) -> Self::Node;
}

/// A shown stack's key: its frames from the outermost folded into 128
/// bits, so that stacks shown alike have one key and stacks shown
/// differently two, but for a chance of about n²/2^129 that some two of
/// n distinct shown stacks (and the outer parts of them) share one
/// (2^-69 at a billion).
pub(super) type Key = [u64; 2];

/// Keys as nodes: nothing stored, nothing looked up.
pub(super) struct Keys;

impl Nodes for Keys {
    type Node = Key;

    fn root(&self) -> Key {
        [0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344]
    }

    /// Two lanes, each through a different finalizer (MurmurHash3's,
    /// SplitMix64's), the second fed by the first: for a given frame a
    /// one-to-one map of the 128 bits.
    fn child(&mut self, parent: Key, frame: FrameCode) -> Key {
        let [a, b] = parent;
        let a2 = murmur_mix(a ^ frame.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let b2 = splitmix_mix(b ^ a.rotate_left(29) ^ frame.wrapping_mul(0xd6e8_feb8_6659_fd93));
        [a2, b2]
    }
}

fn murmur_mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

fn splitmix_mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Shown stacks as a tree of (parent, line number) nodes: a node per
/// frame a walk made, none shared (a walk of a few stacks, the listed
/// groups', in walk order: each path's frames made once).
pub(super) struct Tree {
    nodes: Vec<(u32, u32)>,
}

/// A node whose frame was never recorded (none: every frame a walk is
/// given is).
const NO_LINE: u32 = u32::MAX;

impl Default for Tree {
    fn default() -> Tree {
        Tree {
            nodes: vec![(0, NO_LINE)],
        }
    }
}

impl Tree {
    /// The lines of `node`'s frames, leaf first.
    pub(super) fn lines<'a>(
        &'a self,
        memo: &'a FrameMemo,
        mut node: u32,
    ) -> impl Iterator<Item = &'a ShownLine> + 'a {
        std::iter::from_fn(move || loop {
            if node == 0 {
                return None;
            }
            let (parent, line) = *self.nodes.get(node as usize)?;
            node = parent;
            if let Some(line) = memo.lines.get(line as usize) {
                return Some(line);
            }
        })
    }
}

/// A tree as a walk grows it, with the memo that numbers its frames.
pub(super) struct Growing<'a> {
    pub tree: Tree,
    pub memo: &'a FrameMemo,
}

impl Nodes for Growing<'_> {
    type Node = u32;

    fn root(&self) -> u32 {
        0
    }

    fn child(&mut self, parent: u32, frame: FrameCode) -> u32 {
        let line = self.memo.line_number(frame).unwrap_or(NO_LINE);
        self.tree.nodes.push((parent, line));
        self.tree.nodes.len() as u32 - 1
    }
}

/// The walk from stacks' PCs to their shown stacks' nodes. The stack
/// shown ends at its innermost `main`: a `main` starts it afresh; frames
/// of the collector are left out; below a signal trampoline, the
/// interrupted frame shows as a leaf.
pub(super) struct ShownWalk<N: Nodes> {
    pub nodes: N,
    /// Per frame of the path walked last, from the outermost: its PC and
    /// the node after it shown as a caller (made once a frame is below it:
    /// a stack's innermost frame shows as a leaf instead).
    path: Vec<(PcId, Option<N::Node>)>,
}

impl<N: Nodes> ShownWalk<N> {
    pub(super) fn new(nodes: N) -> ShownWalk<N> {
        ShownWalk {
            nodes,
            path: Vec::new(),
        }
    }

    /// The node of the stack whose PCs are the first `kept` of the path
    /// walked last and then `added` (outermost first).
    pub(super) fn stack(
        &mut self,
        frames: &mut impl Frames,
        kept: usize,
        added: &[PcId],
    ) -> N::Node {
        self.path.truncate(kept);
        for &pc in added {
            self.settle(frames);
            self.path.push((pc, None));
        }
        match self.path.split_last() {
            Some((&(pc, _), outer)) => {
                let above = node_above(&mut self.nodes, frames, outer, pc);
                let frame = frames.frame(pc, true);
                step(&mut self.nodes, above, frame)
            }
            None => self.nodes.root(),
        }
    }

    /// Makes the node of the innermost frame of the path as a caller, if
    /// it is not made yet.
    fn settle(&mut self, frames: &mut impl Frames) {
        let Some(((pc, node), outer)) = self.path.split_last_mut() else {
            return;
        };
        if node.is_none() {
            let above = node_above(&mut self.nodes, frames, outer, *pc);
            let frame = frames.frame(*pc, false);
            *node = Some(step(&mut self.nodes, above, frame));
        }
    }
}

/// The node below `node` for one more frame toward the leaf.
fn step<N: Nodes>(nodes: &mut N, node: N::Node, frame: FrameCode) -> N::Node {
    match frame {
        HIDDEN => node,
        f if is_main(f) => {
            let root = nodes.root();
            nodes.child(root, f)
        }
        f => nodes.child(node, f),
    }
}

/// The node of the frames above a frame of PC `pc` whose callers are
/// `outer` (from the outermost, each made): their caller's node, but
/// below a signal trampoline, the interrupted frame shows as a leaf.
fn node_above<N: Nodes>(
    nodes: &mut N,
    frames: &mut impl Frames,
    outer: &[(PcId, Option<N::Node>)],
    pc: PcId,
) -> N::Node {
    let root = nodes.root();
    let node_of = |level: Option<&(PcId, Option<N::Node>)>| level.and_then(|l| l.1).unwrap_or(root);
    match outer.split_last() {
        Some((&(interrupted, _), further)) if frames.is_trampoline(pc) => {
            let frame = frames.frame(interrupted, true);
            step(nodes, node_of(further.last()), frame)
        }
        _ => node_of(outer.last()),
    }
}
