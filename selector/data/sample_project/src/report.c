#include <stdio.h>
#include "kernels.h"

/* Cold: only runs on bad arguments. */
void print_usage(const char *program)
{
    fprintf(stderr, "usage: %s checksum|sort|fib|weights N\n", program);
}

int legacy_scale(int value)
{
    return value * 3 + 1;
}

void report_result(long value)
{
    printf("%ld\n", value);
}
