//! Placeholder: the experiment format arrives with the collector issue.
