//! A type's structure one step at a time, for tools that walk types
//! themselves: the analyzer names data objects and lays out aggregates
//! from it ("Data Objects" of the Performance Analyzer manual).

use super::{child_ref, member_offset, Layer, TypeKind, TypeRef};

/// What a type is, one step down.
#[derive(Debug, Clone)]
pub enum TypeShape {
    Void,
    /// A base type (`int`, `unsigned char`, `double`), by its DWARF name.
    Base(String),
    /// An enumeration, by its tag when it has one.
    Enumeration(Option<String>),
    /// A pointer or C++ reference to this type.
    Pointer(TypeRef),
    /// `const`, `volatile`, `restrict` or `_Atomic` of this type.
    Qualified(&'static str, TypeRef),
    /// A typedef: its name and the type it names.
    Typedef(String, TypeRef),
    /// A structure, union or class, by its tag when it has one.
    Aggregate(AggregateKind, Option<String>),
    /// An array: the element (an `int [3]` for an `int [2][3]`) and the
    /// outermost dimension.
    Array(TypeRef, u64),
    Function,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggregateKind {
    Structure,
    Union,
    Class,
}

/// A data member of an aggregate, or one of its base classes (unnamed).
#[derive(Debug, Clone)]
pub struct Field {
    /// None for an anonymous member or a base class.
    pub name: Option<String>,
    /// Bytes from the aggregate's start (of a bitfield: to the byte
    /// holding its first bit).
    pub offset: u64,
    /// The bytes it occupies from `offset` (of a bitfield: the bytes its
    /// bits touch), when known.
    pub size: Option<u64>,
    pub ty: TypeRef,
    /// A bitfield's first bit (from the aggregate's first bit, the least
    /// significant bit of its first byte) and width.
    pub bits: Option<(u64, u64)>,
}

impl TypeRef {
    /// This type one step down (a typedef is not seen through).
    pub fn shape(&self) -> TypeShape {
        match self.outer_layer() {
            Some(Layer::Pointer) => return TypeShape::Pointer(self.without_outer_layer()),
            Some(Layer::Array(count)) => {
                return TypeShape::Array(self.without_outer_layer(), count)
            }
            None => {}
        }
        let Some(at) = self.offset else {
            return TypeShape::Void;
        };
        let Some(entry) = self.units.entry(at) else {
            return TypeShape::Void;
        };
        let inner = || self.at(self.with(|t| t.type_of(at, &entry)));
        let name = self.with(|t| t.name_of(at, &entry));
        match entry.tag() {
            gimli::DW_TAG_typedef => TypeShape::Typedef(name.unwrap_or_default(), inner()),
            gimli::DW_TAG_const_type => TypeShape::Qualified("const", inner()),
            gimli::DW_TAG_volatile_type => TypeShape::Qualified("volatile", inner()),
            gimli::DW_TAG_restrict_type => TypeShape::Qualified("restrict", inner()),
            gimli::DW_TAG_atomic_type => TypeShape::Qualified("atomic", inner()),
            gimli::DW_TAG_pointer_type
            | gimli::DW_TAG_reference_type
            | gimli::DW_TAG_rvalue_reference_type => TypeShape::Pointer(inner()),
            gimli::DW_TAG_structure_type => TypeShape::Aggregate(AggregateKind::Structure, name),
            gimli::DW_TAG_union_type => TypeShape::Aggregate(AggregateKind::Union, name),
            gimli::DW_TAG_class_type => TypeShape::Aggregate(AggregateKind::Class, name),
            gimli::DW_TAG_array_type => match self.element() {
                Some((element, count)) => TypeShape::Array(element, count),
                None => TypeShape::Array(inner(), 0),
            },
            gimli::DW_TAG_enumeration_type => TypeShape::Enumeration(name),
            gimli::DW_TAG_subroutine_type | gimli::DW_TAG_subprogram => TypeShape::Function,
            gimli::DW_TAG_unspecified_type if name.is_none() => TypeShape::Void,
            _ => TypeShape::Base(name.unwrap_or_else(|| "?".into())),
        }
    }

    /// The data members of a structure, union or class (typedefs and
    /// qualifiers seen through), in declaration order; base classes are
    /// unnamed fields. Static members, which are not in the object, are
    /// left out. Empty for any other type.
    pub fn fields(&self) -> Vec<Field> {
        let mut fields = Vec::new();
        if self.kind() != TypeKind::Struct {
            return fields;
        }
        let Some((parent, _)) = self.stripped_tag() else {
            return fields;
        };
        let Some(unit) = self.units.unit_of(parent) else {
            return fields;
        };
        let Ok(mut tree) = unit.entries_tree(Some(parent.offset)) else {
            return fields;
        };
        let Ok(root) = tree.root() else {
            return fields;
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            let is_base = e.tag() == gimli::DW_TAG_inheritance;
            let declared_only = matches!(
                e.attr_value(gimli::DW_AT_declaration),
                Ok(Some(gimli::AttributeValue::Flag(true)))
            );
            if !(is_base || e.tag() == gimli::DW_TAG_member) || declared_only {
                continue;
            }
            let at = child_ref(parent, e);
            let ty = self.at(self.with(|t| t.type_of(at, e)));
            let bitfield = self.with(|t| t.bitfield_position(at, e));
            let (offset, size) = match bitfield.and_then(|b| b.byte_range()) {
                Some(bytes) => (bytes.start as u64, Some(bytes.len() as u64)),
                None => (member_offset(e).unwrap_or(0), ty.size()),
            };
            fields.push(Field {
                name: (!is_base)
                    .then(|| self.with(|t| t.name_of(at, e)))
                    .flatten(),
                offset,
                size,
                ty,
                bits: bitfield.map(|b| (b.first, b.bits)),
            });
        }
        fields
    }
}
