#ifndef KERNELS_H
#define KERNELS_H
unsigned long checksum(const unsigned char *data, unsigned long n);
void insertion_sort(int *values, int n);
long fib(int n);
long weighted_work(int rounds);
void print_usage(const char *program);
int legacy_scale(int value);
void report_result(long value);
extern int weights[8];
#endif
