//! Placeholder: the analyzer arrives with the analyzer issue.
