/*
 * fatbin.h - reading the CUDA fatbinary images nvcc embeds in programs,
 * private to the sim's driver (sim/fatbin.c).
 *
 * Layout (observed on nvcc 13.0 output, all little-endian):
 *
 *   wrapper   u32 magic 0x466243b1, u32 version, u64 pointer to the
 *             fatbinary container, u64: version 1 nothing used here;
 *             version 2 (an -rdc program's device-linked image) a
 *             NULL-terminated array of pointers to its prelinked
 *             (relocatable) fatbins, one per translation unit
 *   container u32 magic 0xba55ed50, u16 version 1, u16 header size (16),
 *             u64 size of the entries that follow the header
 *   entry     u16 kind (1 PTX, 2 ELF/SASS), u16 version, u32 header
 *             size (64 or 80), u64 payload size (padded),
 *             u32 compressed size, u32 options offset, u16 minor,
 *             u16 major (PTX ISA / ELF version), u32 sm (75 = sm_75),
 *             u32 name offset, u32 name length, u64 flags,
 *             u64 reserved, u64 uncompressed size; the payload follows
 *             the entry header. Flags 0x8000: zstd frame,
 *             0x2000: LZ4 block; neither: stored as is.
 *
 * The sim runs no machine code, so it loads only PTX: gs__fatbin_ptx picks
 * the PTX entry with the highest sm not above the device's and returns
 * its text. The linked image of a version-2 wrapper holds SASS only; its
 * prelinked fatbins carry the PTX, which a real driver would JIT-link:
 * the sim takes the best PTX of each and puts them one after another. An image with SASS but no usable PTX is
 * CUDA_ERROR_NO_BINARY_FOR_GPU, as on a real driver without a matching
 * cubin.
 */
#ifndef GS_SIM_FATBIN_H
#define GS_SIM_FATBIN_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS__FATBIN_WRAPPER_MAGIC   0x466243b1u
#define GS__FATBIN_WRAPPER_V1      1u
#define GS__FATBIN_WRAPPER_LINKED  2u
#define GS__FATBIN_CONTAINER_MAGIC 0xba55ed50u
#define GS__FATBIN_KIND_PTX        1
#define GS__FATBIN_KIND_ELF        2
#define GS__FATBIN_FLAG_LZ4        0x2000u
#define GS__FATBIN_FLAG_ZSTD       0x8000u
/* Largest entry the sim decompresses (a PTX text this large is not a
 * program anyone runs on the sim). */
#define GS__FATBIN_MAX_ENTRY (256u << 20)

/* One entry of a container, as gs__fatbin_entries reports it. */
struct gs__fatbin_entry {
	uint16_t kind;    /* GS__FATBIN_KIND_* */
	uint32_t sm;      /* 75, 90, ... */
	uint64_t flags;   /* GS__FATBIN_FLAG_* and others */
	const uint8_t *payload;
	uint64_t stored;  /* bytes at payload (compressed size if compressed) */
	uint64_t size;    /* uncompressed size */
};

/* Whether `image` starts like a fatbin wrapper or container. */
bool gs__fatbin_is(const void *image);

/*
 * Lists the entries of the container `image` points at (through the
 * wrapper if it is one). `len` bounds the container when known
 * (0: trust its header). OUT: up to `max` entries in *out, their count
 * in *n. CUDA_ERROR_INVALID_IMAGE when the layout is broken.
 */
CUresult gs__fatbin_entries(const void *image, size_t len,
                            struct gs__fatbin_entry *out, int max, int *n);

/*
 * The PTX text for a device of compute capability `sm` (e.g. 90): the
 * PTX entry with the highest sm <= `sm`, decompressed. OUT: *ptx
 * (malloc'ed, NUL-terminated; the caller frees), *picked_sm when not
 * NULL. CUDA_ERROR_NO_BINARY_FOR_GPU when there is no such entry,
 * CUDA_ERROR_INVALID_IMAGE when the image or a compressed entry is
 * broken, CUDA_ERROR_OUT_OF_MEMORY. Nothing is allocated on failure.
 */
CUresult gs__fatbin_ptx(const void *image, size_t len, int sm, char **ptx,
                        int *picked_sm);

/*
 * An entry's payload, decompressed. OUT: *data (malloc'ed, one NUL byte
 * past *size; the caller frees), *size.
 */
CUresult gs__fatbin_extract(const struct gs__fatbin_entry *e, uint8_t **data,
                            size_t *size);

#endif
