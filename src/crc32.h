/* crc32.h -- CRC-32 (IEEE) used by the binary file formats.  Internal. */
#ifndef ARACHNE_CRC32_H
#define ARACHNE_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC of len bytes.  ar_crc32(data, len) == ar_crc32_update(0, data, len);
 * a message may be fed in pieces: crc = ar_crc32_update(crc, piece, n). */
uint32_t ar_crc32(const void *data, size_t len);
uint32_t ar_crc32_update(uint32_t crc, const void *data, size_t len);

#endif
