/* DPDK's fast path is static inline (rx/tx burst, mbuf data access):
 * bindgen cannot link to it, so these small functions wrap it. Each is a
 * plain call; the compiler inlines DPDK's code into them. */
#ifndef FWD_DPDK_SHIM_H
#define FWD_DPDK_SHIM_H
#include <stdint.h>
struct rte_mbuf;
struct rte_mempool;

uint16_t fwd_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
/* rx burst, with each received mbuf's data pointer and length (0 for a
 * chained, multi-segment mbuf): one call a burst instead of several a
 * packet. */
uint16_t fwd_rx_burst_data(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
			   uint8_t **data, uint16_t *len);
/* The first segment's data. */
uint8_t *fwd_mbuf_data(struct rte_mbuf *m);
/* Room after data_off in a one-segment mbuf. */
uint16_t fwd_mbuf_room(const struct rte_mbuf *m);
void fwd_mbuf_set_len(struct rte_mbuf *m, uint16_t len);
struct rte_mbuf *fwd_mbuf_alloc(struct rte_mempool *mp);
void fwd_mbuf_free(struct rte_mbuf *m);
void fwd_mbuf_free_bulk(struct rte_mbuf **m, unsigned int n);
/* rte_errno (a per-lcore variable behind a macro). */
int fwd_errno(void);
#endif
