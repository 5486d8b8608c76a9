//! `forwarder lookup` end to end: files in, canonical elements out,
//! checked against a linear scan; bad lines exit non-zero naming the line.

mod common;

use common::forwarder;
use matcher::reference::LinearSet;
use matcher::selftest::Case;
use std::path::PathBuf;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fwd-lookup-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lookup(args: &[&std::path::Path]) -> (bool, String, String) {
    lookup_with(args, &[])
}

fn lookup_with(args: &[&std::path::Path], extra: &[&str]) -> (bool, String, String) {
    let mut c = forwarder();
    c.arg("lookup")
        .arg("--set")
        .arg(args[0])
        .arg("--keys")
        .arg(args[1]);
    if let Some(d) = args.get(2) {
        c.arg("--delete").arg(d);
    }
    c.args(extra);
    let o = c.output().unwrap();
    (
        o.status.success(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

#[test]
fn selftest_sets_match_a_linear_scan() {
    let dir = tmpdir("selftest");
    for case in Case::ALL {
        let decl = case.decl();
        let elems = case.entries(200);
        let mut set_text = format!("# {}\n{}\n", case.name(), decl);
        for e in &elems {
            set_text.push_str(&decl.format_element(e));
            set_text.push_str(",\n");
        }
        let mut keys_text = String::from("# keys\n\n");
        let mut keys = Vec::new();
        for n in 0..1500u128 {
            let v = case.key_values(n);
            keys_text.push_str(&decl.format_key(&decl.key_from_values(&v)));
            keys_text.push('\n');
            keys.push(v);
        }
        // Delete every third element.
        let mut del_text = String::new();
        let mut kept = Vec::new();
        for (i, e) in elems.iter().enumerate() {
            if i % 3 == 0 {
                del_text.push_str(&decl.format_element(e));
                del_text.push('\n');
            } else {
                kept.push(e.clone());
            }
        }
        let (s, k, d) = (dir.join("set"), dir.join("keys"), dir.join("del"));
        std::fs::write(&s, set_text).unwrap();
        std::fs::write(&k, keys_text).unwrap();
        std::fs::write(&d, del_text).unwrap();
        let (ok, out, err) = lookup(&[&s, &k, &d]);
        assert!(ok, "{err}");
        let linear = LinearSet::new(decl.clone(), kept);
        let want: Vec<String> = keys
            .iter()
            .map(|v| match linear.lookup_values(v) {
                Some(e) => decl.format_element(e),
                None => "nomatch".into(),
            })
            .collect();
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(got, want, "{}", case.name());
        assert!(got.iter().any(|l| *l != "nomatch") && got.contains(&"nomatch"));
        // Every implementation this CPU runs prints the same.
        for imp in matcher::Impl::available() {
            let (ok, again, err) = lookup_with(&[&s, &k, &d], &["--impl", imp.name()]);
            assert!(ok, "{err}");
            assert_eq!(again, out, "{} --impl {imp}", case.name());
        }
        // `--with-keys`: each answer after its key.
        let (ok, keyed, err) = lookup_with(&[&s, &k, &d], &["--with-keys"]);
        assert!(ok, "{err}");
        let want: Vec<String> = keys
            .iter()
            .zip(&got)
            .map(|(v, m)| format!("{} -> {m}", decl.format_key(&decl.key_from_values(v))))
            .collect();
        assert_eq!(keyed.lines().collect::<Vec<_>>(), want, "{}", case.name());
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn errors_name_file_and_line() {
    let dir = tmpdir("errors");
    let (s, k) = (dir.join("rules.set"), dir.join("k"));
    std::fs::write(&k, "").unwrap();
    let cases = [
        (
            "type ipv4_addr . inet_service\n192.0.2.1 . 80\n\n192.0.2.1 . 90-80\n",
            ":4: error: invalid: `192.0.2.1 . 90-80`: `90-80`: range start is greater than its end",
        ),
        (
            "# c\ntype ipv5_addr\n",
            ":2: error: invalid: unknown field type `ipv5_addr`",
        ),
        (
            "type inet_service\n1-10\n5\n",
            ":3: error: overlap: `5` overlaps existing element `1-10`",
        ),
        (
            "192.0.2.1\n",
            ":1: error: invalid: expected `type F1 . F2 ...`, found `192.0.2.1`",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&s, text).unwrap();
        let (ok, out, err) = lookup(&[&s, &k]);
        assert!(!ok);
        assert!(out.is_empty());
        assert_eq!(err.trim_end(), format!("{}{want}", s.display()));
    }
    // A bad key line and a missing delete.
    std::fs::write(&s, "type inet_service\n1-10\n").unwrap();
    std::fs::write(&k, "5\nfoo\n").unwrap();
    let (ok, _, err) = lookup(&[&s, &k]);
    assert!(
        !ok && err.starts_with(&format!("{}:2: error: invalid: ", k.display())),
        "{err}"
    );
    let d = dir.join("d");
    std::fs::write(&d, "11\n").unwrap();
    std::fs::write(&k, "5\n").unwrap();
    let (ok, _, err) = lookup(&[&s, &k, &d]);
    assert!(!ok);
    assert_eq!(
        err.trim_end(),
        format!(
            "{}:1: error: not found: `11` is not in the set",
            d.display()
        )
    );
    // Unknown implementations are refused, from the flag or the variable.
    std::fs::write(&k, "5\n").unwrap();
    let (ok, _, err) = lookup_with(&[&s, &k], &["--impl", "sse9"]);
    assert!(
        !ok && err.contains("unknown lookup implementation `sse9`"),
        "{err}"
    );
    let o = forwarder()
        .args(["lookup", "--set"])
        .arg(&s)
        .arg("--keys")
        .arg(&k)
        .env("MATCHER_IMPL", "sse9")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("MATCHER_IMPL"));
    // An empty key file only loads the set.
    std::fs::write(&k, "").unwrap();
    let (ok, out, _) = lookup(&[&s, &k]);
    assert!(ok && out.is_empty());
    std::fs::remove_dir_all(dir).ok();
}

/// A file of `testdata/classbench`, uncompressed into `dir`.
fn classbench_file(dir: &std::path::Path, name: &str) -> PathBuf {
    use std::io::Read;
    let src = format!(
        "{}/../testdata/classbench/{name}.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&src).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `forwarder lookup --classbench RULES --trace TRACE` prints, for all six
/// ClassBench sets, exactly what DPDK's rte_acl answered for their traces
/// (`*_trace.dpdk_acl_match`), with every implementation this CPU runs.
#[test]
fn classbench_sets_give_rte_acls_answers() {
    let dir = tmpdir("classbench");
    for set in [
        "acl1_1K", "fw1_1K", "ipc1_1K", "acl1_10K", "fw1_10K", "ipc1_10K",
    ] {
        let rules = classbench_file(&dir, set);
        let trace = classbench_file(&dir, &format!("{set}_trace"));
        let want = classbench_file(&dir, &format!("{set}_trace.dpdk_acl_match"));
        let want = std::fs::read_to_string(want).unwrap();
        for imp in matcher::Impl::available() {
            let o = forwarder()
                .arg("lookup")
                .arg("--classbench")
                .arg(&rules)
                .arg("--trace")
                .arg(&trace)
                .args(["--impl", imp.name()])
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let got = String::from_utf8(o.stdout).unwrap();
            assert_eq!(got.lines().count(), want.lines().count(), "{set} {imp}");
            if let Some((i, (g, w))) = got
                .lines()
                .zip(want.lines())
                .enumerate()
                .find(|(_, (g, w))| g != w)
            {
                panic!("{set} {imp}: header {i}: rule {g}, rte_acl's answer {w}");
            }
        }
    }
    // A bad rule line names the file, the line and the value.
    let bad = dir.join("bad_rules");
    std::fs::write(&bad, "@1.2.3.4/32 5.6.7.8/32 0 : 1 0 : 1 0x06/0xFF 0/0\n@1.2.3.4/40 5.6.7.8/32 0 : 1 0 : 1 0x06/0xFF 0/0\n").unwrap();
    let o = forwarder()
        .arg("lookup")
        .arg("--classbench")
        .arg(&bad)
        .arg("--trace")
        .arg(dir.join("acl1_1K_trace"))
        .output()
        .unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(!o.status.success());
    assert!(
        err.contains("bad_rules:2:") && err.contains("`40`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
