//! What connection tracking shows: its counters, and a connection as
//! `conntrack -L` prints it.

/// A worker's connection tracking counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtStats {
    /// Entries now.
    pub entries: u64,
    /// Connections entered.
    pub created: u64,
    /// Entries gone by their timeout.
    pub expired: u64,
    /// Unassured entries dropped to make room.
    pub early_drop: u64,
    /// New connections with no room (their packets dropped).
    pub insert_failed: u64,
    /// Packets found invalid.
    pub invalid: u64,
    /// Entries now by protocol ([`PROTOS`]).
    pub by_proto: [u64; 4],
    /// Entries now held by refused flows (dropped as new, their decision
    /// kept a while: not connections, not in `entries`).
    pub refused: u64,
}

impl CtStats {
    /// The names of [`CtStats::values`], as statistics print them.
    pub const NAMES: [&'static str; 11] = [
        "entries",
        "created",
        "expired",
        "early_drop",
        "insert_failed",
        "invalid",
        "entries_tcp",
        "entries_udp",
        "entries_icmp",
        "entries_other",
        "refused",
    ];

    /// The counters in [`CtStats::NAMES`]'s order.
    pub fn values(&self) -> [u64; 11] {
        let p = self.by_proto;
        [
            self.entries,
            self.created,
            self.expired,
            self.early_drop,
            self.insert_failed,
            self.invalid,
            p[0],
            p[1],
            p[2],
            p[3],
            self.refused,
        ]
    }

    /// Counters from [`CtStats::values`].
    pub fn from_values(v: [u64; 11]) -> CtStats {
        CtStats {
            entries: v[0],
            created: v[1],
            expired: v[2],
            early_drop: v[3],
            insert_failed: v[4],
            invalid: v[5],
            by_proto: [v[6], v[7], v[8], v[9]],
            refused: v[10],
        }
    }
}

/// A connection as `forwarder conntrack list` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtView {
    /// `tcp`, `udp`, `icmp`, `icmpv6` or the protocol's number.
    pub proto: String,
    /// The protocol's number.
    pub protonum: u8,
    /// Seconds left.
    pub timeout: u64,
    /// TCP's state (empty for others).
    pub state: String,
    /// The original direction: source, destination and ports (`type`,
    /// `code` and `id` for ICMP), as `conntrack -L` writes them.
    pub original: String,
    /// The reply direction.
    pub reply: String,
    /// `[UNREPLIED]`, `[ASSURED]` or nothing.
    pub status: String,
    /// Packets and bytes each way (original, reply), when counted.
    pub counters: Option<[u64; 4]>,
    /// The VRF's index.
    pub vrf: u8,
    /// The worker that holds it.
    pub worker: usize,
}

impl CtView {
    /// As JSON, the fields by their names.
    pub fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "proto": self.proto,
            "protonum": self.protonum,
            "timeout": self.timeout,
            "state": self.state,
            "original": self.original,
            "reply": self.reply,
            "status": self.status,
            "vrf": self.vrf,
            "worker": self.worker,
            "line": self.line(),
        });
        if let Some(c) = self.counters {
            v["packets"] = serde_json::json!([c[0], c[2]]);
            v["bytes"] = serde_json::json!([c[1], c[3]]);
        }
        v
    }

    /// The line `conntrack -L` would print.
    pub fn line(&self) -> String {
        let mut s = format!("{:<8} {:<2} {} ", self.proto, self.protonum, self.timeout);
        if !self.state.is_empty() {
            s += &format!("{} ", self.state);
        }
        s += &self.original;
        if let Some(c) = self.counters {
            s += &format!(" packets={} bytes={}", c[0], c[1]);
        }
        if self.status == "[UNREPLIED]" {
            s += " [UNREPLIED]";
        }
        s += " ";
        s += &self.reply;
        if let Some(c) = self.counters {
            s += &format!(" packets={} bytes={}", c[2], c[3]);
        }
        if self.status == "[ASSURED]" {
            s += " [ASSURED]";
        }
        if self.vrf != 0 {
            s += &format!(" zone={}", self.vrf);
        }
        s
    }
}
