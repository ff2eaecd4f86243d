//! Descriptors of types and data objects in the manual's style, the layouts
//! of aggregate types, and the member path from a variable's start to an
//! offset in it.

use debugger::symbols::{AggregateKind, TypeRef, TypeShape};
use std::collections::HashMap;
use std::sync::Arc;

/// Deepest type chain followed (typedefs, qualifiers, pointers, arrays,
/// nested members): DWARF can be malformed into a loop.
const MAX_DEPTH: usize = 32;

/// The descriptor of a type: `int`, `unsigned_int`, `pointer+char`,
/// `structure:record`, `array:int[64][64]`. An aggregate or enumeration
/// is named by its tag, or when it has none by the typedef naming it; any
/// other typedef by its own name (`size_t`).
pub(crate) fn type_descriptor(ty: &TypeRef) -> String {
    describe(ty, None, 0)
}

fn describe(ty: &TypeRef, typedef: Option<&str>, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "?".into();
    }
    match ty.shape() {
        TypeShape::Void => "void".into(),
        TypeShape::Base(name) => name.replace(' ', "_"),
        TypeShape::Enumeration(tag) => format!("enumeration:{}", tag_or(tag, typedef)),
        TypeShape::Pointer(to) => format!("pointer+{}", describe(&to, None, depth + 1)),
        TypeShape::Qualified(word, inner) => {
            format!("{word}+{}", describe(&inner, None, depth + 1))
        }
        TypeShape::Typedef(name, inner) if names_by_kind(&inner) => {
            describe(&inner, Some(&name), depth + 1)
        }
        TypeShape::Typedef(name, _) => name,
        TypeShape::Aggregate(kind, tag) => format!("{}:{}", kind_word(kind), tag_or(tag, typedef)),
        TypeShape::Array(..) => array_descriptor(ty, depth),
        TypeShape::Function => "function".into(),
    }
}

/// Whether a typedef of this type is shown as the type's kind and a name
/// (`structure:foo_t`) rather than as the typedef's name alone.
fn names_by_kind(ty: &TypeRef) -> bool {
    matches!(
        ty.shape(),
        TypeShape::Aggregate(..) | TypeShape::Enumeration(_) | TypeShape::Array(..)
    )
}

fn tag_or(tag: Option<String>, typedef: Option<&str>) -> String {
    tag.or_else(|| typedef.map(str::to_string))
        .unwrap_or_else(|| "-".into())
}

fn kind_word(kind: AggregateKind) -> &'static str {
    match kind {
        AggregateKind::Structure => "structure",
        AggregateKind::Union => "union",
        AggregateKind::Class => "class",
    }
}

/// `array:ELEMENT[N][M]`: the dimensions of nested arrays (through
/// typedefs of arrays) after the innermost element's descriptor.
fn array_descriptor(ty: &TypeRef, depth: usize) -> String {
    let mut dims = String::new();
    let mut element = ty.clone();
    for _ in 0..MAX_DEPTH {
        match see_through_typedefs(&element).shape() {
            TypeShape::Array(inner, count) => {
                dims.push_str(&format!("[{count}]"));
                element = inner;
            }
            _ => break,
        }
    }
    format!("array:{}{dims}", describe(&element, None, depth + 1))
}

fn see_through_typedefs(ty: &TypeRef) -> TypeRef {
    let mut ty = ty.clone();
    for _ in 0..MAX_DEPTH {
        match ty.shape() {
            TypeShape::Typedef(_, inner) => ty = inner,
            _ => break,
        }
    }
    ty
}

/// The type with typedefs and qualifiers removed.
pub(crate) fn stripped(ty: &TypeRef) -> TypeRef {
    let mut ty = ty.clone();
    for _ in 0..MAX_DEPTH {
        match ty.shape() {
            TypeShape::Typedef(_, inner) | TypeShape::Qualified(_, inner) => ty = inner,
            _ => break,
        }
    }
    ty
}

/// Whether a variable of this type is a scalar (not an aggregate or array).
pub(crate) fn is_scalar(ty: &TypeRef) -> bool {
    !matches!(
        stripped(ty).shape(),
        TypeShape::Aggregate(..) | TypeShape::Array(..)
    )
}

/// `{TYPE NAME}`; an unnamed object is `-`.
pub(crate) fn object_descriptor(type_descriptor: &str, name: Option<&str>) -> String {
    format!("{{{type_descriptor} {}}}", name.unwrap_or("-"))
}

/// What `(Anon)` stands for: bytes of an aggregate no member covers.
pub(crate) const PADDING: &str = "(Anon)";

/// One member of an aggregate type's layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberLayout {
    /// `{int count}`; a bitfield `{unsigned_int flag:3}`.
    pub(crate) descriptor: Arc<str>,
    pub(crate) offset: u64,
    pub(crate) size: Option<u64>,
    pub(crate) bitfield: bool,
}

/// An aggregate type: its descriptor, size and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    /// `structure:record`.
    pub(crate) name: String,
    pub(crate) size: Option<u64>,
    pub(crate) members: Vec<MemberLayout>,
}

/// A layout with the members' types, to go on into them.
struct KnownLayout {
    ty: TypeRef,
    layout: Layout,
    member_types: Vec<TypeRef>,
}

/// The layouts of the aggregate types met so far, each made once. Two
/// types of one name (a `struct node` of two files) are one layout when
/// they are laid out alike, else two.
#[derive(Default)]
pub(crate) struct Layouts {
    known: Vec<KnownLayout>,
    by_name: HashMap<String, Vec<usize>>,
    /// What to do at each type met (few: searched in order).
    steps: Vec<(TypeRef, TypeStep)>,
}

