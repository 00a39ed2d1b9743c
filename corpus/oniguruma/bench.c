/* corpus/oniguruma/bench.c: Oniguruma's benchmark driver for the corpus, linked with the
 * library built at each commit (build_bench.sh).
 *
 *     bench FILE ROUNDS [-i] PATTERN...
 *
 * reads FILE (UTF-8 text) into memory, compiles each PATTERN with the Ruby syntax and
 * UTF-8 (ONIG_OPTION_IGNORECASE with -i), then ROUNDS times searches the whole text for
 * every match of every pattern (onig_search from the end of the previous match) and
 * prints the number of matches and a checksum of their offsets; exits 1 when a pattern
 * does not compile.  Only the API of Oniguruma 6 (onig_initialize, onig_new,
 * onig_search, regions) is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "oniguruma.h"

int main(int argc, char **argv)
{
    FILE *f;
    unsigned char *text;
    long size;
    int rounds, r, k, first = 3;
    unsigned long long matches = 0, check = 0;
    OnigOptionType options = ONIG_OPTION_NONE;
    OnigEncoding encs[1] = { ONIG_ENCODING_UTF8 };
    OnigRegion *region;
    if (argc < 4) {
        fprintf(stderr, "usage: bench FILE ROUNDS [-i] PATTERN...\n");
        return 2;
    }
    f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc((size_t)size + 1);
    if (fread(text, 1, (size_t)size, f) != (size_t)size) {
        perror(argv[1]);
        return 1;
    }
    fclose(f);
    rounds = atoi(argv[2]);
    if (strcmp(argv[3], "-i") == 0) {
        options = ONIG_OPTION_IGNORECASE;
        first = 4;
    }
    onig_initialize(encs, 1);
    region = onig_region_new();
    for (k = first; k < argc; k++) {
        regex_t *reg;
        OnigErrorInfo einfo;
        const unsigned char *pattern = (const unsigned char *)argv[k];
        int rc = onig_new(&reg, pattern, pattern + strlen(argv[k]), options, ONIG_ENCODING_UTF8,
                          ONIG_SYNTAX_RUBY, &einfo);
        if (rc != ONIG_NORMAL) {
            OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
            onig_error_code_to_str(message, rc, &einfo);
            fprintf(stderr, "bench: %s: %s\n", argv[k], message);
            return 1;
        }
        for (r = 0; r < rounds; r++) {
            const unsigned char *end = text + size, *start = text;
            while (start <= end) {
                int at = onig_search(reg, text, end, start, end, region, ONIG_OPTION_NONE);
                if (at < 0)
                    break;
                matches++;
                check = check * 31 + (unsigned)at + (unsigned)(region->end[0] - region->beg[0]);
                start = text + (region->end[0] > at ? region->end[0] : at + 1);
            }
        }
        onig_free(reg);
    }
    onig_region_free(region, 1);
    onig_end();
    printf("%llu matches %llu\n", matches, check);
    free(text);
    return 0;
}
