//! Filters, packets in words and hex frames (`trace --packet`, `--hex`,
//! `capture --filter`): no panic on any text, and a packet built from
//! words passes the filter of the same words, on the port it arrives on.
#![no_main]

use forwarder::filter::packet::{build, from_hex};
use forwarder::filter::Filter;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static PORTS: LazyLock<Vec<config::PortConfig>> = LazyLock::new(|| {
    let text = r#"
        [forwarder]
        cores = [0]
        [[port]]
        name = "wan"
        driver = "synthetic"
        mac = "02:00:00:00:01:fe"
        [[port]]
        name = "lan"
        driver = "synthetic"
        mac = "02:00:00:00:02:fe"
    "#;
    config::parse("fuzz.toml", text, std::path::Path::new("."))
        .expect("the fuzz configuration")
        .ports
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let names: Vec<String> = PORTS.iter().map(|p| p.name.clone()).collect();
    let filter = Filter::parse(text, &names);
    if let Ok(f) = &filter {
        // Any bytes as a frame, on any port.
        let _ = f.matches(data, 0);
        let _ = f.matches(data, 7);
    }
    if let Ok(p) = build(text, &PORTS) {
        let f = filter.expect("words that build a packet are a filter");
        assert!(f.matches(&p.frame, p.port), "{text}: {:02x?}", p.frame);
    }
    let _ = from_hex(text);
});
