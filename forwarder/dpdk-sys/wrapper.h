/* What the forwarder binds of DPDK: EAL, ethdev, mempool, mbuf, lcore, and
 * the shim's wrappers of static-inline functions. */
#include <rte_config.h>
#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include "shim.h"