impl Layouts {
    pub(crate) fn get(&self, id: usize) -> Option<&Layout> {
        self.known.get(id).map(|k| &k.layout)
    }

    /// The id of the layout of aggregate type `ty` (typedefs and
    /// qualifiers already removed), `name` its descriptor.
    fn id_of(&mut self, ty: &TypeRef, name: &str) -> usize {
        let same_name = self.by_name.get(name).cloned().unwrap_or_default();
        if let Some(&id) = same_name.iter().find(|&&id| self.known[id].ty == *ty) {
            return id;
        }
        let (layout, member_types) = layout_of(ty, name);
        let alike = same_name
            .iter()
            .find(|&&id| self.known[id].layout == layout)
            .copied();
        let id = self.known.len();
        self.known.push(KnownLayout {
            ty: ty.clone(),
            layout: match alike {
                Some(other) => self.known[other].layout.clone(),
                None => layout,
            },
            member_types,
        });
        self.by_name.entry(name.to_string()).or_default().push(id);
        id
    }
}

fn layout_of(ty: &TypeRef, name: &str) -> (Layout, Vec<TypeRef>) {
    let mut members = Vec::new();
    let mut member_types = Vec::new();
    for field in ty.fields() {
        let mut descriptor = type_descriptor(&field.ty);
        if let Some((_, bits)) = field.bits {
            descriptor = format!(
                "{descriptor} {}:{bits}",
                field.name.as_deref().unwrap_or("-")
            );
            descriptor = format!("{{{descriptor}}}");
        } else {
            descriptor = object_descriptor(&descriptor, field.name.as_deref());
        }
        members.push(MemberLayout {
            descriptor: descriptor.into(),
            offset: field.offset,
            size: field.size,
            bitfield: field.bits.is_some(),
        });
        member_types.push(field.ty);
    }
    let layout = Layout {
        name: name.to_string(),
        size: ty.size(),
        members,
    };
    (layout, member_types)
}

/// One step of a data object's path: a descriptor and the object's size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step {
    pub descriptor: Arc<str>,
    pub size: Option<u64>,
}

/// Where an address fell in one aggregate: the layout, and the member, or
/// when the address is in padding (`member` None) where in the aggregate
/// (0 for a member, so that events on one member are alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct MemberHit {
    pub(crate) layout: usize,
    pub(crate) member: Option<usize>,
    pub(crate) offset: u64,
}

/// What [`place`] does at a type, worked out once per type.
#[derive(Clone)]
enum TypeStep {
    /// An aggregate: go on into the member at the offset.
    Aggregate(usize),
    /// An array of aggregates (or of arrays): go on into the element at
    /// the offset modulo the element's size.
    Array(TypeRef, u64),
    /// A scalar, or an array of scalars: the path ends here.
    Leaf,
}

impl Layouts {
    fn step_of(&mut self, ty: &TypeRef) -> TypeStep {
        if let Some((_, step)) = self.steps.iter().find(|(known, _)| known == ty) {
            return step.clone();
        }
        let bare = stripped(ty);
        let step = match bare.shape() {
            TypeShape::Aggregate(..) => {
                TypeStep::Aggregate(self.id_of(&bare, &type_descriptor(ty)))
            }
            TypeShape::Array(element, _) => {
                let holds_members = matches!(
                    stripped(&element).shape(),
                    TypeShape::Aggregate(..) | TypeShape::Array(..)
                );
                match element.size().filter(|&s| s > 0 && holds_members) {
                    Some(size) => TypeStep::Array(element, size),
                    None => TypeStep::Leaf,
                }
            }
            _ => TypeStep::Leaf,
        };
        self.steps.push((ty.clone(), step.clone()));
        step
    }
}

/// The member path from the start of an object of type `ty` to `offset`
/// in it: the member of each aggregate on the way (through array
/// elements, which are not steps of their own), down to a scalar, an
/// array of scalars, or padding. Appends the steps and the aggregates hit.
pub(crate) fn place(
    ty: &TypeRef,
    offset: u64,
    layouts: &mut Layouts,
    steps: &mut Vec<Step>,
    hits: &mut Vec<MemberHit>,
) {
    let mut current = ty.clone();
    let mut offset = offset;
    for _ in 0..MAX_DEPTH {
        match layouts.step_of(&current) {
            TypeStep::Aggregate(id) => {
                let known = &layouts.known[id];
                let member = member_at(&known.layout, offset);
                hits.push(MemberHit {
                    layout: id,
                    member,
                    offset: if member.is_some() { 0 } else { offset },
                });
                let Some(index) = member else {
                    steps.push(Step {
                        descriptor: Arc::from(PADDING),
                        size: None,
                    });
                    return;
                };
                let chosen = &known.layout.members[index];
                steps.push(Step {
                    descriptor: chosen.descriptor.clone(),
                    size: chosen.size,
                });
                if chosen.bitfield {
                    return;
                }
                offset -= chosen.offset;
                current = known.member_types[index].clone();
            }
            TypeStep::Array(element, size) => {
                offset %= size;
                current = element;
            }
            TypeStep::Leaf => return,
        }
    }
}

/// The member covering `offset` (the first declared, for a union).
fn member_at(layout: &Layout, offset: u64) -> Option<usize> {
    layout.members.iter().position(|m| {
        let size = m.size.unwrap_or(0).max(1);
        m.offset <= offset && offset < m.offset.saturating_add(size)
    })
}
