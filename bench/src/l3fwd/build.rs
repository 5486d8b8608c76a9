//! l3fwd built from the example sources Debian ships (`dpdk-doc`) in a
//! temporary directory, with the changes [`PATCHES`] lists.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's `dpdk-doc` puts the example sources.
const SOURCES: &str = "/usr/share/dpdk/examples";

/// One change to l3fwd's sources: the file, the text it replaces (which
/// must occur exactly once), the replacement, and why.
struct Patch {
    file: &'static str,
    old: &'static str,
    new: &'static str,
    why: &'static str,
}

/// The changes l3fwd needs to run on pcap devices and be measured.
const PATCHES: &[Patch] = &[
    Patch {
        file: "main.c",
        old: "\t\tret = rte_eth_dev_configure(portid, nb_rx_queue,",
        new: "\t\tlocal_port_conf.rxmode.offloads &= dev_info.rx_offload_capa;\n\t\tret = rte_eth_dev_configure(portid, nb_rx_queue,",
        why: "net_pcap has no Rx offloads; l3fwd asks for checksum offload and exits (\"Cannot configure device: err=-22\")",
    },
    Patch {
        file: "main.c",
        old: "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads;",
        new: "\t\t\trxq_conf.offloads = port_conf.rxmode.offloads & dev_info.rx_offload_capa;",
        why: "the same for the Rx queues",
    },
    Patch {
        file: "main.c",
        old: "\t\tn_tx_queue = nb_lcores;\n",
        new: "\t\tn_tx_queue = 0;\n\t\tfor (lcore_id = 0; lcore_id < RTE_MAX_LCORE; lcore_id++)\n\t\t\tif (rte_lcore_is_enabled(lcore_id) && lcore_conf[lcore_id].n_rx_queue > 0)\n\t\t\t\tn_tx_queue++;\n",
        why: "a Tx queue for each forwarding lcore only: a pcap device has one, and the main lcore only reports rates",
    },
    Patch {
        file: "main.c",
        old: "\t\t\tif (rte_lcore_is_enabled(lcore_id) == 0)\n\t\t\t\tcontinue;\n\n\t\t\tif (numa_on)\n",
        new: "\t\t\tif (rte_lcore_is_enabled(lcore_id) == 0 || lcore_conf[lcore_id].n_rx_queue == 0)\n\t\t\t\tcontinue;\n\n\t\t\tif (numa_on)\n",
        why: "the same when the Tx queues are set up",
    },
    Patch {
        file: "main.c",
        old: "\t} else {\n\t\trte_eal_mp_wait_lcore();\n",
        new: "\t} else {\n\t\tuint64_t hz = rte_get_timer_hz();\n\t\twhile (!force_quit) {\n\t\t\tuint64_t rx = 0, tx = 0;\n\t\t\tstruct rte_eth_stats st;\n\t\t\tuint16_t p;\n\t\t\tRTE_ETH_FOREACH_DEV(p) {\n\t\t\t\tif ((enabled_port_mask & (1 << p)) != 0 && rte_eth_stats_get(p, &st) == 0) {\n\t\t\t\t\trx += st.ipackets;\n\t\t\t\t\ttx += st.opackets;\n\t\t\t\t}\n\t\t\t}\n\t\t\tprintf(\"l3fwd-stats %.6f %\" PRIu64 \" %\" PRIu64 \"\\n\", (double)rte_get_timer_cycles() / hz, rx, tx);\n\t\t\tfflush(stdout);\n\t\t\trte_delay_us_sleep(1000000);\n\t\t}\n\t\trte_eal_mp_wait_lcore();\n",
        why: "the main lcore prints both ports' received and sent totals once a second (l3fwd prints no rates)",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV4_L3FWD_LPM_MAX_RULES         1024\n",
        new: "#define IPV4_L3FWD_LPM_MAX_RULES         (1 << 21)\n",
        why: "room for a full table",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 8)\n",
        new: "#define IPV4_L3FWD_LPM_NUMBER_TBL8S (1 << 16)\n",
        why: "tbl8 groups for a full table's prefixes longer than /24",
    },
    Patch {
        file: "l3fwd_lpm.c",
        old: "#define IPV6_L3FWD_LPM_MAX_RULES         1024\n",
        new: "#define IPV6_L3FWD_LPM_MAX_RULES         (1 << 16)\n",
        why: "room for more IPv6 routes",
    },
];

/// Builds l3fwd in `dir` from the installed sources with [`PATCHES`].
pub(super) fn build_l3fwd(dir: &Path) -> Result<PathBuf, String> {
    let src = Path::new(SOURCES);
    if !src.join("l3fwd/main.c").exists() {
        return Err(format!(
            "no l3fwd sources in {SOURCES}/l3fwd (Debian: apt-get install dpdk-doc libdpdk-dev pkg-config)"
        ));
    }
    for sub in ["l3fwd", "common"] {
        let ok = Command::new("cp")
            .arg("-r")
            .arg(src.join(sub))
            .arg(dir)
            .status()
            .map_err(|e| format!("cp: {e}"))?
            .success();
        if !ok {
            return Err(format!(
                "cannot copy {} to {}",
                src.join(sub).display(),
                dir.display()
            ));
        }
    }
    let l3 = dir.join("l3fwd");
    for p in PATCHES {
        let f = l3.join(p.file);
        let text = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        if text.matches(p.old).count() != 1 {
            return Err(format!(
                "{}: the text this change replaces ({}) is not there exactly once: these l3fwd sources differ from 22.11's",
                f.display(),
                p.why
            ));
        }
        std::fs::write(&f, text.replacen(p.old, p.new, 1)).map_err(|e| e.to_string())?;
    }
    let o = Command::new("make")
        .arg("-C")
        .arg(&l3)
        .output()
        .map_err(|e| format!("make (Debian: apt-get install make gcc): {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "building l3fwd failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(l3.join("build/l3fwd"))
}
