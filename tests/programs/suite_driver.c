/* A db_bench-like driver for the command-suite tests: `driver --benchmarks=fill,sum`
   runs a set-up phase (fill) and then the named benchmarks; `driver --list` names them.
   FILL_N sizes the set-up, which every benchmark needs and none should be charged for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FILL_N
#define FILL_N 20000
#endif

static int table[FILL_N];

__attribute__((noinline)) void run_fill(void) {
    for (int i = 0; i < FILL_N; i++) table[i] = (i * 2654435761u) % 1000;
}

__attribute__((noinline)) long run_sum(void) {
    long sum = 0;
    for (int i = 0; i < FILL_N && i < 20000; i++) sum += table[i];
    return sum;
}

__attribute__((noinline)) long scan_table(void) {
    long found = 0;
    for (int i = 0; i < FILL_N && i < 20000; i++) found += table[i] > 500;
    return found;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--list") == 0) {
        puts("sum\nscan");
        return 0;
    }
    if (argc < 2 || strncmp(argv[1], "--benchmarks=", 13) != 0) return 2;
    char *names = argv[1] + 13;
    for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
        if (strcmp(name, "fill") == 0) run_fill();
        else if (strcmp(name, "sum") == 0) printf("sum : %ld\n", run_sum());
        else if (strcmp(name, "scan") == 0) printf("scan : %ld\n", scan_table());
        else return 3;
    }
    return 0;
}
