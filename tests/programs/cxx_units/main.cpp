#include <cstdio>
#include "mixing.h"
int first(int v);
double second(double v);
int main(int argc, char **) {
    std::printf("%d %f %d\n", first(argc), second(argc * 0.5), mixing::mix({argc, argc}));
    return 0;
}
