/*
 * fatbin.c - the sim driver's reader of CUDA fatbinaries (the wrapper
 * nvcc registers and the container inside it): lists entries, picks the
 * PTX for a device, decompresses zstd (libzstd) and LZ4 (liblz4)
 * entries. Layout and ownership: fatbin.h. Pure: no driver state, so
 * tests link it alone.
 */
#include "fatbin.h"
#include "halloc.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Sizes of the fixed headers. */
#define CONTAINER_HDR 16u
#define ENTRY_HDR_MIN 64u
/* Most entries one container may list (nvcc emits a handful). */
#define MAX_ENTRIES 256
/* Most prelinked fatbins a link-version wrapper may list. */
#define MAX_PRELINKED 4096

static uint16_t rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* Whether b starts with the 4 bytes of `magic` (little-endian), compared
 * one at a time: no magic byte is 0, so a shorter NUL-terminated text
 * (a PTX image) is never read past its end. */
static bool starts_with(const uint8_t *b, uint32_t magic)
{
	for (int i = 0; i < 4; i++)
		if (b[i] != (uint8_t)(magic >> (8 * i)))
			return false;
	return true;
}

bool gs__fatbin_is(const void *image)
{
	const uint8_t *b = image;

	if (b == NULL)
		return false;
	return starts_with(b, GS__FATBIN_WRAPPER_MAGIC) ||
	       starts_with(b, GS__FATBIN_CONTAINER_MAGIC);
}

/* The container `image` stands for: itself, or the one its wrapper points
 * at (the wrapper's length says nothing about the container's). */
static const uint8_t *container_of(const void *image, size_t *len)
{
	const uint8_t *b = image;

	if (b == NULL)
		return NULL;
	if (starts_with(b, GS__FATBIN_WRAPPER_MAGIC)) {
		if (rd32(b + 4) != GS__FATBIN_WRAPPER_V1 &&
		    rd32(b + 4) != GS__FATBIN_WRAPPER_LINKED)
			return NULL;
		b = (const uint8_t *)(uintptr_t)rd64(b + 8);
		*len = 0;
		if (b == NULL)
			return NULL;
	}
	return starts_with(b, GS__FATBIN_CONTAINER_MAGIC) ? b : NULL;
}

CUresult gs__fatbin_entries(const void *image, size_t len,
                            struct gs__fatbin_entry *out, int max, int *n)
{
	const uint8_t *c = container_of(image, &len);
	uint64_t body, off;
	uint16_t hdr;
	int count = 0;

	*n = 0;
	if (c == NULL)
		return CUDA_ERROR_INVALID_IMAGE;
	hdr = rd16(c + 6);
	body = rd64(c + 8);
	if (rd16(c + 4) != 1 || hdr < CONTAINER_HDR ||
	    body > (1ULL << 32) ||
	    (len != 0 && (len < hdr || body > len - hdr)))
		return CUDA_ERROR_INVALID_IMAGE;
	off = hdr;
	while (off < hdr + body) {
		const uint8_t *e = c + off;
		uint32_t ehdr;
		uint64_t size, stored, flags;

		if (hdr + body - off < ENTRY_HDR_MIN)
			return CUDA_ERROR_INVALID_IMAGE;
		ehdr = rd32(e + 4);
		size = rd64(e + 8);
		if (ehdr < ENTRY_HDR_MIN || ehdr > hdr + body - off ||
		    size > hdr + body - off - ehdr)
			return CUDA_ERROR_INVALID_IMAGE;
		flags = rd64(e + 40);
		stored = size;
		if (flags & (GS__FATBIN_FLAG_ZSTD | GS__FATBIN_FLAG_LZ4)) {
			stored = rd32(e + 16);
			if (stored > size)
				return CUDA_ERROR_INVALID_IMAGE;
		}
		if (count >= MAX_ENTRIES)
			return CUDA_ERROR_INVALID_IMAGE;
		if (count < max) {
			struct gs__fatbin_entry *o = &out[count];

			o->kind = rd16(e);
			o->sm = rd32(e + 28);
			o->flags = flags;
			o->payload = e + ehdr;
			o->stored = stored;
			o->size = (flags & (GS__FATBIN_FLAG_ZSTD |
			                    GS__FATBIN_FLAG_LZ4))
			              ? rd64(e + 56)
			              : size;
		}
		count++;
		off += ehdr + size;
	}
	*n = count < max ? count : max;
	return CUDA_SUCCESS;
}

