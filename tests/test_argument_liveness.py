"""Which argument registers a callee reads (collectors/argument_liveness.py), and what that
changes in whether a changed region steers (collectors/value_flow.py), on real gcc output.

The steering cases are assembled with `as` through gcc, so that no compiler's register choices
decide what the test sees: `f` leaves a changed intermediate in `%edx` before it calls (or
jumps to) one of three callees, which read `%edi` only (`%edx` is their temporary), `%edi` and
`%edx`, or `%edi` only while handing `%rdx` back unwritten (the second half of a returned pair,
for all the caller knows).
"""

from __future__ import annotations

import iced_x86

from perf_selector.collectors.argument_liveness import ARGUMENTS, RETURNED_SECOND, argument_use
from perf_selector.collectors.block_diff import changed_regions
from perf_selector.collectors.code_image import CodeImage
from tests.helpers import compile_c

_R = iced_x86.Register

CALLEES = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) int one(int a) { return a * 3 + 1; }
__attribute__((noinline)) int two(int a, int b) { return a > b ? a : b; }
__attribute__((noinline)) int passes_on(long a, long b, long c) { return two(a, c); }
__attribute__((noinline)) void says(void) { puts("said"); }
__attribute__((noinline)) void prints(void) { printf("%d\n", 7); }
__attribute__((noinline)) void checks(int n) { if (n > 3) abort(); }
__attribute__((noinline)) int loops(int n, int step) {
    int sum = 0;
    for (int i = 0; i < n; i++) sum += i * 7;
    return sum + step;
}
int main(int argc, char **argv) {
    (void)argv;
    printf("%d %d %d %d\n", one(argc), two(argc, 3), passes_on(1, 2, argc), loops(argc * 1000, 2));
    says();
    prints();
    checks(argc);
    return 0;
}
"""


def _use(image: CodeImage, name: str):
    (address, _), = image.function_parts([name], 0)
    return argument_use(image, address)


def test_a_callee_reads_the_argument_registers_it_uses_before_it_writes_them(tmp_path):
    image = CodeImage.load(str(compile_c(CALLEES, tmp_path / "callees")))
    assert _use(image, "one").read == {_R.RDI}
    assert _use(image, "two").read == {_R.RDI, _R.RSI}
    # its third argument goes on as the second of `two`: read, through the call
    assert _use(image, "passes_on").read == {_R.RDI, _R.RDX}
    assert _use(image, "loops").read == {_R.RDI, _R.RSI}  # a loop's back edge reads nothing new
    # a library function reads what its prototype names: puts its one argument, written before the call
    assert _use(image, "says").read == frozenset()
    # a variadic one is taken to read every argument register not written before the call
    assert _use(image, "prints").read == ARGUMENTS - {_R.RDI, _R.RSI}
    assert _use(image, "checks").read == {_R.RDI}  # abort ends the run: it reads nothing
    # none of them writes rdx or xmm1 on every path: each may hand the caller's values back
    assert _use(image, "one").passed == RETURNED_SECOND


def test_what_is_not_a_defined_function_reads_every_argument_register(tmp_path):
    image = CodeImage.load(str(compile_c(CALLEES, tmp_path / "callees")))
    (address, _), = image.function_parts(["one"], 0)
    assert argument_use(image, address + 1).read == ARGUMENTS  # no function starts there


STEERING = r"""
    .text
    .globl f
    .type f, @function
f:
    push %rbx
    mov %edi, %ebx
    lea {offset}(%rdi), %edx
    mov %edx, stamp(%rip)
    mov %ebx, %edi
{call}
    pop %rbx
    ret
    .size f, .-f
    .globl reads_edi
    .type reads_edi, @function
reads_edi:
    mov %edi, %edx
    lea (%rdx,%rdx,2), %eax
    ret
    .size reads_edi, .-reads_edi
    .globl reads_edx
    .type reads_edx, @function
reads_edx:
    lea (%rdi,%rdx), %eax
    ret
    .size reads_edx, .-reads_edx
    .globl hands_back
    .type hands_back, @function
hands_back:
    mov %edi, %eax
    ret
    .size hands_back, .-hands_back
    .globl mixes
    .type mixes, @function
mixes:
    lea (%rdi,%rdx), %eax
    imul %edx, %eax
    xor %edx, %edx
    ret
    .size mixes, .-mixes
    .globl branches
    .type branches, @function
branches:
    mov %edi, %eax
    test %edx, %edx
    je 1f
    add $1, %eax
1:
    xor %edx, %edx
    ret
    .size branches, .-branches
    .globl records
    .type records, @function
records:
    mov %edx, kept(%rip)
    xor %edx, %edx
    ret
    .size records, .-records
    .globl calls_mixes
    .type calls_mixes, @function
calls_mixes:
    sub $8, %rsp
    call mixes
    add $8, %rsp
    ret
    .size calls_mixes, .-calls_mixes
    .globl calls_branches
    .type calls_branches, @function
calls_branches:
    sub $8, %rsp
    call branches
    add $8, %rsp
    ret
    .size calls_branches, .-calls_branches
    .globl tail
    .type tail, @function
tail:
    lea {offset}(%rdi), %edx
    jmp reads_edx
    .size tail, .-tail
    .globl main
    .type main, @function
main:
    sub $8, %rsp
    call f
    call tail
    xor %eax, %eax
    add $8, %rsp
    ret
    .size main, .-main
    .bss
    .globl stamp
