/* A tiny interpreter laid out as a scripting language's (tests/test_init_scripts.py): each line of a
   script is an opcode and its count; each opcode's work is a function of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long accumulator;

__attribute__((noinline)) static void op_add(long n) { for (long i = 0; i < n; i++) accumulator += i; }
__attribute__((noinline)) static void op_mul(long n) { for (long i = 1; i < n; i++) accumulator = accumulator * 3 + i; }
__attribute__((noinline)) static void op_xor(long n) { for (long i = 0; i < n; i++) accumulator ^= i << 3; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: interp SCRIPT\n"); return 2; }
    FILE *script = fopen(argv[1], "r");
    if (!script) { perror(argv[1]); return 1; }
    char op[16];
    long n;
    while (fscanf(script, "%15s %ld", op, &n) == 2) {
        if (!strcmp(op, "add")) op_add(n);
        else if (!strcmp(op, "mul")) op_mul(n);
        else if (!strcmp(op, "xor")) op_xor(n);
        else { fprintf(stderr, "unknown op %s\n", op); return 1; }
    }
    fclose(script);
    printf("%ld\n", accumulator);
    return 0;
}
