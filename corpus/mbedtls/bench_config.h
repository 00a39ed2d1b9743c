/* MBEDTLS_USER_CONFIG_FILE of corpus/mbedtls (build_mbedtls_bench.sh): the default
 * configuration (include/mbedtls/mbedtls_config.h) without the hardware AES code, so
 * AES, GCM and CCM run the portable C code at every commit and on every CPU (AES-NI is
 * chosen at run time from CPUID, which valgrind reports from the host's CPU). */
#undef MBEDTLS_AESNI_C
#undef MBEDTLS_AESCE_C
#undef MBEDTLS_PADLOCK_C
