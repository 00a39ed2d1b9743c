"""A one-function C loop built with gcc -O2 -g and counted by callgrind, one benchmark
(test_select_working_tree.py and test_calibrate_rounds.py)."""

from __future__ import annotations

from tests.helpers import gcc_config

CONFIG = gcc_config("""
[[benchmark]]
name = "loop"
command = "{binary}"
metric = "instructions"
repetitions = 2
warmup = 0
""")
PROGRAM = r"""
#include <stdio.h>

static long __attribute__((noipa)) loop(long n)
{
    long sum = 0;
    for (long i = 0; i < n; i++)
        sum = sum * 31 + i;
    return sum;
}

int main(void)
{
    printf("%ld\n", loop(50000) & 1);
    return 0;
}
"""
