//! Demangling of Rust and C++ linkage names.

/// The demangled form of a linkage name: Rust without the hash, C++ with
/// its parameter list; anything else unchanged.
pub fn demangle(linkage: &str) -> String {
    if linkage.starts_with("_R") || linkage.starts_with("_ZN") {
        if let Ok(d) = rustc_demangle::try_demangle(linkage) {
            let text = format!("{d:#}");
            // A C++ name starting with _ZN also "demangles" as legacy Rust;
            // only take it when the symbol really carried a Rust hash or v0.
            if linkage.starts_with("_R") || looks_like_rust_legacy(linkage) {
                return text;
            }
        }
    }
    if linkage.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(linkage) {
            if let Ok(text) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return text;
            }
        }
    }
    linkage.to_string()
}

/// Legacy Rust mangling ends in a `17h<16 hex digits>E` hash segment.
fn looks_like_rust_legacy(linkage: &str) -> bool {
    let Some(body) = linkage.strip_suffix('E') else {
        return false;
    };
    body.len() > 19
        && body[body.len() - 19..].starts_with("17h")
        && body[body.len() - 16..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
}

/// A C++ demangled name without its parameter list and qualifiers:
/// `ns::f(int) const` -> `ns::f`. Names without parentheses are returned
/// unchanged.
pub fn without_parameters(name: &str) -> &str {
    if !name.ends_with(')') && !name.ends_with(" const") {
        return name;
    }
    // Find the '(' that opens the outermost parameter list (the last
    // top-level one), skipping template arguments.
    let mut depth = 0i32;
    let mut open = None;
    for (i, c) in name.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            '(' if depth == 0 && open.is_none() => open = Some(i),
            _ => {}
        }
    }
    match open {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_rust_and_cpp() {
        assert_eq!(demangle("_ZN4rdbx4main17h0123456789abcdefE"), "rdbx::main");
        assert_eq!(demangle("_ZN2ns1fEi"), "ns::f(int)");
        assert_eq!(demangle("main"), "main");
        assert_eq!(without_parameters("ns::f(int)"), "ns::f");
        assert_eq!(without_parameters("ns::S::g() const"), "ns::S::g");
        assert_eq!(without_parameters("rdbx::main"), "rdbx::main");
    }
}
