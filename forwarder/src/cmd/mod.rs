//! The `forwarder` subcommands: [`run`] forwards, [`lookup`] classifies
//! keys from files against a set file, [`client`] asks a running
//! forwarder to `reload` or for its `stats`.

pub mod client;
pub mod lookup;
pub mod run;
