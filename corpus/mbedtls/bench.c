/* Benchmark driver for Mbed TLS's cryptography, compiled by build_mbedtls_bench.sh of this
 * folder with the crypto modules of library/ at the commit being built.
 *
 *     bench MODE REPEAT
 *
 * runs REPEAT rounds of one of the primitives programs/test/benchmark.c measures, through
 * the same legacy (mbedtls_*) API, on fixed data:
 *
 * aes-cbc       AES-128-CBC encryption and AES-256-CBC decryption of 16 kB
 * aes-gcm       AES-256-GCM encryption (with tag) of 16 kB and 13 bytes of additional data
 * aes-ccm       AES-128-CCM encryption (with tag) of 16 kB
 * chachapoly    ChaCha20-Poly1305 encryption (with tag) of 16 kB
 * sha256        SHA-256 and SHA-224 of 16 kB
 * sha512        SHA-512 and SHA-384 of 16 kB
 * legacy-hash   MD5, SHA-1 and RIPEMD-160 of 16 kB
 * ctr-drbg      CTR_DRBG (AES-256): 1 kB of output, with and without reseeding
 * rsa-public    RSA-2048 public-key operation (e = 65537)
 * rsa-private   RSA-2048 private-key operation (CRT, blinded)
 * ecdsa-p256    ECDSA on secp256r1: sign and verify a SHA-256 digest
 * ecdsa-p384    ECDSA on secp384r1: sign and verify a SHA-384 digest
 * ecdh-p256     ECDH on secp256r1: make a key pair, compute the shared secret
 * ecdh-x25519   ECDH on Curve25519: make a key pair, compute the shared secret
 *
 * programs/test/benchmark.c runs each primitive in a loop until a one-second alarm
 * fires, so its number of iterations depends on the clock and its instruction count
 * under callgrind would too: this driver runs exactly REPEAT rounds instead.  Its random
 * numbers (key generation, blinding, ECDSA's k, CTR_DRBG's entropy) come from a fixed
 * xorshift generator, so every run of the same binary executes the same instructions.
 * The RSA key is a fixed 2048-bit key (its primes below, made once with openssl genrsa).
 * Only API present throughout Mbed TLS 3.x is used.  It prints a checksum of what it
 * made and exits 1 when a call fails, so a broken commit shows up as a failed benchmark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mbedtls/aes.h"
#include "mbedtls/gcm.h"
#include "mbedtls/ccm.h"
#include "mbedtls/chachapoly.h"
#include "mbedtls/sha256.h"
#include "mbedtls/sha512.h"
#include "mbedtls/md5.h"
#include "mbedtls/sha1.h"
#include "mbedtls/ripemd160.h"
#include "mbedtls/ctr_drbg.h"
#include "mbedtls/rsa.h"
#include "mbedtls/bignum.h"
#include "mbedtls/ecp.h"
#include "mbedtls/ecdsa.h"
#include "mbedtls/ecdh.h"

#define BUFSIZE 16384

static const char RSA_P[] =
    "d519fcd2b42d7118aea1341fd305bd0b38e4fd605d80c7574420c509cf6c7de4"
    "9a0ac092a793d2303a418bc5def9ef8ec2b0ecf8623d838adc2cd34b33c21a1c"
    "80ec12e5d5c77a86178c560f3e1fd00f194e17f816456cc0ac9768308a8650e9"
    "5fe2bf66edad20b10d5cfe3b62222224d6800552a3565fe35d0d3ee116cf8f37";
static const char RSA_Q[] =
    "b888762720279998332aea2aca3172989dd7f425fe5945301abdf8bb044570a8"
    "dbc30fdd5fbf9182df2845129a10cd7cc6897390814863aa09ece9c678d24bad"
    "d9321b5162bda5a802dc6a42c72cc7e27c54d7d92ec2f13c446fbf5be63bca82"
    "014dd957714e52c4e52a5792719ae40a8dc3dfa215c704df0a6236866ca1eaa7";

static unsigned char buf[BUFSIZE], out[BUFSIZE + 64], tmp[BUFSIZE + 64];
static unsigned long sum;

static unsigned long long rng_state = 0x9E3779B97F4A7C15ULL;

/* xorshift64*: the same bytes at every run */
static int fixed_rng(void *unused, unsigned char *output, size_t len)
{
    (void) unused;
    while (len > 0) {
        unsigned long long x;
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        x = rng_state * 0x2545F4914F6CDD1DULL;
        *output++ = (unsigned char) (x >> 56);
        len--;
    }
    return 0;
}

