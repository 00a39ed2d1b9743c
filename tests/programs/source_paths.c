/* Code that names its own source file: __FILE__ in a message, assert()'s message (which
   holds __FILE__), and paths inside longer literals.  Built in two directories it must
   fingerprint the same (tests/test_build_directories.py). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

static int table[64];

__attribute__((noinline)) int checked(int x)
{
    assert(x >= 0 && x < 64);
    return table[x] * 3 + 1;
}

__attribute__((noinline)) void report(const char *what, int value)
{
    fprintf(stderr, "%s:%d %s = %d\n", __FILE__, __LINE__, what, value);
}

__attribute__((noinline)) void trace(int value)
{
    fprintf(stderr, "[" __FILE__ "] (see " __FILE__ ":12) value %d in dir/ of a/b\n", value);
}

__attribute__((noinline)) int sum(int n)
{
    int total = 0;
    for (int i = 0; i < n; i++)
        total += checked(i % 64);
    return total;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    for (int i = 0; i < 64; i++)
        table[i] = i;
    report("sum", sum(n));
    trace(n);
    printf("done\n");
    return 0;
}
