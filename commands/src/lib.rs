//! The rdbx command language.
