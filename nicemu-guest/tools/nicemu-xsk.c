// SPDX-License-Identifier: Apache-2.0
// nicemu-xsk: an AF_XDP benchmark for the `xsk` scenario, written for nicemu against
// libxdp's xsk API (<xdp/xsk.h>). One socket on one queue of an interface, in copy or
// zero-copy mode; prints packets/s once a second:
//   rx_drop  count and drop every frame the queue receives
//   tx_only  send 64-byte UDP frames to DST_MAC as fast as completions allow
//   l2fwd    send every received frame back with its MAC addresses swapped
// Usage: nicemu-xsk IFACE QUEUE rx_drop|tx_only|l2fwd copy|zc SECONDS [DST_MAC SRC_MAC]
// Output lines: "xsk rx=N tx=N" per second, "xsk done rx=N tx=N" at the end (totals);
// "xsk error: ..." and exit 1 when the socket cannot be made (errno in the text).

#include <errno.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#define NUM_FRAMES 4096
#define FRAME_SIZE XSK_UMEM__DEFAULT_FRAME_SIZE
#define BATCH 64
#define TX_LEN 64

struct bench {
	struct xsk_ring_prod fq, tx;
	struct xsk_ring_cons cq, rx;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	void *area;
	uint64_t free_frames[NUM_FRAMES];
	uint32_t nfree;
	uint64_t n_rx, n_tx, tx_pending;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_mac(const char *s, uint8_t m[6])
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4],
		      &m[5]) == 6 ? 0 : -1;
}

static uint64_t frame_get(struct bench *b)
{
	return b->nfree ? b->free_frames[--b->nfree] : UINT64_MAX;
}

static void frame_put(struct bench *b, uint64_t addr)
{
	if (b->nfree < NUM_FRAMES)
		b->free_frames[b->nfree++] = addr;
}

// Gives the kernel free frames to receive into.
static void refill(struct bench *b)
{
	uint32_t idx, n = xsk_prod_nb_free(&b->fq, b->nfree);

	if (n > b->nfree)
		n = b->nfree;
	if (n > BATCH)
		n = BATCH;
	if (!n || xsk_ring_prod__reserve(&b->fq, n, &idx) != n)
		return;
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&b->fq, idx + i) = frame_get(b);
	xsk_ring_prod__submit(&b->fq, n);
}

// Takes back the frames the kernel sent.
static void complete(struct bench *b)
{
	uint32_t idx, n = xsk_ring_cons__peek(&b->cq, BATCH, &idx);

	for (uint32_t i = 0; i < n; i++)
		frame_put(b, *xsk_ring_cons__comp_addr(&b->cq, idx + i));
	if (n) {
		xsk_ring_cons__release(&b->cq, n);
		b->n_tx += n;
		b->tx_pending -= n;
	}
}

static void kick_tx(struct bench *b)
{
	if (b->tx_pending && xsk_ring_prod__needs_wakeup(&b->tx))
		sendto(xsk_socket__fd(b->xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
}

// Queues `n` frames (addresses, lengths) for transmission; returns how many went.
static uint32_t send_frames(struct bench *b, const uint64_t *addr, const uint32_t *len, uint32_t n)
{
	uint32_t idx, got = xsk_ring_prod__reserve(&b->tx, n, &idx);

	for (uint32_t i = 0; i < got; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&b->tx, idx + i);

		d->addr = addr[i];
		d->len = len[i];
	}
	if (got) {
		xsk_ring_prod__submit(&b->tx, got);
		b->tx_pending += got;
	}
	return got;
}

static void rx_step(struct bench *b, int fwd)
{
	uint64_t addr[BATCH];
	uint32_t len[BATCH], idx, n;

	n = xsk_ring_cons__peek(&b->rx, BATCH, &idx);
	if (!n) {
		if (xsk_ring_prod__needs_wakeup(&b->fq)) {
			struct pollfd p = { .fd = xsk_socket__fd(b->xsk), .events = POLLIN };

			poll(&p, 1, 10);
		}
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&b->rx, idx + i);

		addr[i] = xsk_umem__extract_addr(d->addr);
		len[i] = d->len;
		if (fwd) {
			uint8_t *p = xsk_umem__get_data(b->area, d->addr), t[6];

			memcpy(t, p, 6);
			memcpy(p, p + 6, 6);
			memcpy(p + 6, t, 6);
		}
	}
	xsk_ring_cons__release(&b->rx, n);
	b->n_rx += n;
	uint32_t sent = fwd ? send_frames(b, addr, len, n) : 0;

	for (uint32_t i = sent; i < n; i++)
		frame_put(b, addr[i]);
}