stamp: .quad 0
    .globl kept
kept: .quad 0
    .section .note.GNU-stack,"",@progbits
"""
BRANCHES_ON_RDX = "    call hands_back\n    test %edx, %edx\n    je 1f\n    add $1, %eax\n1:"
DISCARDS_THE_RESULT = "\n    mov $0, %eax"  # f returns no value computed from the call's
BRANCHES_ON_THE_RESULT = "\n    cmp $9, %eax\n    je 1f\n    add $1, %ebx\n1:\n    mov $0, %eax"


def _regions(tmp_path, call: str, function: str = "f"):
    """The changed regions of `function` when f's (and tail's) intermediate gets 5 added instead of 3."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    images = [CodeImage.load(str(compile_c(STEERING.format(offset=offset, call=call), tmp_path / name, "", extension="s")))
              for name, offset in (("old", 3), ("new", 5))]
    (old, _), (new, _) = ((image.function_parts([function], 0)[0], None) for image in images)
    return changed_regions(images[0], [old], images[1], [new])


def test_an_intermediate_left_in_an_argument_register_the_callee_never_reads_is_no_changed_argument(tmp_path):
    (region,) = _regions(tmp_path, "    call reads_edi")
    assert region.constants_only
    assert not region.steers  # the callee reads edi only and writes edx: the changed edx reaches no decision


def test_the_same_intermediate_steers_where_the_callee_reads_it(tmp_path):
    (region,) = _regions(tmp_path, "    call reads_edx")
    assert region.steers


def test_a_value_the_callee_hands_back_unwritten_still_reaches_the_callers_branch(tmp_path):
    (region,) = _regions(tmp_path, BRANCHES_ON_RDX)
    assert region.steers  # hands_back never writes rdx: after the call it is still the changed value


def test_a_changed_argument_passed_on_by_a_tail_call_steers(tmp_path):
    (region,) = _regions(tmp_path, "    call reads_edi", function="tail")
    assert region.steers  # tail jumps to reads_edx with the changed edx: the callee adds it


def test_a_changed_line_number_given_to_a_failing_assertion_steers_nothing(tmp_path):
    """__assert_fail's third argument is the line (a constant that moves whenever lines above it
    do): it prints it and ends the run, which no benchmark measures."""
    (region,) = _regions(tmp_path, "    call __assert_fail@PLT")
    assert not region.steers


def test_a_changed_argument_the_callee_only_computes_with_steers_nothing_where_its_result_is_dropped(tmp_path):
    """Followed into the callee, the changed value meets no decision: mixes does the same work on
    another value, and f returns a constant."""
    for call in ("    call mixes", "    call calls_mixes"):
        (region,) = _regions(tmp_path / call.split()[-1], call + DISCARDS_THE_RESULT)
        assert not region.steers, call


def test_a_value_the_callee_computes_from_the_changed_argument_steers_the_callers_branch(tmp_path):
    for call in ("    call mixes", "    call calls_mixes"):
        (region,) = _regions(tmp_path / call.split()[-1], call + BRANCHES_ON_THE_RESULT)
        assert region.steers, call


def test_a_changed_argument_a_callee_branches_on_steers_however_deep(tmp_path):
    for call in ("    call branches", "    call calls_branches"):
        (region,) = _regions(tmp_path / call.split()[-1], call + DISCARDS_THE_RESULT)
        assert region.steers, call


def test_a_changed_argument_a_callee_stores_to_a_global_steers(tmp_path):
    """f's own store of the value to a global is changed_writes_hot_data's to weigh (its readers);
    the callee's is not seen there, so it is a decision."""
    (region,) = _regions(tmp_path, "    call records" + DISCARDS_THE_RESULT)
    assert region.steers


def test_a_byte_written_into_a_changed_register_leaves_the_rest_of_it_changed(tmp_path):
    """`mov $0, %dl` writes the low byte alone: edx's other bits still hold the changed value, and
    a branch on edx steers; a 32-bit write (`mov $0, %edx`, the upper half zeroed) ends the change."""
    branch_on_edx = "\n    test %edx, %edx\n    je 1f\n    add $1, %ebx\n1:\n    mov $0, %eax"
    for write, steers in (("    mov $0, %dl", True), ("    mov $0, %dx", True), ("    mov $0, %edx", False)):
        (region,) = _regions(tmp_path / write.split()[-1].strip("%"), write + branch_on_edx)
        assert region.steers == steers, write


def test_a_byte_written_with_an_unchanged_value_reads_nothing_changed(tmp_path):
    """`sete %dl` over the changed edx, then `movzbl %dl, %edx`: edx is the compare's outcome alone,
    and a branch on it steers nothing; a branch on dl's byte alone neither, on dh's (bits 8-15,
    still changed) it does."""
    cases = (("    cmp $5, %edi\n    sete %dl\n    movzbl %dl, %edx\n    test %edx, %edx", False),
             ("    mov $0, %dl\n    test %dl, %dl", False),
             ("    mov $0, %dl\n    test %dh, %dh", True))
    for number, (code, steers) in enumerate(cases):
        # edx's changed upper bits are then cleared: f's return would hand them back (the pair's second half)
        (region,) = _regions(tmp_path / str(number), code + "\n    je 1f\n    add $1, %ebx\n1:\n    mov $0, %eax\n    xor %edx, %edx")
        assert region.steers == steers, code
