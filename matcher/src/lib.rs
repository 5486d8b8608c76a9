//! Sets of concatenated ranges, matched with the pipapo algorithm of the
//! Linux kernel's `nft_set_pipapo` ("PIle PAcket POlicies").
//!
//! # Theory of operation
//!
//! An element of a set is a *concatenation* of fields, each a single value,
//! a prefix or an arbitrary range: `192.0.2.0/24 . 1000-2000 : drop`. A key
//! (one value per field) matches an element when every field's value lies in
//! that field's range. In nft's sets elements never overlap: a key matches
//! at most one. A first-match set (`flags priority`, [`Policy::FirstMatch`])
//! takes overlapping elements, and a key matches the first in rank order,
//! as in an ACL; it is looked up with the decision tree of the `cuts`
//! module only.
//!
//! ## Rules
//!
//! A range over `b` bits is a union of at most `2·b` prefixes: `0-5` over
//! 4 bits is `0000/2` (0-3) and `0100/3` (4-5). Each prefix of a field
//! becomes one *rule* of that field; an element owns one contiguous run of
//! rules in every field.
//!
//! ## Lookup tables
//!
//! A field is cut into groups of `t` bits (8, or 4 for large tables). For
//! every group there is one *bucket* per possible group value, and a bucket
//! is a bitmap over the field's rules: bit `r` is set when rule `r` accepts
//! that group value. A prefix accepts one value in the groups it fixes
//! completely, a block of values in the group its length ends in, and every
//! value in the groups after it.
//!
//! ## Mapping tables
//!
//! Every rule of a field maps to the run of rules its element owns in the
//! next field (first rule, count); rules of the last field map to the
//! element.
//!
//! ## A worked example
//!
//! Take `type inet_service . inet_proto` with 4-bit groups (four groups for
//! the port, two for the protocol) and two elements:
//!
//! ```text
//! A: 0-5 . 6        port rules: r0 = 0000 0000 0000 00**  (0-3)
//!                               r1 = 0000 0000 0000 010*  (4-5)
//! B: 80 . 17                    r2 = 0000 0000 0101 0000  (80)
//!
//! port table          group 0    group 1    group 2         group 3
//!   bucket 0          r0 r1 r2   r0 r1 r2   r0 r1           r0 r2
//!   bucket 1                                                r0
//!   bucket 2                                                r0
//!   bucket 3                                                r0
//!   bucket 4                                                r1
//!   bucket 5                                     r2         r1
//! port mapping        r0 -> proto rules 0..1, r1 -> 0..1, r2 -> 1..2
//!
//! proto rules: q0 = 0000 0110 (6, A), q1 = 0001 0001 (17, B)
//! proto table         group 0: bucket 0: q0, bucket 1: q1
//!                     group 1: bucket 6: q0, bucket 1: q1
//! proto mapping       q0 -> A, q1 -> B
//! ```
//!
//! Looking up `4 . 6`: the port's groups are 0, 0, 0, 4; ANDing buckets
//! 0, 0, 0 and 4 of groups 0 to 3 leaves `{r1}`. Refilling from r1's
//! mapping sets proto rules 0..1: `{q0}`. The protocol's groups are 0 and
//! 6; ANDing `{q0}` with bucket 0 of group 0 and bucket 6 of group 1 leaves
//! `{q0}`, which maps to A. Looking up `80 . 6` leaves `{r2}`, refills
//! `{q1}`, and bucket 0 of the protocol's group 0 (`{q0}`) clears it: no
//! match.
//!
//! ## Shortcuts at commit
//!
//! A committed snapshot also picks a *lead*: the field whose buckets alone
//! leave the fewest candidates, so a single key ANDs that field only and
//! checks its few candidates' other ranges directly; and, where a field of
//! 1, 2 or 4 bytes has ranges that overlap little, an *interval tree* over
//! that field's range boundaries, which bursts descend all keys at once
//! (one vector compare per tree level) to the one candidate each key can
//! match. Both give the answers of the full walk above, which stays the
//! fallback; the differential tests hold all of them to a linear scan.
//!
//! Sets that get no interval tree (fields repeating across elements:
//! hosts x services) are looked up in a decision tree of cuts instead
//! (`cuts.rs`: 16-way nodes on one dimension, leaves of up to 32 elements
//! checked in groups of sixteen, two vector compares per dimension),
//! shared by the snapshots
//! that follow until enough has changed.
//!
//! ## Updates
//!
//! Insertion appends the element's rules to each field and its mappings to
//! each mapping table. Deletion cuts the element's runs out of every bucket
//! (`bitmap_cut`), and moves the mappings that pointed past a cut run down.
//! A field whose 8-bit table outgrows 2 MiB switches to 4-bit groups (and
//! back below 2 MiB − 64 KiB); answers do not change.
//!
//! Updates change a private working copy ([`Set`]); readers only ever see
//! a committed, immutable [`Snapshot`], published whole by [`Set::commit`].
//! Inserts are checked against every existing element for exact
//! duplicates and overlaps of any shape, through an interval index whose
//! cost follows the most selective field.
//!
//! ## Modules
//!
//! What a user needs:
//! - [`field`]: field types, values, ranges and prefix expansion;
//! - [`syntax`]: the nft text forms of declarations, elements and keys;
//! - [`mod@file`]: set files, key files and their errors with line numbers;
//! - [`Set`] (the working copy: updates, commits) and [`Snapshot`] (the
//!   committed tables and their lookups);
//! - [`mod@reference`]: a linear scan every fast path is tested against;
//! - [`classbench`]: ClassBench rule sets and traces, as DPDK's
//!   `dpdk-test-acl` reads them; [`selftest`]: the lookups checked
//!   against the reference on this CPU.
//!
//! Inside, each module uses only those listed before it:
//! - `table` (a field's lookup and mapping tables), `tree` (the interval
//!   tree), `index` (the overlap index), `cpu` ([`Impl`], a prefetch);
//! - `lookup`: the bucket-AND walk, generic over its kernel, and the
//!   scalar kernel; `lead`: the lead field and its candidates;
//! - `cuts`: the decision tree of cuts (`build`, `classify`); `elems`:
//!   elements by id, in chunks snapshots share;
//! - `simd`: the AVX2 and AVX-512 kernels beside the scalar ones, and the
//!   choice between them for each lookup;
//! - `snapshot`: a committed snapshot; `set`: the working copy (`tables`,
//!   `commit`), which commits snapshots.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod classbench;
mod cpu;
mod cuts;
mod elems;
mod error;
pub mod field;
pub mod file;
mod index;
mod lead;
mod lookup;
pub mod reference;
pub mod selftest;
mod set;
mod simd;
mod snapshot;
pub mod syntax;
mod table;
mod tree;

pub use cpu::Impl;
pub use error::{excerpt, ErrorKind, SetError};
pub use field::{FieldType, Range};
pub use lookup::Scratch;
pub use set::{InsertMode, Op, Set, SetConfig, QUICK_MAX};
pub use snapshot::{MemoryUsage, Snapshot, DELTA_ID, NEVER};
pub use syntax::{
    format_duration, parse_duration, Data, DataType, Element, Policy, SetDecl, Verdict,
};
pub use table::{Chunk, FieldTable, Mapping};
