/* Code that reaches its data through other data (tests/test_data_pointers.py): main reads a
   registry, the registry points to a class structure, the class to its member table, and the
   lookup walks that table.  The tests replace the upper-case placeholders: the member table's
   entries, and those of a table nothing points to. */
#include <stdio.h>
#include <string.h>

struct entry { const char *key; int weight; };
struct klass { const struct entry *members; int count; };

static const struct entry members[] = { MEMBERS };
static const struct klass klass = { members, sizeof members / sizeof members[0] };
const struct klass *registry[] = { &klass };  /* writable: the compiler cannot fold the walk */
const struct entry unreferenced[] = { OTHER };  /* nothing points here */

static int __attribute__((noipa)) lookup(const struct klass *k, const char *key)
{
    for (int i = 0; i < k->count; i++)
        if (strcmp(k->members[i].key, key) == 0)
            return k->members[i].weight;
    return -1;
}

int main(void)
{
    long total = 0;
    for (int round = 0; round < 100000; round++)
        total += lookup(registry[0], "zeta");
    printf("%ld\n", total);
    return 0;
}
