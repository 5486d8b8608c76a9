#include <rte_config.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include "shim.h"

uint16_t fwd_rx_burst_data(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n,
			   uint8_t **data, uint16_t *len)
{
	uint16_t r = rte_eth_rx_burst(port, queue, pkts, n);
	for (uint16_t i = 0; i < r; i++) {
		struct rte_mbuf *m = pkts[i];
		data[i] = rte_pktmbuf_mtod(m, uint8_t *);
		len[i] = m->nb_segs == 1 ? m->data_len : 0;
	}
	return r;
}

uint16_t fwd_tx_burst(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n)
{
	return rte_eth_tx_burst(port, queue, pkts, n);
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
