/*
 * md2.c - MD2 as RFC 1319 describes it, and HMAC over it (RFC 2104).
 *
 * MD2 pads the message to whole 16-byte blocks (n bytes of value n, 1 to
 * 16 of them), appends a 16-byte checksum of the padded message, and runs
 * every block through an 18-round mixing of a 48-byte buffer. Both the
 * checksum and the rounds go through S, a permutation of 0..255.
 *
 * S is the RFC's "random" permutation built from the digits of pi; we
 * derived it ourselves rather than copying the table: starting from the
 * identity, for i = 2..256 swap S[i-1] with S[r(i)], where r(n) reads the
 * next 1, 2 or 3 decimal digits of pi (n <= 10, <= 100, else), rejects a
 * value at or above the largest multiple of n that fits, and takes the
 * remainder mod n. The RFC's test vectors (tests/unit/test_sim_md2.c)
 * confirm the result.
 */
#include "md2.h"

#include <string.h>

static const uint8_t S[256] = {
	41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161,
	236, 240, 6,   19,  98,  167, 5,   243, 192, 199, 115, 140,
	152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,
	253, 212, 224, 22,  103, 66,  111, 24,  138, 23,  229, 18,
	190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142,
	187, 47,  238, 122, 169, 104, 121, 145, 21,  178, 7,   63,
	148, 194, 16,  137, 11,  34,  95,  33,  128, 127, 93,  154,
	90,  144, 50,  39,  53,  62,  204, 231, 191, 247, 151, 3,
	255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,
	172, 86,  170, 198, 79,  184, 56,  210, 150, 164, 125, 182,
	118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,
	100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,
	27,  96,  37,  173, 174, 176, 185, 246, 28,  70,  97,  105,
	52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,
	195, 92,  249, 206, 186, 197, 234, 38,  44,  83,  13,  110,
	133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,
	106, 220, 55,  200, 108, 193, 171, 250, 36,  225, 123, 8,
	12,  189, 177, 74,  120, 136, 149, 139, 227, 99,  232, 109,
	233, 203, 213, 254, 59,  0,   29,  57,  242, 239, 183, 14,
	102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,
	49,  68,  80,  180, 143, 237, 31,  26,  219, 153, 141, 51,
	159, 17,  131, 20,
};

/* One 16-byte block: fold it into the checksum and mix it into X. */
static void block(struct gs__md2 *m, const uint8_t b[GS__MD2_LEN])
{
	uint8_t t = 0;

	for (int j = 0; j < GS__MD2_LEN; j++) {
		m->sum[j] ^= S[b[j] ^ m->last];
		m->last = m->sum[j];
		m->x[16 + j] = b[j];
		m->x[32 + j] = b[j] ^ m->x[j];
	}
	for (int round = 0; round < 18; round++) {
		for (int k = 0; k < 48; k++) {
			m->x[k] ^= S[t];
			t = m->x[k];
		}
		t = (uint8_t)(t + round);
	}
}

void gs__md2_init(struct gs__md2 *m)
{
	memset(m, 0, sizeof(*m));
}

void gs__md2_update(struct gs__md2 *m, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len > 0) {
		size_t take = GS__MD2_LEN - m->n;

		if (take > len)
			take = len;
		memcpy(m->buf + m->n, p, take);
		m->n += take;
		p += take;
		len -= take;
		if (m->n == GS__MD2_LEN) {
			block(m, m->buf);
			m->n = 0;
		}
	}
}

void gs__md2_final(struct gs__md2 *m, uint8_t out[GS__MD2_LEN])
{
	uint8_t pad = (uint8_t)(GS__MD2_LEN - m->n);
	uint8_t sum[GS__MD2_LEN];

	memset(m->buf + m->n, pad, pad);
	block(m, m->buf);
	/* The checksum block is hashed but not itself checksummed; the
	 * copy keeps block() from folding it into what it reads. */
	memcpy(sum, m->sum, sizeof(sum));
	block(m, sum);
	memcpy(out, m->x, GS__MD2_LEN);
	memset(m, 0, sizeof(*m));
}

void gs__md2(const void *data, size_t len, uint8_t out[GS__MD2_LEN])
{
	struct gs__md2 m;

	gs__md2_init(&m);
	gs__md2_update(&m, data, len);
	gs__md2_final(&m, out);
}

void gs__hmac_md2(const void *key, size_t key_len, const void *msg,
                  size_t msg_len, uint8_t out[GS__MD2_LEN])
{
	uint8_t k[GS__MD2_LEN] = {0};
	uint8_t pad[GS__MD2_LEN];
	uint8_t inner[GS__MD2_LEN];
	struct gs__md2 m;

	if (key_len > GS__MD2_LEN)
		gs__md2(key, key_len, k);
	else if (key_len > 0)
		memcpy(k, key, key_len);

	for (int i = 0; i < GS__MD2_LEN; i++)
		pad[i] = k[i] ^ 0x36;
	gs__md2_init(&m);
	gs__md2_update(&m, pad, sizeof(pad));
	gs__md2_update(&m, msg, msg_len);
	gs__md2_final(&m, inner);

	for (int i = 0; i < GS__MD2_LEN; i++)
		pad[i] = k[i] ^ 0x5c;
	gs__md2_init(&m);
	gs__md2_update(&m, pad, sizeof(pad));
	gs__md2_update(&m, inner, sizeof(inner));
	gs__md2_final(&m, out);
}
