#include <rte_config.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_byteorder.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <string.h>
#include "shim.h"

uint16_t fwd_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
}

uint64_t fwd_heap_allocated(void)
{
	uint64_t total = 0;
	for (int s = 0; s < RTE_MAX_NUMA_NODES; s++) {
		struct rte_malloc_socket_stats st;
		if (rte_malloc_get_socket_stats(s, &st) == 0)
			total += st.heap_allocsz_bytes;
	}
	return total;
}

uint8_t *fwd_mbuf_data(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, uint8_t *);
}

uint16_t fwd_mbuf_room(const struct rte_mbuf *m)
{
	return m->buf_len - m->data_off;
}

void fwd_mbuf_set_len(struct rte_mbuf *m, uint16_t len)
{
	m->data_len = len;
	m->pkt_len = len;
}

void fwd_mbuf_reshape(struct rte_mbuf *m, const uint8_t *data, uint16_t len)
{
	m->data_off = (uint16_t)(data - (const uint8_t *)m->buf_addr);
	m->data_len = len;
	m->pkt_len = len;
}

struct rte_mbuf *fwd_mbuf_alloc(struct rte_mempool *mp)
{
	return rte_pktmbuf_alloc(mp);
}

void fwd_mbuf_free(struct rte_mbuf *m)
{
	rte_pktmbuf_free(m);
}

void fwd_mbuf_free_bulk(struct rte_mbuf **m, unsigned int n)
{
	rte_pktmbuf_free_bulk(m, n);
}

int fwd_errno(void)
{
	return rte_errno;
}

/* Frames that need a second look: chained, short, or not for our MAC. */
static int fwd_rx_odd(const struct rte_mbuf *m, const uint8_t *p, const uint8_t *mac,
		      int v6_multicast, uint64_t *segmented, uint64_t *ignored)
{
	uint16_t type, off;

	if (m->nb_segs != 1) {
		*segmented += 1;
		return 0;
	}
	/* Too short, or without the room before the data where VLAN tags
	 * are pushed (the pool's headroom is far more). */
	if (m->data_len < 14 || m->data_off < FWD_TAG_ROOM) {
		*ignored += 1;
		return 0;
	}
	/* Our MAC after all (only the room made it odd). */
	if (memcmp(p, mac, 6) == 0)
		return 1;
	/* IPv6 multicast (33:33:...), where neighbour discovery goes. */
	if (v6_multicast && p[0] == 0x33 && p[1] == 0x33)
		return 1;
	/* ARP (0x0806, big-endian on the wire) is kept for any MAC, behind
	 * up to two VLAN tags (0x8100, 0x88a8). */
	for (off = 12; off + 2 <= m->data_len && off <= 20; off += 4) {
		memcpy(&type, p + off, 2);
		if (type == rte_cpu_to_be_16(0x0806))
			return 1;
		if (type != rte_cpu_to_be_16(0x8100) && type != rte_cpu_to_be_16(0x88a8))
			break;
	}
	*ignored += 1;
	return 0;
}

/* The most frames asked of the device at a time: each chunk's mbufs and
 * data are read while the driver's writes to them are still in L1. After
 * one call for 64 frames the first ones were gone (callgrind's cache
 * model: 2 L1 misses a frame in this loop, none in testpmd's io), and
 * `--mode io` on net_pcap ran at 28.5 against 31.6-32.4 Mpps in chunks
 * of 32 (8 and 16: the same). 32 is also DPDK's usual burst, which
 * vector receive paths are built around. */
#define FWD_RX_CHUNK 32

uint16_t fwd_rx_burst_for(uint16_t port, uint16_t queue, uint16_t n, const uint8_t *mac,
			  int v6_multicast, uintptr_t *handles, uint8_t **data, uint16_t *len,
			  uint64_t *segmented, uint64_t *ignored)
{
	struct rte_mbuf **pkts = (struct rte_mbuf **)handles;
	struct rte_mbuf *drop[FWD_MAX_BURST];
	uint64_t want = 0, mask = 0;
	unsigned int r, i, k = 0, d = 0;

	if (n > FWD_MAX_BURST)
		n = FWD_MAX_BURST;
	memcpy(&want, mac, 6);
	/* The first 6 bytes of 8, whatever the byte order. */
	memset(&mask, 0xff, 6);
	/* Kept frames move down to `k <= r`: the next chunk lands above them. */
	for (r = 0; r < n;) {
		unsigned int ask = n - r < FWD_RX_CHUNK ? n - r : FWD_RX_CHUNK;
		unsigned int got = rte_eth_rx_burst(port, queue, pkts + r, ask);
		for (i = r; i < r + got; i++) {
			struct rte_mbuf *m = pkts[i];
			uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
			uint16_t dl = m->data_len;
			uint64_t dst;

			/* One test for the usual frame: one segment, an Ethernet
			 * header, our MAC (the first 6 of 8 bytes read: a frame of
			 * 14 bytes or more has them). */
			if (unlikely((m->nb_segs != 1) | (dl < 14) | (m->data_off < FWD_TAG_ROOM))) {
				fwd_rx_odd(m, p, mac, v6_multicast, segmented, ignored);
				drop[d++] = m;
				continue;
			}
			memcpy(&dst, p, 8);
			if (unlikely(((dst ^ want) & mask) != 0) &&
			    !fwd_rx_odd(m, p, mac, v6_multicast, segmented, ignored)) {
				drop[d++] = m;
				continue;
			}
			pkts[k] = m;
			data[k] = p;
			len[k] = dl;
			k++;
		}
		r += got;
		if (got < ask)
			break;
	}
	if (d > 0)
		rte_pktmbuf_free_bulk(drop, d);
	return k;
}

int32_t fwd_tx_burst_handles(uint16_t port, uint16_t queue, uintptr_t *handles,
			     const uint16_t *len, uint16_t count, const uint8_t *which,
			     uint16_t n, uint64_t *bytes)
{
	struct rte_mbuf *pkts[FWD_MAX_BURST];
	uint64_t b = 0;
	uint16_t k, sent;

	if (n > FWD_MAX_BURST)
		return -1;
	/* Every frame of the burst in order, each in an mbuf (io mode, or a
	 * burst that all goes out of one port): the handle array is the
	 * device's mbuf array as it is, no gather. */
	if (n == count) {
		unsigned int off = 0, zero = 0;
		for (k = 0; k < n; k++) {
			off |= which[k] ^ k;
			zero |= handles[k] == 0;
		}
		if ((off | zero) == 0) {
			sent = rte_eth_tx_burst(port, queue, (struct rte_mbuf **)handles, n);
			for (k = 0; k < sent; k++)
				b += len[k];
			memset(handles, 0, sent * sizeof(*handles));
			*bytes += b;
			return sent;
		}
	}
	/* Each handle is taken as it is gathered: a frame listed twice
	 * finds 0 the second time. */
	for (k = 0; k < n; k++) {
		uint8_t i = which[k];
		uintptr_t h = i < count ? handles[i] : 0;
		if (h == 0)
			break;
		pkts[k] = (struct rte_mbuf *)h;
		handles[i] = 0;
		b += len[i];
	}
	if (k < n) {
		while (k-- > 0)
			handles[which[k]] = (uintptr_t)pkts[k];
		return -1;
	}
	sent = rte_eth_tx_burst(port, queue, pkts, n);
	/* What the device did not take goes back to its receiving port. */
	for (k = sent; k < n; k++) {
		handles[which[k]] = (uintptr_t)pkts[k];
		b -= len[which[k]];
	}
	*bytes += b;
	return sent;
}
