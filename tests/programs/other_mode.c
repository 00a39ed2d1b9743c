/* Start-up code with a branch the benchmark never takes (tests/test_hazards.py): main reads an
   optional argument that the benchmark's command does not give, so the changed scale in that
   branch never runs, while main's callees carry the whole run.  A change there cannot steer
   this benchmark; a change on the path main does take (VERBOSITY, set before the loop) can, and
   straight-line work main does on it (STAMP_WORK: stamps no code reads) cannot. */
#include <stdio.h>
#include <stdlib.h>

#define ITEMS 4096
#define ROUNDS 40

static unsigned data[ITEMS];
static int verbosity;
unsigned long stamp_sum, stamp_xor;  /* written once at start-up, for a debugger: no code reads them */

static void __attribute__((noipa)) set_verbosity(int level) { verbosity = level; }

static unsigned __attribute__((noipa)) process(const unsigned *p, int n)
{
    unsigned s = 0;
    for (int i = 0; i < n; i++) {
        s = s * 31 + (p[i] ^ (s >> 7));
        if (verbosity > 2 && s == 0xdeadbeefu)
            puts("seen");
    }
    return s;
}

int main(int argc, char **argv)
{
    STAMP_WORK
    for (int i = 0; i < ITEMS; i++)
        data[i] = (unsigned)i * 2654435761u;
    if (argc > 1)
        set_verbosity(atoi(argv[1]) * SCALE);
    else
        set_verbosity(VERBOSITY);
    unsigned acc = 0;
    for (int r = 0; r < ROUNDS; r++)
        acc += process(data, ITEMS - r);
    printf("%u\n", acc);
    return 0;
}
