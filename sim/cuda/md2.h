/*
 * md2.h - MD2 (RFC 1319) and HMAC-MD2 (RFC 2104 with MD2's 16-byte
 * block), private to the sim's driver. The CUDA runtime checks the
 * driver's identity with an HMAC-MD2 answer (export.c); nothing else in
 * gpuslice should use MD2, which is long broken as a hash.
 *
 * Streaming use: gs__md2_init, any number of gs__md2_update, then
 * gs__md2_final (which leaves the context unusable until the next init).
 * All storage is the caller's; nothing allocates or fails.
 */
#ifndef GS_SIM_MD2_H
#define GS_SIM_MD2_H

#include <stddef.h>
#include <stdint.h>

#define GS__MD2_LEN 16 /* digest and block size in bytes */

struct gs__md2 {
	uint8_t x[48];             /* the 48-byte state buffer X */
	uint8_t sum[GS__MD2_LEN];  /* running checksum C */
	uint8_t last;              /* L: the checksum's last byte */
	uint8_t buf[GS__MD2_LEN];  /* input not yet a whole block */
	size_t n;                  /* bytes in buf */
};

void gs__md2_init(struct gs__md2 *m);
void gs__md2_update(struct gs__md2 *m, const void *data, size_t len);
/* OUT: out, the 16-byte digest. */
void gs__md2_final(struct gs__md2 *m, uint8_t out[GS__MD2_LEN]);

/* One-shot MD2 of len bytes. OUT: out. */
void gs__md2(const void *data, size_t len, uint8_t out[GS__MD2_LEN]);

/*
 * HMAC-MD2 of msg under key (a key longer than 16 bytes is hashed first,
 * as RFC 2104 says). OUT: out.
 */
void gs__hmac_md2(const void *key, size_t key_len, const void *msg,
                  size_t msg_len, uint8_t out[GS__MD2_LEN]);

#endif
