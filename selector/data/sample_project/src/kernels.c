#include "kernels.h"

/* Hot path of the "checksum" benchmark. */
unsigned long checksum(const unsigned char *data, unsigned long n)
{
    unsigned long sum = 5381;
    for (unsigned long i = 0; i < n; i++) {
        sum = sum * 33u + data[i];
    }
    return sum;
}

/* Hot path of the "sort" benchmark. */
void insertion_sort(int *values, int n)
{
    for (int i = 1; i < n; i++) {
        int key = values[i];
        int j = i - 1;
        while (j >= 0 && values[j] > key) {
            values[j + 1] = values[j];
            j--;
        }
        values[j + 1] = key;
    }
}

/* Hot path of the "fib" benchmark. */
long fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}
