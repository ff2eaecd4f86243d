//! Function names as users type them, matched against the names functions
//! have: `Counter::feed` finds
//! `wordfreq::Counter<alloc::string::String>::feed<alloc::string::String,
//! wordfreq::main::{closure_env#1}>`, as gdb's wild matching does.

/// The `::`-separated components of a qualified name; `::` inside `<>`,
/// `()`, `[]` or `{}` (`<X as ns::Y>`, template arguments) does not split.
pub(crate) fn components(name: &str) -> Vec<&str> {
    let bytes = name.as_bytes();
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                parts.push(&name[start..i]);
                i += 2;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&name[start..]);
    parts
}

/// A component without blanks (`feed<String, K>` and `feed<String,K>` are
/// one name).
fn squeezed(component: &str) -> String {
    component.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A component without its trailing generic arguments or parameter list:
/// `feed<alloc::string::String>` -> `feed`, `f(int)` -> `f`. A component
/// that is all brackets (`<X as Y>`, `{closure#0}`) stays whole.
fn without_arguments(component: &str) -> &str {
    let cut = component
        .char_indices()
        .find(|&(i, c)| i > 0 && (c == '<' || c == '('))
        .map_or(component.len(), |(i, _)| i);
    &component[..cut]
}

fn has_arguments(component: &str) -> bool {
    without_arguments(component).len() != component.len()
}

/// Whether `query` names the function called `name`: its components are the
/// last ones of `name`'s, each the same, or the same but for the generic
/// arguments (or parameters) `name` has and `query` leaves out.
pub fn function_name_matches(query: &str, name: &str) -> bool {
    let query = query.trim();
    if query.is_empty() {
        return false;
    }
    let wanted = components(query.trim_start_matches("::"));
    let have = components(name);
    if wanted.len() > have.len() {
        return false;
    }
    let tail = &have[have.len() - wanted.len()..];
    wanted.iter().zip(tail).all(|(w, h)| {
        let (w, h) = (squeezed(w), squeezed(h));
        w == h || (!has_arguments(&w) && w == without_arguments(&h))
    })
}

/// A name with the generic arguments (and parameters) of each component
/// left out: `ns::Counter<K>::feed<String>` -> `ns::Counter::feed`, for
/// comparing names DWARF spells with arguments and demanglers without.
pub fn without_generic_arguments(name: &str) -> String {
    components(name)
        .into_iter()
        .map(|c| without_arguments(c.trim()))
        .collect::<Vec<_>>()
        .join("::")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEED: &str = "wordfreq::Counter<alloc::string::String>::feed<alloc::string::String, wordfreq::main::{closure_env#1}>";

    #[test]
    fn components_keep_brackets_whole() {
        assert_eq!(
            components("<wordfreq::Builtin as wordfreq::Source>::text"),
            vec!["<wordfreq::Builtin as wordfreq::Source>", "text"]
        );
        assert_eq!(components(FEED).len(), 3);
    }

    #[test]
    fn suffixes_and_generics_match_as_in_gdb() {
        assert!(function_name_matches(FEED, FEED));
        assert!(function_name_matches("Counter::feed", FEED));
        assert!(function_name_matches("feed", FEED));
        assert!(function_name_matches("wordfreq::Counter::feed", FEED));
        assert!(function_name_matches(
            "Counter<alloc::string::String>::feed<alloc::string::String,wordfreq::main::{closure_env#1}>",
            FEED
        ));
        assert!(!function_name_matches("Counter<u8>::feed", FEED));
        assert!(!function_name_matches("ounter::feed", FEED));
        assert!(!function_name_matches("other::Counter::feed", FEED));
        assert!(function_name_matches("main", "main"));
        assert!(!function_name_matches("mai", "main"));
        assert!(function_name_matches("ns::f", "ns::f(int)"));
        assert!(function_name_matches(
            "<wordfreq::Builtin as wordfreq::Source>::text",
            "<wordfreq::Builtin as wordfreq::Source>::text"
        ));
    }
}