CUresult gs__fatbin_extract(const struct gs__fatbin_entry *e, uint8_t **data,
                            size_t *size)
{
	uint8_t *buf;
	size_t n = (size_t)e->size;

	if (e->size > GS__FATBIN_MAX_ENTRY)
		return CUDA_ERROR_INVALID_IMAGE;
	buf = gs__malloc(n + 1);
	if (buf == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (e->flags & GS__FATBIN_FLAG_ZSTD) {
		size_t got = ZSTD_decompress(buf, n, e->payload,
		                             (size_t)e->stored);
		if (ZSTD_isError(got) || got != n)
			goto out_bad;
	} else if (e->flags & GS__FATBIN_FLAG_LZ4) {
		int got;

		if (e->stored > (uint64_t)LZ4_MAX_INPUT_SIZE)
			goto out_bad;
		got = LZ4_decompress_safe((const char *)e->payload,
		                          (char *)buf, (int)e->stored, (int)n);
		if (got < 0 || (size_t)got != n)
			goto out_bad;
	} else {
		memcpy(buf, e->payload, n);
	}
	buf[n] = '\0';
	*data = buf;
	*size = n;
	return CUDA_SUCCESS;

out_bad:
	free(buf);
	return CUDA_ERROR_INVALID_IMAGE;
}

/* gs__fatbin_ptx for one container (or wrapper) only. */
static CUresult one_ptx(const void *image, size_t len, int sm, char **ptx,
                        int *picked_sm)
{
	struct gs__fatbin_entry *list;
	int n = 0, best = -1;
	uint8_t *text;
	size_t size;
	CUresult r;

	list = gs__malloc(sizeof(*list) * MAX_ENTRIES);
	if (list == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = gs__fatbin_entries(image, len, list, MAX_ENTRIES, &n);
	if (r != CUDA_SUCCESS)
		goto out;
	for (int i = 0; i < n; i++)
		if (list[i].kind == GS__FATBIN_KIND_PTX &&
		    (int)list[i].sm <= sm &&
		    (best < 0 || list[i].sm > list[best].sm))
			best = i;
	if (best < 0) {
		r = CUDA_ERROR_NO_BINARY_FOR_GPU;
		goto out;
	}
	r = gs__fatbin_extract(&list[best], &text, &size);
	if (r != CUDA_SUCCESS)
		goto out;
	/* the payload is padded with NULs; the text ends at the first one */
	if (strlen((char *)text) == 0) {
		free(text);
		r = CUDA_ERROR_INVALID_IMAGE;
		goto out;
	}
	*ptx = (char *)text;
	if (picked_sm != NULL)
		*picked_sm = (int)list[best].sm;
out:
	free(list);
	return r;
}

/*
 * The PTX of the prelinked fatbins a link-version wrapper lists (the
 * relocatable images of an -rdc program, one per translation unit),
 * each the best for `sm`, one after another. OUT as gs__fatbin_ptx.
 */
static CUresult prelinked_ptx(const uint8_t *wrapper, int sm, char **ptx,
                              int *picked_sm)
{
	const uint8_t *const *list =
	    (const uint8_t *const *)(uintptr_t)rd64(wrapper + 16);
	char *all = NULL;
	size_t used = 0;
	CUresult r = CUDA_ERROR_NO_BINARY_FOR_GPU;

	for (int i = 0; list != NULL && i < MAX_PRELINKED && list[i] != NULL;
	     i++) {
		const uint8_t *img = list[i];
		char *one, *grown;
		size_t n;
		int got;

		/* a listed image is a container or a plain wrapper, never
		 * another link-version wrapper */
		if (starts_with(img, GS__FATBIN_WRAPPER_MAGIC) &&
		    rd32(img + 4) != GS__FATBIN_WRAPPER_V1) {
			r = CUDA_ERROR_INVALID_IMAGE;
			break;
		}
		r = one_ptx(img, 0, sm, &one, &got);
		if (r == CUDA_ERROR_NO_BINARY_FOR_GPU)
			continue;
		if (r != CUDA_SUCCESS)
			break;
		n = strlen(one);
		grown = gs__realloc(all, used + n + 2);
		if (grown == NULL) {
			free(one);
			r = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		all = grown;
		memcpy(all + used, one, n);
		used += n;
		all[used++] = '\n';
		all[used] = '\0';
		free(one);
		if (picked_sm != NULL)
			*picked_sm = got;
	}
	if (all != NULL && (r == CUDA_SUCCESS ||
	                    r == CUDA_ERROR_NO_BINARY_FOR_GPU)) {
		*ptx = all;
		return CUDA_SUCCESS;
	}
	free(all);
	return r;
}

CUresult gs__fatbin_ptx(const void *image, size_t len, int sm, char **ptx,
                        int *picked_sm)
{
	const uint8_t *b = image;
	CUresult r = one_ptx(image, len, sm, ptx, picked_sm);

	if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && b != NULL &&
	    starts_with(b, GS__FATBIN_WRAPPER_MAGIC) &&
	    rd32(b + 4) == GS__FATBIN_WRAPPER_LINKED)
		r = prelinked_ptx(b, sm, ptx, picked_sm);
	return r;
}
