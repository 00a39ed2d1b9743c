#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

static unsigned char buffer[1 << 16];
static int numbers[4096];

int main(int argc, char **argv)
{
    if (argc != 3) {
        print_usage(argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    if (strcmp(argv[1], "checksum") == 0) {
        for (unsigned long i = 0; i < sizeof buffer; i++)
            buffer[i] = (unsigned char)(i * 7);
        unsigned long sum = 0;
        for (int round = 0; round < n; round++)
            sum += checksum(buffer, sizeof buffer);
        printf("%lu\n", sum);
    } else if (strcmp(argv[1], "sort") == 0) {
        int count = n < 4096 ? n : 4096;
        for (int i = 0; i < count; i++)
            numbers[i] = (i * 7919) % 1000;
        insertion_sort(numbers, count);
        printf("%d\n", numbers[count / 2]);
    } else if (strcmp(argv[1], "fib") == 0) {
        report_result(fib(n));
    } else if (strcmp(argv[1], "weights") == 0) {
        report_result(weighted_work(n));
    } else {
        print_usage(argv[0]);
        return 2;
    }
    return 0;
}
