/* A bytecode interpreter whose switch gcc compiles to a jump table (tests/test_jump_table.py):
   `run` jumps to each case through `jmp rax`, and gcc pads before the cases it aligns.  The
   interpreter loop carries the run.  A field inserted before the others (EXTRA_FIELDS) moves every
   later field's offset by eight: every case changes its displacements, none its work.  DUP_EXTRA is
   more work in one case. */
#include <stdio.h>
#include <stdlib.h>

#define STEPS 200000

enum op { OP_HALT, OP_PUSH, OP_ADD, OP_SUB, OP_MUL, OP_DUP, OP_DROP, OP_LOOP, OP_COUNT };

struct vm {
    EXTRA_FIELDS
    long stack[16];
    long sp;
    long pc;
    long steps;
    long budget;
};

static unsigned char code[64];
static int length;

static void __attribute__((noipa)) emit(int byte)
{
    code[length++] = (unsigned char) byte;
}

static long __attribute__((noipa)) run(struct vm *vm, long budget)
{
    vm->budget = budget;
    for (;;) {
        unsigned char op = code[vm->pc++];
        vm->steps++;
        switch (op) {
        case OP_HALT: return vm->stack[vm->sp - 1];
        case OP_PUSH: vm->stack[vm->sp++] = code[vm->pc++]; break;
        case OP_ADD: vm->sp--; vm->stack[vm->sp - 1] += vm->stack[vm->sp]; break;
        case OP_SUB: vm->sp--; vm->stack[vm->sp - 1] -= vm->stack[vm->sp]; break;
        case OP_MUL: vm->sp--; vm->stack[vm->sp - 1] *= vm->stack[vm->sp]; break;
        case OP_DUP: vm->stack[vm->sp] = vm->stack[vm->sp - 1]; vm->sp++; DUP_EXTRA break;
        case OP_DROP: vm->sp--; break;
        case OP_LOOP: if (--vm->budget > 0) vm->pc = 0; break;
        default: abort();
        }
    }
}

static void __attribute__((noipa)) compile(void)
{
    emit(OP_PUSH); emit(3); emit(OP_DUP); emit(OP_MUL); emit(OP_PUSH); emit(2); emit(OP_SUB);
    emit(OP_PUSH); emit(5); emit(OP_ADD); emit(OP_DROP); emit(OP_LOOP);  /* the stack as it was: loop */
    emit(OP_PUSH); emit(7); emit(OP_HALT);
}

int main(void)
{
    compile();
    /* a fixed size, and no field read here: main stays the same when the fields move */
    struct vm *vm = calloc(1, 4096);
    long result = run(vm, STEPS);
    printf("%ld\n", result);
    free(vm);
    return 0;
}
