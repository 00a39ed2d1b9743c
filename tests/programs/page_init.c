/* A page allocator like LMDB's mdb_page_malloc (tests/test_hazards.py): every page the loop
   uses comes from one function that calls malloc and initialises the page when INIT_WHEN holds.
   LMDB's commit 509a1977 inverted that condition (init by default): the branch and its block run
   as often as before, the memset the old run never executed now runs for every page, and its
   cost lands in the C library, outside every changed block.  A report the run never makes
   (verbose is never set) sits in the same function: changing what it prints changes code that
   allocates, but not code the run goes through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define PAGES 400
#define FLAG_CLEAN 1

static int flags;  /* no flag set: as the benchmark opens its environment */
int verbose;  /* never set; not static, so that gcc keeps the report */

static char *__attribute__((noipa)) page_alloc(void)
{
    char *page = malloc(PAGE);
    if (page && (INIT_WHEN))
        memset(page, 0xa5, PAGE);
    if (verbose)
        fprintf(stderr, "page %p of %d bytes\n", (void *)page, REPORTED);
    return page;
}

static unsigned __attribute__((noipa)) fill(char *page, unsigned seed)
{
    unsigned s = seed;
    for (int i = 0; i < STORES; i++) {
        s = s * 1103515245u + 12345u;
        page[(s >> 8) % PAGE] = (char)s;
    }
    return s;
}

int main(void)
{
    unsigned s = 1, sum = 0;
    for (int p = 0; p < PAGES; p++) {
        char *page = page_alloc();
        if (!page)
            return 1;
        s = fill(page, s);
        sum += (unsigned char)page[(s >> 8) % PAGE];
        free(page);
    }
    printf("%u\n", sum);
    return 0;
}