static void check(int ret, const char *what)
{
    if (ret != 0) {
        fprintf(stderr, "%s failed: -0x%04x\n", what, (unsigned) -ret);
        exit(1);
    }
}

static void add(const unsigned char *data, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++)
        sum = sum * 31 + data[i];
}

static void ecdsa(mbedtls_ecp_group_id id, int sha384, long repeat)
{
    mbedtls_ecp_group grp;
    mbedtls_mpi d, r, s;
    mbedtls_ecp_point Q;
    unsigned char hash[64];
    long i;
    mbedtls_ecp_group_init(&grp);
    mbedtls_mpi_init(&d); mbedtls_mpi_init(&r); mbedtls_mpi_init(&s);
    mbedtls_ecp_point_init(&Q);
    check(mbedtls_ecp_group_load(&grp, id), "ecp_group_load");
    check(mbedtls_ecp_gen_keypair(&grp, &d, &Q, fixed_rng, NULL), "ecp_gen_keypair");
    for (i = 0; i < repeat; i++) {
        buf[0] = (unsigned char) i;
        check(mbedtls_sha512(buf, 64, hash, sha384), "sha512");
        check(mbedtls_ecdsa_sign(&grp, &r, &s, &d, hash, sha384 ? 48 : 32, fixed_rng, NULL), "ecdsa_sign");
        check(mbedtls_ecdsa_verify(&grp, hash, sha384 ? 48 : 32, &Q, &r, &s), "ecdsa_verify");
        check(mbedtls_mpi_write_binary(&s, tmp, 48), "mpi_write_binary");
        add(tmp, 48);
    }
    mbedtls_ecp_point_free(&Q);
    mbedtls_mpi_free(&d); mbedtls_mpi_free(&r); mbedtls_mpi_free(&s);
    mbedtls_ecp_group_free(&grp);
}

static void ecdh(mbedtls_ecp_group_id id, long repeat)
{
    mbedtls_ecp_group grp;
    mbedtls_mpi d_peer, d, z;
    mbedtls_ecp_point Q_peer, Q;
    long i;
    mbedtls_ecp_group_init(&grp);
    mbedtls_mpi_init(&d_peer); mbedtls_mpi_init(&d); mbedtls_mpi_init(&z);
    mbedtls_ecp_point_init(&Q_peer); mbedtls_ecp_point_init(&Q);
    check(mbedtls_ecp_group_load(&grp, id), "ecp_group_load");
    check(mbedtls_ecdh_gen_public(&grp, &d_peer, &Q_peer, fixed_rng, NULL), "ecdh_gen_public");
    for (i = 0; i < repeat; i++) {
        check(mbedtls_ecdh_gen_public(&grp, &d, &Q, fixed_rng, NULL), "ecdh_gen_public");
        check(mbedtls_ecdh_compute_shared(&grp, &z, &Q_peer, &d, fixed_rng, NULL), "ecdh_compute_shared");
        check(mbedtls_mpi_write_binary(&z, tmp, 32), "mpi_write_binary");
        add(tmp, 32);
    }
    mbedtls_ecp_point_free(&Q_peer); mbedtls_ecp_point_free(&Q);
    mbedtls_mpi_free(&d_peer); mbedtls_mpi_free(&d); mbedtls_mpi_free(&z);
    mbedtls_ecp_group_free(&grp);
}

