//! Placeholder: the collector library arrives with the collector issue.

pub mod unwind;
