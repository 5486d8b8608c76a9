use super::*;

#[test]
fn durations_as_nft_writes_them() {
    for (text, ms) in [
        ("30s", 30_000),
        ("10m", 600_000),
        ("1h30m", 5_400_000),
        ("2d", 172_800_000),
        ("500ms", 500),
        ("1m2s3ms", 62_003),
    ] {
        assert_eq!(parse_duration(text), Ok(ms), "{text}");
        assert_eq!(format_duration(ms), text);
    }
    for bad in [
        "",
        "10",
        "s",
        "10x",
        "1s1m",
        "0s",
        "5m5m",
        "-1s",
        "99999999999999d",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn timeouts_on_sets_and_elements() {
    let d = SetDecl::parse("type ipv4_addr . inet_service; flags interval, timeout; timeout 10m")
        .unwrap();
    assert!(d.has_timeouts());
    assert_eq!(d.default_timeout(), Some(600_000));
    assert_eq!(
        d.to_string(),
        "type ipv4_addr . inet_service; flags timeout; timeout 10m"
    );
    assert_eq!(SetDecl::parse(&d.to_string()).unwrap(), d);
    // A set timeout implies the flag.
    assert!(SetDecl::parse("ipv4_addr; timeout 30s")
        .unwrap()
        .has_timeouts());
    let err = SetDecl::parse("ipv4_addr; flags priority, timeout").unwrap_err();
    assert!(err.contains("priority"), "{err}");
    assert!(SetDecl::parse("ipv4_addr; timeout soon").is_err());

    let e = d.parse_element("192.0.2.7 . 22 timeout 30s").unwrap();
    assert_eq!(e.timeout, Some(30_000));
    assert_eq!(e.expires, None);
    assert_eq!(d.format_element(&e), "192.0.2.7 . 22 timeout 30s");
    let listed = Element {
        expires: Some(1_000_000 + 12_500),
        ..e.clone()
    };
    assert_eq!(
        d.format_element_at(&listed, Some(1_000_000)),
        "192.0.2.7 . 22 timeout 30s expires 12s500ms"
    );
    let m = SetDecl::parse("ipv4_addr : verdict; flags timeout").unwrap();
    let e = m.parse_element("192.0.2.7 timeout 1h : drop").unwrap();
    assert_eq!(
        (e.timeout, &e.data),
        (Some(3_600_000), &Some(Data::Verdict(Verdict::Drop)))
    );
    assert!(d
        .parse_element("192.0.2.7 . 22 timeout 30s expires 10s")
        .is_err());
    let plain = SetDecl::parse("ipv4_addr . inet_service").unwrap();
    let err = plain
        .parse_element("192.0.2.7 . 22 timeout 30s")
        .unwrap_err();
    assert!(err.to_string().contains("flags timeout"), "{err}");
}

#[test]
fn declarations() {
    let d = SetDecl::parse("type ipv4_addr . inet_service : verdict").unwrap();
    assert_eq!(d.fields(), &[FieldType::Ipv4Addr, FieldType::InetService]);
    assert_eq!(d.data(), Some(DataType::Verdict));
    assert_eq!(d.to_string(), "type ipv4_addr . inet_service : verdict");
    let d = SetDecl::parse("type ipv6_addr").unwrap();
    assert_eq!(d.fields().len(), 1);
    assert!(SetDecl::parse("type ipv5_addr")
        .unwrap_err()
        .contains("`ipv5_addr`"));
    let many = vec!["mark"; 17].join(" . ");
    assert!(SetDecl::parse(&format!("type {many}")).is_err());
    let d = SetDecl::parse("type inet_proto : ether_addr").unwrap();
    assert_eq!(d.data(), Some(DataType::Value(FieldType::EtherAddr)));
}

#[test]
fn elements_round_trip_canonically() {
    let d = SetDecl::parse("type ipv4_addr . inet_service : verdict").unwrap();
    let e = d.parse_element("192.0.2.0/24 . 1000-2000 : drop,").unwrap();
    assert_eq!(d.format_element(&e), "192.0.2.0/24 . 1000-2000 : drop");
    let e = d
        .parse_element("192.0.2.0 - 192.0.2.127 . http : jump web")
        .unwrap();
    assert_eq!(d.format_element(&e), "192.0.2.0/25 . 80 : jump web");
    let d = SetDecl::parse("type ipv6_addr . inet_service . ether_addr . inet_proto").unwrap();
    let e = d
        .parse_element("2001:db8::/48 . 53 . 00:01:02:03:04:05 . udp")
        .unwrap();
    assert_eq!(
        d.format_element(&e),
        "2001:db8::/48 . 53 . 00:01:02:03:04:05 . 17"
    );
}

#[test]
fn element_errors_name_the_text() {
    let d = SetDecl::parse("type ipv4_addr . inet_service").unwrap();
    let e = d.parse_element("192.0.2.1").unwrap_err().to_string();
    assert!(e.contains("has 1 field, the set's type has 2"), "{e}");
    let e = d.parse_element("192.0.2.1 . 9-3").unwrap_err().to_string();
    assert!(e.contains("`9-3`") && e.contains("greater"), "{e}");
    let e = d
        .parse_element("192.0.2.1 . 80 : drop")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a map"), "{e}");
    let m = SetDecl::parse("type ipv4_addr : verdict").unwrap();
    let e = m.parse_element("192.0.2.1 : dorp").unwrap_err().to_string();
    assert!(e.starts_with("invalid: ") && e.contains("dorp"), "{e}");
    let e = m.parse_element("192.0.2.1").unwrap_err().to_string();
    assert!(e.contains("needs"), "{e}");
}

#[test]
fn keys() {
    let d = SetDecl::parse("type ipv4_addr . inet_service").unwrap();
    let k = d.parse_key("192.0.2.7 . 1500").unwrap();
    assert_eq!(k, vec![192, 0, 2, 7, 0x05, 0xdc]);
    assert_eq!(d.format_key(&k), "192.0.2.7 . 1500");
    assert!(d.parse_key("192.0.2.7").is_err());
    assert!(d.parse_key("192.0.2.0/24 . 1").is_err());
}
