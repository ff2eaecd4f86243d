//! The data objects at fixed addresses of one load object: DWARF's
//! variables with `DW_OP_addr` locations (globals, file statics, static
//! locals), then the sized ELF object symbols DWARF does not describe
//! (an object without debug information), sorted by address.

use super::descriptor::{is_scalar, object_descriptor, type_descriptor};
use debugger::symbols::{ObjectFile, TypeRef};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How many objects before an address are looked at for one that holds
/// it: objects rarely nest (an alias of a different size).
const NESTED_LOOKBACK: usize = 16;

/// A variable at a fixed file address.
pub(crate) struct StaticObject {
    pub(crate) start: u64,
    pub(crate) size: u64,
    /// `{int counter}`; `{untyped environ}` for a symbol without DWARF.
    pub(crate) descriptor: Arc<str>,
    /// None for a symbol without DWARF.
    pub(crate) ty: Option<TypeRef>,
    pub(crate) scalar: bool,
}

/// One load object's fixed-address data objects, by address.
pub(crate) struct StaticTable {
    objects: Vec<StaticObject>,
}

impl StaticTable {
    pub(crate) fn build(file: &ObjectFile) -> StaticTable {
        let symbols = file.data_symbols();
        let sizes: HashMap<u64, u64> = symbols.iter().map(|s| (s.address, s.size)).collect();
        let symbol_size = |address: u64| sizes.get(&address).copied();
        let mut objects: Vec<StaticObject> = Vec::new();
        for (var, start) in file.static_variables() {
            let ty = file.variable_type(&var);
            let size = ty
                .as_ref()
                .and_then(TypeRef::size)
                .filter(|&s| s > 0)
                .or_else(|| symbol_size(start));
            let (Some(ty), Some(size)) = (ty, size) else {
                continue;
            };
            objects.push(StaticObject {
                start,
                size,
                descriptor: object_descriptor(&type_descriptor(&ty), Some(var.name())).into(),
                scalar: is_scalar(&ty),
                ty: Some(ty),
            });
        }
        let described: HashSet<u64> = objects.iter().map(|o| o.start).collect();
        for symbol in symbols {
            if described.contains(&symbol.address) {
                continue;
            }
            objects.push(StaticObject {
                start: symbol.address,
                size: symbol.size,
                descriptor: object_descriptor("untyped", Some(&symbol.name)).into(),
                ty: None,
                scalar: false,
            });
        }
        objects.sort_by_key(|o| (o.start, u64::MAX - o.size));
        // One variable described by several units (a C++ inline variable,
        // an `extern` definition seen twice) is one object.
        objects.dedup_by(|later, first| later.start == first.start && later.size == first.size);
        StaticTable { objects }
    }

    /// The innermost object holding file address `address`.
    pub(crate) fn at(&self, address: u64) -> Option<&StaticObject> {
        let after = self.objects.partition_point(|o| o.start <= address);
        self.objects[..after]
            .iter()
            .rev()
            .take(NESTED_LOOKBACK)
            .find(|o| address - o.start < o.size)
    }
}
