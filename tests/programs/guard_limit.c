/* Guards' limits in an interpreter's loop (tests/test_guard_limit.py): `run` steps a small
   program a million times through a switch gcc compiles to a jump table, and before each step
   checks its stack's depth against STACK_LIMIT; past it, it spills the stack (a call and a loop:
   work the run never does while the limit stands above the depth the program reaches, 3).  An
   operation numbered past SKIP_LIMIT (none is) skips the step: a branch to the loop's latch, which
   every case reaches too; one past the last case and below it does the default's work. */
#include <stdio.h>

#define STEPS 1000000

enum op { OP_PUSH, OP_POP, OP_ADD, OP_XOR, OP_DUP, OP_NEG, OP_COUNT };

static const unsigned char program[] = { OP_PUSH, OP_PUSH, OP_DUP, OP_ADD, OP_POP, OP_POP, OP_POP, OP_XOR, OP_NEG };
static long spilled;

static long __attribute__((noipa)) spill(const long *stack, long depth)
{
    long sum = 0;
    for (long i = 0; i < depth; i++)
        sum += stack[i] * 3;
    return sum;
}

static long __attribute__((noipa)) run(const unsigned char *code, long length)
{
    long stack[64] = {0};
    long sp = 0, acc = 0;
    for (long step = 0; step < STEPS; step++) {
        if (sp > STACK_LIMIT)
            spilled += spill(stack, sp);
        unsigned char op = code[step % length];
        if (op > SKIP_LIMIT)
            continue;
        switch (op) {
        case OP_PUSH: stack[sp++ & 63] = step; break;
        case OP_POP: if (sp > 0) acc += stack[--sp & 63]; break;
        case OP_ADD: acc += step; break;
        case OP_XOR: acc ^= step; break;
        case OP_DUP: if (sp > 0) { stack[sp & 63] = stack[(sp - 1) & 63]; sp++; } break;
        case OP_NEG: acc = -acc; break;
        default: acc += 2; break;
        }
    }
    return acc;
}

int main(void)
{
    long acc = run(program, sizeof program);
    printf("%ld %ld\n", acc, spilled);
    return 0;
}
