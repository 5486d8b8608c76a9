//! The forwarder's TOML configuration: schema, parsing, and validation with
//! errors that name file, line, column and value (see DESIGN.md,
//! "Configuration").
//!
//! Nothing is implemented yet: the forwarder issue fills this crate. Set
//! files in nft syntax are already parsed by [`matcher::file`].
#![forbid(unsafe_code)]