static void rsa(int private_op, long repeat)
{
    mbedtls_rsa_context ctx;
    mbedtls_mpi P, Q, E;
    long i;
    mbedtls_rsa_init(&ctx);
    mbedtls_mpi_init(&P); mbedtls_mpi_init(&Q); mbedtls_mpi_init(&E);
    check(mbedtls_mpi_read_string(&P, 16, RSA_P), "mpi_read_string");
    check(mbedtls_mpi_read_string(&Q, 16, RSA_Q), "mpi_read_string");
    check(mbedtls_mpi_lset(&E, 65537), "mpi_lset");
    check(mbedtls_rsa_import(&ctx, NULL, &P, &Q, NULL, &E), "rsa_import");
    check(mbedtls_rsa_complete(&ctx), "rsa_complete");
    check(mbedtls_rsa_check_privkey(&ctx), "rsa_check_privkey");
    memset(tmp, 0x2a, 256);
    tmp[0] = 0;
    for (i = 0; i < repeat; i++) {
        tmp[255] = (unsigned char) i;
        if (private_op)
            check(mbedtls_rsa_private(&ctx, fixed_rng, NULL, tmp, out), "rsa_private");
        else
            check(mbedtls_rsa_public(&ctx, tmp, out), "rsa_public");
        add(out, 256);
    }
    mbedtls_mpi_free(&P); mbedtls_mpi_free(&Q); mbedtls_mpi_free(&E);
    mbedtls_rsa_free(&ctx);
}

