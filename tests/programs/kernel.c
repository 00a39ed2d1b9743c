/* One hot loop in its own function; the tests of executed code edit its body.
   KERNEL_BODY is replaced by the test before each commit. */
#include <stdio.h>
#include <stdlib.h>

static unsigned __attribute__((noinline)) kernel(const unsigned *data, int n)
{
    unsigned acc = 0;
    for (int i = 0; i < n; i++) {
        KERNEL_BODY
    }
    return acc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    unsigned *data = malloc(sizeof *data * (size_t)n);
    for (int i = 0; i < n; i++)
        data[i] = (unsigned)i;
    printf("%u\n", kernel(data, n));
    free(data);
    return 0;
}
