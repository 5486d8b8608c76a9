//! With the `bind` feature: finds the system's DPDK with pkg-config,
//! generates bindings for what the forwarder uses, and compiles the shim
//! around DPDK's static-inline fast path. Without it: nothing, so that a
//! default `cargo build --workspace` needs no DPDK, pkg-config, libclang
//! or C compiler.

fn main() {
    #[cfg(feature = "bind")]
    bind();
}

#[cfg(feature = "bind")]
fn bind() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=shim.h");
    println!("cargo:rerun-if-changed=shim.c");
    let lib = pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
        .unwrap_or_else(|e| {
            // A plain message and exit rather than a panic: this is the
            // user's first line when the feature is asked for without DPDK.
            eprintln!(
                "error: DPDK not found. The `dpdk` feature needs Debian's DPDK 22.11: \
                 apt-get install dpdk libdpdk-dev pkg-config libclang-dev\n\n{e}"
            );
            std::process::exit(1)
        });
    // pkg-config's cflags: include paths, `-include rte_config.h`, -march.
    let cflags: Vec<String> = {
        let out = std::process::Command::new("pkg-config")
            .args(["--cflags", "libdpdk"])
            .output()
            .expect("pkg-config");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let mut cc = cc::Build::new();
    cc.file("shim.c").opt_level(3).warnings(false);
    for f in &cflags {
        cc.flag(f);
    }
    cc.compile("fwd_dpdk_shim");

    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let functions = [
        "rte_eal_init",
        "rte_eal_cleanup",
        "rte_strerror",
        "rte_thread_register",
        "rte_thread_unregister",
        "rte_socket_id",
        "rte_eth_dev_count_avail",
        "rte_eth_dev_get_port_by_name",
        "rte_eth_dev_get_name_by_port",
        "rte_eth_dev_is_valid_port",
        "rte_eth_dev_info_get",
        "rte_eth_dev_configure",
        "rte_eth_dev_adjust_nb_rx_tx_desc",
        "rte_eth_rx_queue_setup",
        "rte_eth_tx_queue_setup",
        "rte_eth_dev_start",
        "rte_eth_dev_stop",
        "rte_eth_dev_close",
        "rte_eth_dev_socket_id",
        "rte_eth_promiscuous_enable",
        "rte_eth_allmulticast_enable",
        "rte_eth_macaddr_get",
        "rte_eth_stats_get",
        "rte_pktmbuf_pool_create",
        "rte_mempool_free",
        "rte_acl_create",
        "rte_acl_add_rules",
        "rte_acl_build",
        "rte_acl_classify",
        "rte_acl_free",
        "rte_acl_set_ctx_classify",
        "fwd_.*",
    ];
    let mut b = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(cflags.iter().filter(|f| !f.starts_with("-march")))
        .allowlist_function(functions.join("|"))
        .allowlist_type("rte_eth_conf|rte_eth_dev_info|rte_eth_stats|rte_ether_addr|rte_eth_rxconf|rte_eth_txconf|rte_acl_param|rte_acl_config|rte_acl_field_def|rte_acl_rule|rte_acl_field|rte_acl_rule_data|rte_acl_classify_alg")
        .allowlist_var("RTE_ACL_FIELD_TYPE_.*|RTE_ACL_MAX_FIELDS|RTE_ETH_MQ_RX_RSS|RTE_ETH_RSS_IP|RTE_ETH_RSS_TCP|RTE_ETH_RSS_UDP|RTE_MBUF_DEFAULT_BUF_SIZE|RTE_MAX_ETHPORTS")
        .opaque_type("rte_mbuf|rte_mempool")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    b = b.clang_arg("-Wno-everything");
    b.generate()
        .expect("bindgen on DPDK's headers")
        .write_to_file(out.join("bindings.rs"))
        .expect("write bindings");
    // The libraries pkg-config named are linked by `probe`; say so for
    // dependents' build scripts too.
    println!("cargo:libs={}", lib.libs.join(" "));
}
