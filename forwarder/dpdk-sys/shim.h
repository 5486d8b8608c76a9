/* DPDK's fast path is static inline (rx/tx burst, mbuf data access):
 * bindgen cannot link to it, so these small functions wrap it. Each is a
 * plain call; the compiler inlines DPDK's code into them. */
#ifndef FWD_DPDK_SHIM_H
#define FWD_DPDK_SHIM_H
#include <stdint.h>
/* The most frames one call of the burst functions below takes (the
 * forwarder's `MAX_BURST`). */
#define FWD_MAX_BURST 64
struct rte_mbuf;
struct rte_mempool;

uint16_t fwd_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n);
/* rx burst of up to n (at most FWD_MAX_BURST) frames, keeping the
 * one-segment mbufs addressed to `mac` (6 bytes), carrying ARP, or (with
 * `v6_multicast`, a router's port) sent to an IPv6 multicast group: each kept
 * mbuf goes to handles[k] (as an integer), its data pointer to data[k] and
 * its length to len[k]. The others are freed and counted in *segmented
 * (chained mbufs) or *ignored (short, or for another station). Returns
 * how many were kept. */
uint16_t fwd_rx_burst_for(uint16_t port, uint16_t queue, uint16_t n, const uint8_t *mac,
			  int v6_multicast, uintptr_t *handles, uint8_t **data, uint16_t *len,
			  uint64_t *segmented, uint64_t *ignored);
/* tx burst of the mbufs handles[which[0..n]] (n at most FWD_MAX_BURST;
 * `handles` and `len` have `count` entries): each one sent has its handle
 * zeroed and len[which[k]] added to *bytes. Returns how many were sent,
 * or -1, sending nothing and leaving the handles as they were, when an
 * index is out of range or listed twice, a handle is 0 (a frame not in
 * an mbuf), or n is too large. When which is 0, 1, ..., count - 1 the
 * handle array goes to the device as it is, with no gather. */
int32_t fwd_tx_burst_handles(uint16_t port, uint16_t queue, uintptr_t *handles,
			     const uint16_t *len, uint16_t count, const uint8_t *which,
			     uint16_t n, uint64_t *bytes);
/* Bytes allocated from DPDK's heaps, every socket's (rte_malloc's
 * statistics): what a structure built in them, such as an rte_acl
 * context, takes is the difference across its build. */
uint64_t fwd_heap_allocated(void);
/* The first segment's data. */
uint8_t *fwd_mbuf_data(struct rte_mbuf *m);
/* Room after data_off in a one-segment mbuf. */
uint16_t fwd_mbuf_room(const struct rte_mbuf *m);
void fwd_mbuf_set_len(struct rte_mbuf *m, uint16_t len);
/* The mbuf's data now starts at `data` (inside its buffer) and is `len`
 * bytes long: VLAN tags pushed or popped in place. */
void fwd_mbuf_reshape(struct rte_mbuf *m, const uint8_t *data, uint16_t len);
/* Bytes a received mbuf must have free before its data: the forwarder
 * pushes up to two VLAN tags there (its `TAG_ROOM`). */
#define FWD_TAG_ROOM 8
struct rte_mbuf *fwd_mbuf_alloc(struct rte_mempool *mp);
void fwd_mbuf_free(struct rte_mbuf *m);
void fwd_mbuf_free_bulk(struct rte_mbuf **m, unsigned int n);
/* rte_errno (a per-lcore variable behind a macro). */
int fwd_errno(void);
#endif
