/* Constant tables and who reads them (tests/test_table_readers.py): `weigh` looks every byte of a
   buffer up in `weights`, a constant table it names itself, and loops that many times; `weigh_copy`
   does the same through a heap copy of `copied`, which only `main` names, once, at start-up, handing
   it to `load_table` (as an interpreter hands its boot image to the loader).  The
   tests replace the upper-case placeholders: one entry of each table (GCC's range designators give
   the others).  No code changes when they do. */
#include <stdio.h>
#include <stdlib.h>

#define BYTES 200000

static const unsigned char weights[256] = { [0 ... 255] = 2, [7] = HOT_WEIGHT };
static const unsigned char copied[256] = { [0 ... 255] = 2, [7] = COPIED_WEIGHT };

static long __attribute__((noipa)) weigh(const unsigned char *bytes, long n)
{
    long total = 0;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < weights[bytes[i]]; k++)
            total += k ^ i;
    return total;
}

static void __attribute__((noipa)) load_table(unsigned char *table, const unsigned char *image, long n)
{
    for (long i = 0; i < n; i++)
        table[i] = image[i];
}

static long __attribute__((noipa)) weigh_copy(const unsigned char *table, const unsigned char *bytes, long n)
{
    long total = 0;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < table[bytes[i]]; k++)
            total += k ^ i;
    return total;
}

static void __attribute__((noipa)) fill(unsigned char *bytes, long n)
{
    unsigned long state = 12345;
    for (long i = 0; i < n; i++) {
        state = state * 6364136223846793005UL + 1442695040888963407UL;
        bytes[i] = (unsigned char)(state >> 56);
    }
}

int main(void)
{
    static unsigned char bytes[BYTES];
    fill(bytes, BYTES);
    unsigned char *table = malloc(sizeof copied);
    load_table(table, copied, sizeof copied);
    printf("%ld %ld\n", weigh(bytes, BYTES), weigh_copy(table, bytes, BYTES));
    free(table);
    return 0;
}
