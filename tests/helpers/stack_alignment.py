"""Measurement bias (Mytkowicz et al., ASPLOS 2009): a C program whose instruction count
depends on its stack's alignment, and its configuration (test_measurement_bias.py and
test_perturbed_labels.py)."""

from __future__ import annotations

# strlen of a stack buffer: glibc's vectorized strlen takes a different number of
# instructions for each alignment of its start, and the buffer's alignment follows the
# stack's, which the environment's size and argv[0]'s length move.
PROGRAM = """
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) static unsigned long work(void) {
    char buffer[1000];
    memset(buffer, 'a', sizeof buffer - 1);
    buffer[sizeof buffer - 1] = 0;
    unsigned long total = 0;
    for (int i = 0; i < ROUNDS; i++)
        total += strlen(buffer + (i & 1));
    return total;
}
int main(void) {
    volatile char moved[MOVED];  /* a commit that changes only this moves work's frame */
    moved[0] = 1;
    printf("%lu %d\\n", work(), moved[0]);
    return 0;
}
"""

CONFIG = """
[project]
binary = "prog"

[build]
command = "gcc -O2 -g -o prog prog.c"

[[benchmark]]
name = "strlen"
command = "{binary}"
metric = "instructions"
repetitions = 1

[labels]
min_effect = 0.01
"""
