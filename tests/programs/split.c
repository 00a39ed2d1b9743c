
#include <stdio.h>
#include <stdlib.h>
%s
int checked(int x)
{
    if (__builtin_expect(x < 0, 0)) {
        fprintf(stderr, "negative value %%d\n", x);
        abort();
    }
    return x * 2;
}

static __attribute__((noinline)) int scale(int x, int k) { return x * k + (x >> k); }

int dispatch(int op, int x)
{
    switch (op) {
    case 0: return x + 11;
    case 1: return x * 13;
    case 2: return x - 17;
    case 3: return x ^ 19;
    case 4: return x << 3;
    case 5: return scale(x, 3);
    case 6: return x %% 23;
    case 7: return -x;
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    return checked(argc) + dispatch(argc, atoi(argv[0])) + scale(argc, 3);
}
