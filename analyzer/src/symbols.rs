//! PC → function, from the load-object map an experiment recorded
//! (`object` log lines) and each object's ELF symbol table.
//!
//! Objects are read from their recorded path; a missing or unreadable
//! file leaves its PCs as `<unknown>` in that object (never guessed).

use object::{Object, ObjectSymbol, SymbolKind};
use std::path::{Path, PathBuf};

/// One function symbol: [start, end) relative to the object's link-time
/// addresses.
#[derive(Debug, Clone)]
struct Function {
    start: u64,
    end: u64,
    name: String,
}

#[derive(Debug, Clone)]
struct MappedObject {
    path: PathBuf,
    base: u64,
    lo: u64,
    hi: u64,
    functions: Vec<Function>,
}

/// Where a PC falls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location<'a> {
    pub object: &'a Path,
    /// The function's name, None when the object has no symbol there.
    pub function: Option<&'a str>,
    /// The PC relative to the object's link-time addresses.
    pub offset: u64,
}

#[derive(Debug, Default, Clone)]
pub struct Symbolizer {
    objects: Vec<MappedObject>,
}

impl Symbolizer {
    /// Builds from (path, load bias, lowest, highest address) of each
    /// object, as in the experiment's `object` lines.
    pub fn new<'p>(objects: impl IntoIterator<Item = (&'p Path, u64, u64, u64)>) -> Symbolizer {
        let mut mapped: Vec<MappedObject> = objects
            .into_iter()
            .map(|(path, base, lo, hi)| MappedObject {
                path: path.to_path_buf(),
                base,
                lo,
                hi,
                functions: read_functions(path),
            })
            .collect();
        mapped.sort_by_key(|o| o.lo);
        Symbolizer { objects: mapped }
    }

    /// The object and function containing `pc`.
    pub fn locate(&self, pc: u64) -> Option<Location<'_>> {
        let object = self.objects.iter().find(|o| o.lo <= pc && pc < o.hi)?;
        let offset = pc.wrapping_sub(object.base);
        let index = object.functions.partition_point(|f| f.start <= offset);
        let function = index
            .checked_sub(1)
            .and_then(|i| object.functions.get(i))
            .filter(|f| offset < f.end)
            .map(|f| f.name.as_str());
        Some(Location {
            object: &object.path,
            function,
            offset,
        })
    }

    /// The function name of `pc`, or None.
    pub fn function(&self, pc: u64) -> Option<&str> {
        self.locate(pc)?.function
    }
}

fn read_functions(path: &Path) -> Vec<Function> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    let mut functions: Vec<Function> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            Some(Function {
                start: s.address(),
                end: s.address() + s.size().max(1),
                name: demangle(name),
            })
        })
        .collect();
    // Prefer sized, global names when several symbols share an address.
    functions.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    functions.dedup_by_key(|f| f.start);
    functions
}

fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(symbol) = cpp_demangle::Symbol::new(name) {
            if let Ok(text) = symbol.demangle(&cpp_demangle::DemangleOptions::default()) {
                return text;
            }
        }
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_functions_of_this_test_binary() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        // Find our own mapping in /proc/self/maps to get base/lo/hi.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let mut lo = u64::MAX;
        let mut hi = 0;
        let mut base = None;
        for line in maps.lines().filter(|l| l.ends_with(exe.to_str().unwrap())) {
            let mut fields = line.split_whitespace();
            let range = fields.next().unwrap();
            let offset = u64::from_str_radix(fields.nth(1).unwrap(), 16).unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let (a, b) = (
                u64::from_str_radix(a, 16).unwrap(),
                u64::from_str_radix(b, 16).unwrap(),
            );
            if offset == 0 {
                base = Some(a);
            }
            lo = lo.min(a);
            hi = hi.max(b);
        }
        let symbolizer = Symbolizer::new([(exe.as_path(), base.unwrap(), lo, hi)]);
        let pc = locates_functions_of_this_test_binary as *const () as usize as u64;
        let name = symbolizer.function(pc).unwrap();
        assert!(
            name.contains("locates_functions_of_this_test_binary"),
            "{name}"
        );
        assert!(symbolizer.function(1).is_none());
    }
}
