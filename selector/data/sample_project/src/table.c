#include "kernels.h"

/* Read at run time by weighted_work: changing it changes only .data. */
int weights[8] = {3, 1, 4, 1, 5, 9, 2, 6};

/* Hot path of the "weights" benchmark. */
long weighted_work(int rounds)
{
    long total = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < weights[i]; j++)
                total += (j ^ i) + r;
    return total;
}