// A 64-byte UDP/IPv4 frame in every transmit frame of the umem.
static void fill_tx_frames(struct bench *b, const uint8_t dst[6], const uint8_t src[6])
{
	static const uint8_t ip_udp[] = {
		0x08, 0x00, 0x45, 0x00, 0x00, 0x32, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0x00, 0x00, 192, 168, 100, 1, 192, 168, 100, 2, 0x27, 0x0f, 0x27, 0x0f,
		0x00, 0x1e, 0x00, 0x00,
	};
	uint32_t sum = 0;

	for (uint32_t i = 0; i < NUM_FRAMES; i++) {
		uint8_t *p = (uint8_t *)b->area + (uint64_t)i * FRAME_SIZE;

		memset(p, 0, TX_LEN);
		memcpy(p, dst, 6);
		memcpy(p + 6, src, 6);
		memcpy(p + 12, ip_udp, sizeof(ip_udp));
	}
	// IPv4 header checksum (the same header in every frame).
	uint8_t *ip = (uint8_t *)b->area + 14;

	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	for (uint32_t i = 0; i < NUM_FRAMES; i++) {
		uint8_t *q = (uint8_t *)b->area + (uint64_t)i * FRAME_SIZE + 24;

		q[0] = (uint8_t)(sum >> 8);
		q[1] = (uint8_t)sum;
	}
}

static void tx_step(struct bench *b)
{
	uint64_t addr[BATCH];
	uint32_t len[BATCH], n = 0;

	complete(b);
	while (n < BATCH && b->nfree) {
		addr[n] = frame_get(b);
		len[n++] = TX_LEN;
	}
	uint32_t sent = send_frames(b, addr, len, n);

	for (uint32_t i = sent; i < n; i++)
		frame_put(b, addr[i]);
	kick_tx(b);
}

static int setup(struct bench *b, const char *ifname, int queue, int zc, int rx)
{
	struct xsk_umem_config ucfg = {
		.fill_size = XSK_RING_PROD__DEFAULT_NUM_DESCS,
		.comp_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.frame_size = FRAME_SIZE,
	};
	struct xsk_socket_config scfg = {
		.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.tx_size = XSK_RING_PROD__DEFAULT_NUM_DESCS,
		.xdp_flags = XDP_FLAGS_DRV_MODE,
		.bind_flags = (zc ? XDP_ZEROCOPY : XDP_COPY) | XDP_USE_NEED_WAKEUP,
	};
	size_t size = (size_t)NUM_FRAMES * FRAME_SIZE;
	int err;

	b->area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->area == MAP_FAILED) {
		printf("xsk error: mmap: %s\n", strerror(errno));
		return -1;
	}
	err = xsk_umem__create(&b->umem, b->area, size, &b->fq, &b->cq, &ucfg);
	if (err) {
		printf("xsk error: umem: %s\n", strerror(-err));
		return -1;
	}
	err = xsk_socket__create(&b->xsk, ifname, queue, b->umem, rx ? &b->rx : NULL, &b->tx, &scfg);
	if (err) {
		printf("xsk error: socket on %s queue %d (%s): %s\n", ifname, queue,
		       zc ? "zero-copy" : "copy", strerror(-err));
		return -1;
	}
	for (uint32_t i = 0; i < NUM_FRAMES; i++)
		frame_put(b, (uint64_t)i * FRAME_SIZE);
	return 0;
}

int main(int argc, char **argv)
{
	static struct bench b;
	uint8_t dst[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, src[6] = { 0 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 6) {
		fprintf(stderr, "usage: %s IFACE QUEUE rx_drop|tx_only|l2fwd copy|zc SECONDS "
				"[DST_MAC SRC_MAC]\n", argv[0]);
		return 2;
	}
	const char *mode = argv[3];
	int txonly = !strcmp(mode, "tx_only"), fwd = !strcmp(mode, "l2fwd");
	int zc = !strcmp(argv[4], "zc"), secs = atoi(argv[5]);

	if ((!txonly && !fwd && strcmp(mode, "rx_drop")) || secs <= 0 ||
	    (argc > 7 && (parse_mac(argv[6], dst) || parse_mac(argv[7], src)))) {
		fprintf(stderr, "nicemu-xsk: bad mode, seconds or MAC\n");
		return 2;
	}
	if (setup(&b, argv[1], atoi(argv[2]), zc, !txonly))
		return 1;
	if (txonly)
		fill_tx_frames(&b, dst, src);
	uint64_t start = now_ns(), tick = start + 1000000000ull, last_rx = 0, last_tx = 0;

	while (now_ns() - start < (uint64_t)secs * 1000000000ull) {
		if (txonly) {
			tx_step(&b);
		} else {
			refill(&b);
			rx_step(&b, fwd);
			if (fwd) {
				complete(&b);
				kick_tx(&b);
			}
		}
		if (now_ns() >= tick) {
			printf("xsk rx=%llu tx=%llu\n", (unsigned long long)(b.n_rx - last_rx),
			       (unsigned long long)(b.n_tx - last_tx));
			last_rx = b.n_rx;
			last_tx = b.n_tx;
			tick += 1000000000ull;
		}
	}
	printf("xsk done rx=%llu tx=%llu\n", (unsigned long long)b.n_rx, (unsigned long long)b.n_tx);
	xsk_socket__delete(b.xsk);
	xsk_umem__delete(b.umem);
	return 0;
}