int main(int argc, char **argv)
{
    unsigned char key[32], iv[16], tag[16];
    const char *mode;
    long repeat, i;
    size_t k;

    if (argc != 3 || (repeat = atol(argv[2])) < 1) {
        fprintf(stderr, "usage: %s MODE REPEAT\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    for (k = 0; k < sizeof(buf); k++)
        buf[k] = (unsigned char) (k * 7 + (k >> 8));
    for (k = 0; k < sizeof(key); k++)
        key[k] = (unsigned char) (k * 13 + 1);

    if (strcmp(mode, "aes-cbc") == 0) {
        mbedtls_aes_context enc, dec;
        mbedtls_aes_init(&enc);
        mbedtls_aes_init(&dec);
        check(mbedtls_aes_setkey_enc(&enc, key, 128), "aes_setkey_enc");
        check(mbedtls_aes_setkey_dec(&dec, key, 256), "aes_setkey_dec");
        for (i = 0; i < repeat; i++) {
            memset(iv, (int) i, sizeof(iv));
            check(mbedtls_aes_crypt_cbc(&enc, MBEDTLS_AES_ENCRYPT, BUFSIZE, iv, buf, out), "aes_crypt_cbc");
            memset(iv, (int) i, sizeof(iv));
            check(mbedtls_aes_crypt_cbc(&dec, MBEDTLS_AES_DECRYPT, BUFSIZE, iv, out, tmp), "aes_crypt_cbc");
            add(tmp, 16);
            add(out, 16);
        }
        mbedtls_aes_free(&enc);
        mbedtls_aes_free(&dec);
    } else if (strcmp(mode, "aes-gcm") == 0) {
        mbedtls_gcm_context gcm;
        mbedtls_gcm_init(&gcm);
        check(mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, 256), "gcm_setkey");
        for (i = 0; i < repeat; i++) {
            memset(iv, (int) i, 12);
            check(mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, BUFSIZE, iv, 12, key, 13, buf, out, 16, tag),
                  "gcm_crypt_and_tag");
            add(tag, 16);
        }
        mbedtls_gcm_free(&gcm);
    } else if (strcmp(mode, "aes-ccm") == 0) {
        mbedtls_ccm_context ccm;
        mbedtls_ccm_init(&ccm);
        check(mbedtls_ccm_setkey(&ccm, MBEDTLS_CIPHER_ID_AES, key, 128), "ccm_setkey");
        for (i = 0; i < repeat; i++) {
            memset(iv, (int) i, 12);
            check(mbedtls_ccm_encrypt_and_tag(&ccm, BUFSIZE, iv, 12, key, 13, buf, out, tag, 16), "ccm_encrypt_and_tag");
            add(tag, 16);
        }
        mbedtls_ccm_free(&ccm);
    } else if (strcmp(mode, "chachapoly") == 0) {
        mbedtls_chachapoly_context ctx;
        mbedtls_chachapoly_init(&ctx);
        check(mbedtls_chachapoly_setkey(&ctx, key), "chachapoly_setkey");
        for (i = 0; i < repeat; i++) {
            memset(iv, (int) i, 12);
            check(mbedtls_chachapoly_encrypt_and_tag(&ctx, BUFSIZE, iv, key, 13, buf, out, tag), "chachapoly_encrypt_and_tag");
            add(tag, 16);
        }
        mbedtls_chachapoly_free(&ctx);
    } else if (strcmp(mode, "sha256") == 0) {
        for (i = 0; i < repeat; i++) {
            buf[0] = (unsigned char) i;
            check(mbedtls_sha256(buf, BUFSIZE, out, 0), "sha256");
            check(mbedtls_sha256(buf, BUFSIZE, out + 32, 1), "sha224");
            add(out, 60);
        }
    } else if (strcmp(mode, "sha512") == 0) {
        for (i = 0; i < repeat; i++) {
            buf[0] = (unsigned char) i;
            check(mbedtls_sha512(buf, BUFSIZE, out, 0), "sha512");
            check(mbedtls_sha512(buf, BUFSIZE, out + 64, 1), "sha384");
            add(out, 112);
        }
    } else if (strcmp(mode, "legacy-hash") == 0) {
        for (i = 0; i < repeat; i++) {
            buf[0] = (unsigned char) i;
            check(mbedtls_md5(buf, BUFSIZE, out), "md5");
            check(mbedtls_sha1(buf, BUFSIZE, out + 16), "sha1");
            check(mbedtls_ripemd160(buf, BUFSIZE, out + 36), "ripemd160");
            add(out, 56);
        }
    } else if (strcmp(mode, "ctr-drbg") == 0) {
        mbedtls_ctr_drbg_context drbg;
        mbedtls_ctr_drbg_init(&drbg);
        check(mbedtls_ctr_drbg_seed(&drbg, fixed_rng, NULL, (const unsigned char *) "corpus", 6), "ctr_drbg_seed");
        for (i = 0; i < repeat; i++) {
            check(mbedtls_ctr_drbg_random(&drbg, out, 1024), "ctr_drbg_random");
            add(out, 16);
        }
        mbedtls_ctr_drbg_set_prediction_resistance(&drbg, MBEDTLS_CTR_DRBG_PR_ON);
        for (i = 0; i < repeat; i++) {
            check(mbedtls_ctr_drbg_random(&drbg, out, 1024), "ctr_drbg_random");
            add(out, 16);
        }
        mbedtls_ctr_drbg_free(&drbg);
    } else if (strcmp(mode, "rsa-public") == 0) {
        rsa(0, repeat);
    } else if (strcmp(mode, "rsa-private") == 0) {
        rsa(1, repeat);
    } else if (strcmp(mode, "ecdsa-p256") == 0) {
        ecdsa(MBEDTLS_ECP_DP_SECP256R1, 0, repeat);
    } else if (strcmp(mode, "ecdsa-p384") == 0) {
        ecdsa(MBEDTLS_ECP_DP_SECP384R1, 1, repeat);
    } else if (strcmp(mode, "ecdh-p256") == 0) {
        ecdh(MBEDTLS_ECP_DP_SECP256R1, repeat);
    } else if (strcmp(mode, "ecdh-x25519") == 0) {
        ecdh(MBEDTLS_ECP_DP_CURVE25519, repeat);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("%s %lu\n", mode, sum);
    return 0;
}
