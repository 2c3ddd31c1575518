/*
 * inflatehash-c: the limit warcsum is measured against. It inflates every
 * gzip member of .warc.gz files with ISA-L (header and CRC-32 checked by
 * ISA-L itself) and hashes the payload of every WARC response record (the
 * block after the HTTP head) with OpenSSL, doing nothing else: no output,
 * no checks beyond finding the payload, one thread.
 *
 *   cc -O2 -o inflatehash-c inflatehash.c -lisal -lcrypto
 *   inflatehash-c [-H md5|sha1|sha256] FILE...
 *
 * It prints the byte counts, the number of members and payloads hashed, the
 * time taken, and the XOR of the digests (so that the hashing cannot be
 * optimised away, and two runs can be compared).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <isa-l/igzip_lib.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IN_SIZE (256 << 10)
#define OUT_SIZE (256 << 10)
#define MAX_HEADER (64 << 10)

enum phase { WARC_HEADER, HTTP_HEAD, PAYLOAD, SKIP };

/* record follows the decompressed bytes of one member. */
struct record {
	enum phase phase;
	char header[MAX_HEADER + 1];
	size_t header_len;
	uint32_t tail;     /* the last four bytes seen, for finding CRLF CRLF */
	long long left;    /* bytes of the block still to come */
};

static const EVP_MD *md;
static EVP_MD_CTX *ctx;
static unsigned char xor_digest[EVP_MAX_MD_SIZE];
static unsigned int digest_len;
static long long members, payloads, uncompressed;

static void die(const char *what, const char *name) {
	fprintf(stderr, "inflatehash-c: %s: %s\n", name, what);
	exit(2);
}

/* start_block reads the WARC header just completed. The generated files
 * spell their field names one way, so a case-sensitive search does. */
static void start_block(struct record *r) {
	static const char length[] = "\r\nContent-Length:", response[] = "\r\nWARC-Type: response\r";
	const char *cl = memmem(r->header, r->header_len, length, sizeof length - 1);
	r->left = cl ? strtoll(cl + sizeof length - 1, NULL, 10) : 0;
	r->phase = memmem(r->header, r->header_len, response, sizeof response - 1) ? HTTP_HEAD : SKIP;
	r->tail = 0;
}

static void finish_payload(void) {
	unsigned char d[EVP_MAX_MD_SIZE];
	EVP_DigestFinal_ex(ctx, d, &digest_len);
	for (unsigned int i = 0; i < digest_len; i++)
		xor_digest[i] ^= d[i];
	payloads++;
}

/* blank_line returns how many bytes of p, which follow the bytes in *tail,
 * end with the first CRLF CRLF, or 0 if it is not in them; *tail keeps the
 * last bytes seen. */
static size_t blank_line(uint32_t *tail, const unsigned char *p, size_t n) {
	/* Across the boundary, byte by byte; then memmem. */
	size_t i = 0;
	for (; i < n && i < 3; i++) {
		*tail = *tail << 8 | p[i];
		if (*tail == 0x0d0a0d0a)
			return i + 1;
	}
	if (i < n) {
		const unsigned char *e = memmem(p, n, "\r\n\r\n", 4);
		if (e != NULL)
			return (size_t)(e - p) + 4;
		for (i = n - 3; i < n; i++)
			*tail = *tail << 8 | p[i];
	}
	return 0;
}

/* feed passes decompressed bytes of the current member through r. */
static void feed(struct record *r, const unsigned char *p, size_t n) {
	uncompressed += n;
	while (n > 0) {
		switch (r->phase) {
		case WARC_HEADER: {
			size_t k = blank_line(&r->tail, p, n);
			size_t take = k ? k : n;
			size_t room = MAX_HEADER - r->header_len;
			memcpy(r->header + r->header_len, p, take < room ? take : room);
			r->header_len += take < room ? take : room;
			p += take, n -= take;
			if (k)
				start_block(r);
			break;
		}
		case HTTP_HEAD: {
			size_t m = n < (unsigned long long)r->left ? n : (size_t)r->left;
			size_t k = blank_line(&r->tail, p, m);
			size_t take = k ? k : m;
			p += take, n -= take, r->left -= take;
			if (k) {
				EVP_DigestInit_ex(ctx, md, NULL);
				r->phase = PAYLOAD;
				if (r->left == 0) {
					finish_payload();
					r->phase = SKIP;
				}
			} else if (r->left == 0) {
				r->phase = SKIP;
			}
			break;
		}
		case PAYLOAD: {
			size_t k = n < (unsigned long long)r->left ? n : (size_t)r->left;
			EVP_DigestUpdate(ctx, p, k);
			p += k, n -= k, r->left -= k;
			if (r->left == 0) {
				finish_payload();
				r->phase = SKIP;
			}
			break;
		}
		case SKIP:
			return;
		}
	}
}

static void new_record(struct record *r) {
	r->phase = WARC_HEADER;
	r->header_len = 0;
	r->tail = 0;
	r->left = 0;
}

int main(int argc, char **argv) {
	const char *algo = "sha1";
	int arg = 1;
	if (arg + 1 < argc && strcmp(argv[arg], "-H") == 0) {
		algo = argv[arg + 1];
		arg += 2;
	}
	md = EVP_MD_fetch(NULL, algo, NULL);
	ctx = EVP_MD_CTX_new();
	if (md == NULL || ctx == NULL)
		die("unknown digest", algo);

	static unsigned char in[IN_SIZE], out[OUT_SIZE];
	static struct inflate_state st;
	static struct record rec;
	long long compressed = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);

	for (; arg < argc; arg++) {
		const char *name = argv[arg];
		int fd = open(name, O_RDONLY);
		if (fd < 0)
			die(strerror(errno), name);
		isal_inflate_init(&st);
		st.crc_flag = ISAL_GZIP;
		new_record(&rec);
		int eof = 0, in_member = 0;
		for (;;) {
			if (st.avail_in == 0 && !eof) {
				ssize_t k = read(fd, in, IN_SIZE);
				if (k < 0)
					die(strerror(errno), name);
				compressed += k;
				eof = k == 0;
				st.next_in = in;
				st.avail_in = (uint32_t)k;
			}
			if (st.avail_in == 0 && eof) {
				if (in_member)
					die("truncated member", name);
				break;
			}
			in_member = 1;
			st.next_out = out;
			st.avail_out = OUT_SIZE;
			int ret = isal_inflate(&st);
			if (ret != ISAL_DECOMP_OK)
				die("damaged member", name);
			feed(&rec, out, OUT_SIZE - st.avail_out);
			if (st.block_state == ISAL_BLOCK_FINISH) {
				/* The next member starts at next_in. */
				members++;
				in_member = 0;
				uint8_t *next = st.next_in;
				uint32_t avail = st.avail_in;
				isal_inflate_reset(&st);
				st.next_in = next;
				st.avail_in = avail;
				new_record(&rec);
			}
		}
		close(fd);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("compressed %lld uncompressed %lld seconds %.3f members %lld payloads %lld %s-xor ", compressed,
	       uncompressed, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, members, payloads, algo);
	for (unsigned int i = 0; i < digest_len; i++)
		printf("%02x", xor_digest[i]);
	printf("\n");
	return 0;
}
