/* A hot loop steered by a parameter that start-up code stores into a heap struct: make_state
   sets the parameters once (gcc -O2 merges the four constants into one 16-byte literal,
   loaded RIP-relative and stored with one vector move), walk reads `passes` every call.
   main keeps a seed in a stack slot.  tests/test_steering.py replaces the upper-case
   placeholders: the pass count and the seed. */
#include <stdio.h>
#include <stdlib.h>

#define ITEMS 40000

struct params {
    unsigned depth;
    unsigned passes;  /* how often the hot loop walks the data */
    unsigned limit;
    unsigned bits;
};

struct state {
    char name[200];
    struct params p;
    unsigned data[ITEMS];
};

static struct state *__attribute__((noipa)) make_state(int level)
{
    struct state *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->name[0] = (char)level;
    s->p.depth = 7;
    s->p.passes = PASSES;
    s->p.limit = 16;
    s->p.bits = 16;
    for (int i = 0; i < ITEMS; i++)
        s->data[i] = (unsigned)i * 2654435761u;
    return s;
}

static unsigned __attribute__((noipa)) walk(const struct state *s)
{
    unsigned acc = 0;
    for (unsigned pass = 0; pass < s->p.passes; pass++)
        for (int i = 0; i < ITEMS; i++)
            acc = acc * 31 + s->data[i];
    return acc;
}

int main(int argc, char **argv)
{
    (void)argv;
    volatile unsigned seed = SEED;  /* a stack slot: no struct field */
    struct state *s = make_state(argc);
    if (!s)
        return 1;
    printf("%u %u\n", walk(s), seed);
    free(s);
    return 0;
}
